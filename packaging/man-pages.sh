#!/usr/bin/env bash
# Writes the man pages into OUT_DIR from the programs' own --help, with help2man:
# ksandwich.1, ksandwich-SUBCOMMAND.1 for every subcommand `ksandwich --help` lists, and
# ksandwich-agent.1; gzipped as Debian ships them. Run by the build (packaging/CMakeLists.txt).
# Usage: man-pages.sh KSANDWICH KSANDWICH_AGENT OUT_DIR
set -euo pipefail
ks=$1 agent=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
version=$("$ks" --version)

# page NAME DESCRIPTION COMMAND [HELP2MAN OPTION]: help2man runs "COMMAND --help" through
# the shell.
page() {
  local name=$1 description=$2 command=$3
  shift 3
  help2man --no-info --no-discard-stderr --section=1 --version-string="$version" \
    --name="$description" --output="$out/$name.1" "$@" "$command"
  # help2man names the page after the program's file; the page is NAME.
  sed -i "1,/^\.SH NAME/!b; s/^\.TH [^ ]*/.TH ${name^^}/" "$out/$name.1"
  sed -i "/^\.SH NAME/{n;s/^.* \\\\- /$name \\\\- /}" "$out/$name.1"
  gzip -9n "$out/$name.1"
}

# The subcommands: the indented lines after "Subcommands:" in `ksandwich --help`.
subcommands=$("$ks" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\)  *\(.*\)$/\1\t\2/p')
see_also=$out/see-also.h2m
{
  echo "[SEE ALSO]"
  while IFS=$'\t' read -r sub _; do echo ".BR ksandwich-$sub (1),"; done <<<"$subcommands"
  echo ".BR ksandwich-agent (1)"
} >"$see_also"

page ksandwich "benchmark a kernel patch on btrfs in a control/patched/control sandwich" "'$ks'" --include="$see_also"
while IFS=$'\t' read -r sub description; do
  page "ksandwich-$sub" "$description" "'$ks' $sub"
done <<<"$subcommands"
page ksandwich-agent "run one btrfs workload and print its results as JSON lines" "'$agent'"
rm "$see_also"
touch "$out/stamp"

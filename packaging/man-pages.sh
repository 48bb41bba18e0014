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
  # The "Exit status:" list that ends every --help is the page's EXIT STATUS section.
  sed -i 's/^\.SS "Exit status:"$/.SH "EXIT STATUS"/' "$out/$name.1"
  gzip -9n "$out/$name.1"
}

# The subcommands: the indented lines after "Subcommands:" in `ksandwich --help`.
subcommands=$("$ks" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\)  *\(.*\)$/\1\t\2/p')
see_also=$out/see-also.h2m
{
  echo "[SEE ALSO]"
  while IFS=$'\t' read -r sub _; do echo ".BR ksandwich-$sub (1),"; done <<<"$subcommands"
  echo ".BR ksandwich-agent (1),"
  echo ".BR ksandwich-experiment (5)"
} >"$see_also"

# ENVIRONMENT and FILES name what the code reads (getenv) and keeps. (EXIT STATUS comes from
# each --help's own list.)
sections=$out/sections.h2m
{
  cat <<'END'
[ENVIRONMENT]
.TP
.B KSANDWICH_CACHE
where kernel sources, builds, calibrations and initramfs images are kept (default /var/cache/ksandwich).
.TP
.B CCACHE_DIR
ccache's directory for kernel builds (default: ccache/ under the cache).
.TP
.B KSANDWICH_HOME
the ksandwich data directory (configs, kernel-patches, results-schema); default: found beside the program.
.TP
.B KSANDWICH_AGENT
the workload agent to put into guests (default: ksandwich-agent beside the program, else on PATH).
.TP
.B KSANDWICH_KVM_DEVICE
the KVM device to probe (default /dev/kvm).
.TP
.B KSANDWICH_BAREMETAL_STATE
the bare-metal backend's state directory (default /var/lib/ksandwich/baremetal).
.TP
.B GITHUB_STEP_SUMMARY
when set, run and nightly append the markdown report to this file.
.TP
.B SUDO_UID, SUDO_GID
under sudo, directories of the invoking user are trusted on the way to an output.
[FILES]
.TP
.I results/NAME-TIME/
a run's output directory: bundle.json(.gz), report.txt, report.md, report.html, reply.eml, logs/journal.jsonl.
.TP
.I /run/ksandwich/
the journal key and the machine lock (root only; never an output place).
.TP
.I /var/cache/ksandwich/
the default cache (see KSANDWICH_CACHE).
END
} >"$sections"

# Each subcommand's page has its own exit codes; the main page holds the sections they share.
see_main=$out/see-main.h2m
printf '%s\n' "[SEE ALSO]" ".BR ksandwich (1)" "for the environment and files." >"$see_main"

page ksandwich "benchmark a kernel patch on btrfs in a control/patched/control sandwich" "'$ks'" \
  --include="$sections" --include="$see_also"
while IFS=$'\t' read -r sub description; do
  page "ksandwich-$sub" "$description" "'$ks' $sub" --include="$see_main"
done <<<"$subcommands"
page ksandwich-agent "run one btrfs workload and print its results as JSON lines" "'$agent'"
rm "$see_also" "$sections" "$see_main"
touch "$out/stamp"

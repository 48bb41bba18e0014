#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the installed ksandwich finds its data in
# <prefix>/share/ksandwich from any directory, KSANDWICH_HOME overrides it, a copied binary
# without data says so (exit 2), and the man pages and the bash completion work.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

cmake --install "$KS_BINARY_DIR" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
ks=$prefix/bin/ksandwich
for f in bin/ksandwich bin/ksandwich-agent share/ksandwich/configs/experiments/default.json \
  share/ksandwich/kernel-patches/btrfs-drop-sb-nosec.patch share/ksandwich/results-schema/bundle.schema.json \
  share/ksandwich/workloads/fio/dio-randwrite.fio share/bash-completion/completions/ksandwich; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# expect NAME EXIT_CODE TEXT -- COMMAND...: run from $tmp/elsewhere, not the source tree.
mkdir -p "$tmp/elsewhere"
expect() {
  local name=$1 want=$2 text=$3
  shift 4
  local out code
  out=$(cd "$tmp/elsewhere" && "$@" 2>&1)
  code=$?
  if [ "$code" -ne "$want" ]; then
    fail "$name: exit $code, expected $want; output: $out"
  elif ! grep -qF -- "$text" <<<"$out"; then
    fail "$name: output lacks '$text'; output: $out"
  else
    echo "ok   $name: $(grep -m1 -F -- "$text" <<<"$out")"
  fi
}

data=$prefix/share/ksandwich
# The data is found next to the binary, not in the source tree it was built from.
expect "installed dry run" 0 "--job $data/workloads/fio/dio-randwrite.fio" -- \
  "$ks" run "$data/configs/experiments/host-fio.json" --dry-run
mkdir -p "$tmp/lone" "$tmp/empty"
cp "$KS_BINARY_DIR/bin/ksandwich" "$tmp/lone/"
expect "copied binary: --version" 0 "ksandwich " -- "$tmp/lone/ksandwich" --version
expect "copied binary: run" 2 "is not installed next to this binary: looked in $tmp/share/ksandwich" -- \
  "$tmp/lone/ksandwich" run "$data/configs/experiments/host-fio.json" --dry-run
expect "copied binary: the hint" 2 "KSANDWICH_HOME" -- "$tmp/lone/ksandwich" calibrate x.json
expect "copied binary, KSANDWICH_HOME" 0 "--job $data/workloads/fio/dio-randwrite.fio" -- \
  env KSANDWICH_HOME="$data" "$tmp/lone/ksandwich" run "$data/configs/experiments/host-fio.json" --dry-run
expect "KSANDWICH_HOME without data" 2 "KSANDWICH_HOME=$tmp/empty does not hold" -- \
  env KSANDWICH_HOME="$tmp/empty" "$ks" run "$data/configs/experiments/host-fio.json" --dry-run

# Man pages, when help2man was there at build time: one per subcommand, from --help.
if command -v help2man >/dev/null; then
  for sub in "" -run -doctor -report -validate -compare -calibrate -build; do
    page=$prefix/share/man/man1/ksandwich$sub.1.gz
    [ -f "$page" ] || { fail "no man page $page"; continue; }
    zcat "$page" | grep -q '^\.SH OPTIONS' || fail "$page has no OPTIONS section"
    zcat "$page" | grep -qi "^ksandwich$sub \\\\- " || fail "$page is not named ksandwich$sub"
    # Every page: its command's exit codes (its --help's list), internal errors included.
    zcat "$page" | sed -n '/^\.SH "EXIT STATUS"/,/^\.SH/p' | grep -A1 '^70$' | grep -q 'an internal error' ||
      fail "$page has no EXIT STATUS section with the internal-error code"
    if [ -z "$sub" ]; then
      # Environment and files.
      zcat "$page" | grep -q '^\.SH ENVIRONMENT' && zcat "$page" | grep -q '^\.B KSANDWICH_CACHE' ||
        fail "$page has no ENVIRONMENT section naming KSANDWICH_CACHE"
      zcat "$page" | grep -q '^\.SH FILES' || fail "$page has no FILES section"
    else
      zcat "$page" | sed -n '/^\.SH "SEE ALSO"/,$p' | grep -q '^\.BR ksandwich (1)' ||
        fail "$page does not point to ksandwich(1)"
    fi
  done
  [ -f "$prefix/share/man/man1/ksandwich-agent.1.gz" ] || fail "no man page ksandwich-agent.1.gz"
fi
# ksandwich-experiment(5): every key of the schema, nested ones by their dotted names.
page5=$prefix/share/man/man5/ksandwich-experiment.5.gz
if [ ! -f "$page5" ]; then
  fail "no man page $page5"
else
  for key in "name" "storage.kind" "arms.ARM.patches" "workloads[].ops" "direct_hits[].function" "gates.material_pct" "qemu.accel"; do
    zcat "$page5" | grep -qxF ".B $(sed 's/-/\\-/g' <<<"$key")" || fail "ksandwich-experiment(5) lacks the key $key"
  done
  zcat "$page5" | grep -q '^\.SH EXAMPLE' || fail "ksandwich-experiment(5) has no EXAMPLE"
  echo "ok   ksandwich-experiment(5): $(zcat "$page5" | grep -c '^\.B ') keys"
fi

# The completion, with bash-completion's helpers: subcommands, options, option values.
if [ -f /usr/share/bash-completion/bash_completion ]; then
  complete_words() {
    PATH="$prefix/bin:$PATH" bash -c '
      source /usr/share/bash-completion/bash_completion
      source "$1"; shift
      COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
      _ksandwich ksandwich "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
      echo "${COMPREPLY[*]}"' _ "$prefix/share/bash-completion/completions/ksandwich" "$@"
  }
  expect "completion: subcommands" 0 "report" -- complete_words ksandwich rep
  expect "completion: options" 0 "--tested-by" -- complete_words ksandwich report --te
  expect "completion: values" 0 "markdown" -- complete_words ksandwich report --format m
  expect "completion: nested subcommands" 0 "add" -- complete_words ksandwich history a
  expect "completion: a nested subcommand's options" 0 "--history" -- complete_words ksandwich history add --hi
  expect "completion: a nested subcommand's values" 0 "json" -- complete_words ksandwich history list --format j
fi

[ "$failures" -eq 0 ]

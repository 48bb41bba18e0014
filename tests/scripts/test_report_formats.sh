#!/usr/bin/env bash
# `report` and `compare` read a gzip bundle directly and speak JSON that jq parses; the
# text report of a real bundle fits a mail (80 columns).
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
data="$KS_SOURCE_DIR/tests/data"
bundle="$data/default-confirm.bundle.json.gz"
if ! command -v jq >/dev/null; then
  echo "SKIP: jq is not installed (apt-get install jq)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # NAME COMMAND...: passes when COMMAND exits 0
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

"$ks" report "$bundle" --format json >"$tmp/report.json"
check "report --format json exits 0" test $? -eq 0
check "report json parses with jq -e" \
  jq -e '(.verdict | type == "string") and (.workloads | length > 0)
         and all(.workloads[]; .verdict and (.change_pct | type == "number"))' "$tmp/report.json"

"$ks" compare "$bundle" "$bundle" --format json >"$tmp/compare.json"
code=$?
check "compare exits with a verdict code (0, 1, 3 or 4), not 2" test "$code" -ne 2
check "compare json parses with jq -e" \
  jq -e '(.title | startswith("ksandwich report: compare:")) and (.workloads | length > 0)' "$tmp/compare.json"

"$ks" report "$bundle" --tested-by "Jane Doe <jane@example.org>" \
  --in-reply-to "<20260423102649.12345-1-mark@harmstone.com>" >"$tmp/report.txt"
check "report reads the .gz bundle" test -s "$tmp/report.txt"
check "every text line within 80 columns" \
  awk 'length($0) > 80 { print "  too long: " $0; bad = 1 } END { exit bad }' "$tmp/report.txt"
check "the reply answers the thread" grep -qF "In-Reply-To: <20260423102649.12345-1-mark@harmstone.com>" "$tmp/report.txt"
check "the reply names the attachment's SHA-256" grep -qF "SHA-256: $(sha256sum "$bundle" | cut -d' ' -f1)" "$tmp/report.txt"

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi

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

# Thirty-second attack: a time per op of 1.7e308 (the schema's only bound is 0) made the
# plot's y axis infinite and its grid loop endless; the page grew until memory ran out.
jq '.rows[1].ns_per_op = 1.7e308' "$data/bundles/host-confirm.json" >"$tmp/huge-row.json"
timeout 60 "$ks" report "$tmp/huge-row.json" --format html >"$tmp/huge-row.html" 2>"$tmp/huge-row.err"
# Sixty-seventh: such a row is no longer elapsed_ns / ops, so every reader refuses it first.
check "report --format html of a row of 1.7e308 ns/op ends, refused, and small" \
  test "$?" -eq 2 -a "$(stat -c %s "$tmp/huge-row.html")" -lt 5000000
check "and says its parts do not agree" grep -q "its parts do not agree" "$tmp/huge-row.err"

"$ks" compare "$bundle" "$bundle" >"$tmp/self.txt" 2>&1
code=$?
check "compare of a bundle with itself exits 2" test "$code" -eq 2
check "and says they are one run" grep -q "A and B are one run" "$tmp/self.txt"
gzip -dc "$bundle" | jq '.created_at = "2026-12-04T02:00:00Z"' >"$tmp/later.json"
"$ks" compare "$bundle" "$tmp/later.json" --format json >"$tmp/compare.json"
code=$?
check "compare exits with a verdict code (0, 1, 3 or 4), not 2" test "$code" -ne 2
check "compare json parses with jq -e" \
  jq -e '(.title | startswith("ksandwich report: compare:")) and (.workloads | length > 0)' "$tmp/compare.json"

# The reply in the text view, of a bundle this version judged (an older version's analysis
# is not the one its rows give now, and gets no reply: test_validate.sh).
gzip -c "$data/bundles/qemu-confirm.json" >"$tmp/bundle.json.gz"
for b in "$bundle" "$tmp/bundle.json.gz"; do
  "$ks" report "$b" --tested-by "Jane Doe <jane@example.org>" \
    --in-reply-to "<20260423102649.12345-1-mark@harmstone.com>" >"$tmp/report.txt"
  check "report reads the .gz bundle $(basename "$b")" test -s "$tmp/report.txt"
  check "every text line within 80 columns" \
    awk 'length($0) > 80 { print "  too long: " $0; bad = 1 } END { exit bad }' "$tmp/report.txt"
done
check "the reply answers the thread" grep -qF "In-Reply-To: <20260423102649.12345-1-mark@harmstone.com>" "$tmp/report.txt"

# The reply as a MIME mail, as a mailer reads it: Python's email package parses it, the
# attachment is the bundle and validates (a bundle this version judged: the shipped QEMU run).
"$ks" report "$tmp/bundle.json.gz" --format eml --tested-by "Jane Doe <jane@example.org>" \
  --in-reply-to "<20260423102649.12345-1-mark@harmstone.com>" --to "Mark <mark@example.org>" \
  --cc linux-btrfs@vger.kernel.org >"$tmp/reply.eml"
check "report --format eml exits 0" test $? -eq 0
check "reply.eml parses as a MIME mail with the bundle attached" python3 - "$tmp/reply.eml" "$tmp/attached.json.gz" <<'PY'
import email, email.policy, sys
with open(sys.argv[1], "rb") as f:
    m = email.message_from_binary_file(f, policy=email.policy.default)
assert m["To"] == "mark@example.org", m["To"]
assert m["Cc"] == "linux-btrfs@vger.kernel.org", m["Cc"]
assert m["In-Reply-To"] == "<20260423102649.12345-1-mark@harmstone.com>", m["In-Reply-To"]
assert m["From"] == "Jane Doe <jane@example.org>", m["From"]
assert m.is_multipart() and not m.defects, m.defects
text = m.get_body(("plain",)).get_content()
assert "ksandwich validate bundle.json.gz" in " ".join(text.split()), text
attachments = list(m.iter_attachments())
assert len(attachments) == 1 and attachments[0].get_filename() == "bundle.json.gz"
with open(sys.argv[2], "wb") as out:
    out.write(attachments[0].get_content())
PY
check "the attachment is the bundle that was read" cmp -s <(gzip -dc "$tmp/bundle.json.gz") <(gzip -dc "$tmp/attached.json.gz")
check "the attached bundle validates" "$ks" validate "$tmp/attached.json.gz"
check "the text view's reply names the attachment's SHA-256" grep -qF "SHA-256: $(sha256sum "$tmp/attached.json.gz" | cut -d' ' -f1)" "$tmp/report.txt"
# Issue 27, twelfth attack: the attachment was the bundle.json.gz found beside a bundle.json,
# through links: a link planted there attached whatever it led to (/etc/shadow) as root.
mkdir "$tmp/drop"
gzip -dc "$tmp/bundle.json.gz" >"$tmp/drop/bundle.json"
echo "TOP-SECRET-NOT-A-BUNDLE" >"$tmp/secret"
ln -s "$tmp/secret" "$tmp/drop/bundle.json.gz"
"$ks" report "$tmp/drop/bundle.json" --format eml --in-reply-to "<x@y>" >"$tmp/drop.eml"
check "report --format eml beside a planted link exits 0" test $? -eq 0
check "  and attaches the bundle it read, not what the link leads to" python3 - "$tmp/drop.eml" "$tmp/drop/bundle.json" <<'PY'
import email, email.policy, gzip, sys
with open(sys.argv[1], "rb") as f:
    m = email.message_from_binary_file(f, policy=email.policy.default)
attached = list(m.iter_attachments())[0].get_content()
assert gzip.decompress(attached) == open(sys.argv[2], "rb").read()
PY
"$ks" report "$data/bundles/host-screen.json" --format eml >"$tmp/none.eml" 2>"$tmp/none.err"
code=$?
check "no thread: eml is exit 2" test "$code" -eq 2
check "no thread: the error says how to name one" grep -q -- --in-reply-to "$tmp/none.err"
"$ks" report "$tmp/bundle.json.gz" --format eml --in-reply-to "<x@y>" --cc "a@b, c@d" >/dev/null 2>"$tmp/cc.err"
code=$?
check "a --cc that is not one address is exit 2" test "$code" -eq 2
check "  and the error says what an address is" grep -q "not a mail address" "$tmp/cc.err"

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi

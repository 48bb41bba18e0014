#!/usr/bin/env bash
# One night of a lab machine's nightly job (ksandwich-nightly.service runs it): `ksandwich
# nightly` (run the experiment, add its bundle to the history), then the trend as HTML and
# markdown next to the results. --dry-run prints the plan and what would be recorded, and
# writes nothing.
#
# Environment (the service sets it; see ksandwich-nightly.service):
#   KSANDWICH_EXPERIMENT  the nightly experiment file (baseline as control, branch tip as patched)
#   KSANDWICH_HISTORY     the history file (default /var/lib/ksandwich/history.sqlite)
#   KSANDWICH_RESULTS     where each night's directory goes (default /var/lib/ksandwich/results)
#   KSANDWICH_NIGHT_DIR   this night's directory (default $KSANDWICH_RESULTS/nightly-<UTC time>)
#   KSANDWICH             the ksandwich binary (default: ksandwich on PATH)
# The night's directory gets junit.xml (one test case per workload) beside the bundle.
# Exit status: ksandwich's (0 decided, 1 material regression, 2 bad input, 3 invalid,
# 4 inconclusive, 130 interrupted).
set -euo pipefail

dry_run=()
case "${1:-}" in
  --dry-run) dry_run=(--dry-run) ;;
  "") ;;
  *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
ks=${KSANDWICH:-ksandwich}
experiment=${KSANDWICH_EXPERIMENT:?set KSANDWICH_EXPERIMENT to the nightly experiment file}
history=${KSANDWICH_HISTORY:-/var/lib/ksandwich/history.sqlite}
results=${KSANDWICH_RESULTS:-/var/lib/ksandwich/results}
out=${KSANDWICH_NIGHT_DIR:-"$results/nightly-$(date -u +%Y-%m-%dT%H%M%SZ)"}

# The service's StateDirectory= makes these; a CI runner's first night may not have them.
[ "${#dry_run[@]}" -gt 0 ] || mkdir -p "$(dirname "$history")" "$results"
code=0
"$ks" nightly "$experiment" --history "$history" --out "$out" "${dry_run[@]}" || code=$?
# Refused (2: the experiment, the history or a place is not fit) or interrupted (130): nothing
# of this night to add to, and what lies at those paths is not its own.
case "$code" in 2 | 130) exit "$code" ;; esac
if [ "${#dry_run[@]}" -eq 0 ] && [ -f "$out/bundle.json" ]; then
  "$ks" junit "$out/bundle.json" --out "$out/junit.xml" || code=$((code ? code : $?))
fi
if [ "${#dry_run[@]}" -eq 0 ] && [ -f "$history" ]; then
  "$ks" trend --history "$history" --format html --out "$results/trend.html" || code=$((code ? code : $?))
  "$ks" trend --history "$history" --format markdown --out "$results/trend.md" || code=$((code ? code : $?))
fi
exit "$code"

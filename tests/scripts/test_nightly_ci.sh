#!/usr/bin/env bash
# The GitHub Actions nightly job (.github/workflows/ksandwich-nightly.yml): its shape (a
# schedule, the lab runner, one run at a time), then the script it calls, run with the
# job's own environment the way the runner would: as root a real night of a small host
# experiment (the bundle, junit.xml, the history and the trend it leaves), otherwise a dry
# run.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
[ -x "$ks" ] || { echo "SKIP: $ks is not built"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }
workflow="$KS_SOURCE_DIR/.github/workflows/ksandwich-nightly.yml"
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# The job's nightly step and environment, with the ${{ }} expressions a runner would expand
# (github.workspace: the source tree; run_id: 1; vars.X || 'default': the default), and the
# lab's persistent paths moved into the test's directory.
python3 - "$workflow" "$KS_SOURCE_DIR" "$tmp" >"$tmp/job.env" <<'PY' || fail "the workflow does not have the expected shape"
import re, shlex, sys, yaml
workflow, source, tmp = sys.argv[1:]
doc = yaml.safe_load(open(workflow))
on = doc.get(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
assert on["schedule"][0]["cron"], "no schedule"
assert doc["concurrency"]["cancel-in-progress"] is False, "a new night may cancel a measuring one"
job = doc["jobs"]["nightly"]
assert "self-hosted" in job["runs-on"], "the nightly must run on the lab machine itself"
def expand(v):
    v = v.replace("${{ github.workspace }}", source).replace("${{ github.run_id }}", "1")
    return re.sub(r"\$\{\{ vars\.\w+ \|\| '([^']*)' \}\}", r"\1", v)
steps = [s for s in job["steps"] if "ksandwich-nightly.sh" in s.get("run", "")]
assert len(steps) == 1, "no step runs tools/nightly/ksandwich-nightly.sh"
env = {k: expand(str(v)) for k, v in job["env"].items()}
for k in ("KSANDWICH_HISTORY", "KSANDWICH_RESULTS", "KSANDWICH_NIGHT_DIR"):
    env[k] = env[k].replace("/var/lib/ksandwich", tmp + "/lab")
for k, v in env.items(): print(f"export {k}={shlex.quote(v)}")
print(f"step={shlex.quote(steps[0]['run'])}")
PY
# shellcheck disable=SC1091
. "$tmp/job.env"
[ "$KSANDWICH" = "$KS_SOURCE_DIR/build/bin/ksandwich" ] || echo "note: the job's binary is $KSANDWICH; the test uses $ks"
export KSANDWICH="$ks"
[ -f "$KS_SOURCE_DIR/$KSANDWICH_EXPERIMENT" ] || fail "the job's default experiment $KSANDWICH_EXPERIMENT does not exist"
script=$(grep -o 'tools/nightly/[a-z-]*\.sh' <<<"$step")
[ -x "$KS_SOURCE_DIR/$script" ] || fail "the step's script $script is not an executable in the repository"

if [ "$(id -u)" -ne 0 ]; then
  echo "note: not root, so the step's script runs as a dry run (a real night needs a RAM-backed device)"
  KSANDWICH_EXPERIMENT="$KS_SOURCE_DIR/configs/experiments/host-aa.json"
  (cd "$KS_SOURCE_DIR" && "./$script" --dry-run) >"$tmp/out" 2>&1 || fail "dry run: $(cat "$tmp/out")"
else
  # A real night, small: a confirm run of 3 blocks on the host backend (this kernel), one clone
  # workload. What is tested is the job, not this machine's noise: the host's clock beside the
  # suite's other tests moved an A/A night by a few per cent (CI: REGRESSION, clone +1.6%, at
  # the default 1%), so a change must be 25% to be material here.
  jq '.name = "ci-night" | .scheme = "confirm" | .min_blocks = 3 | .max_blocks = 3 | .rounds = 3 | .storage.size_mib = 512 | .gates.material_pct = 25 | .workloads = [.workloads[0] | .ops = 2000]' \
    "$KS_SOURCE_DIR/configs/experiments/host-aa.json" >"$tmp/night.json"
  export KSANDWICH_EXPERIMENT="$tmp/night.json" GITHUB_STEP_SUMMARY="$tmp/summary.md"
  (cd "$KS_SOURCE_DIR" && bash -c "$step") >"$tmp/out" 2>&1
  code=$?
  [ "$code" -eq 0 ] || fail "the job's step failed (exit $code): $(tail -20 "$tmp/out")"
  for f in bundle.json bundle.json.gz report.txt junit.xml; do
    [ -s "$KSANDWICH_NIGHT_DIR/$f" ] || fail "the night left no $f"
  done
  grep -q '<testcase [^>]*name="clone' "$KSANDWICH_NIGHT_DIR/junit.xml" || fail "junit.xml has no clone test case"
  [ "$("$ks" history list --history "$KSANDWICH_HISTORY" 2>&1 | grep -c ci-night)" -eq 1 ] ||
    fail "the history does not hold the night: $("$ks" history list --history "$KSANDWICH_HISTORY" 2>&1)"
  grep -q '<svg' "$KSANDWICH_RESULTS/trend.html" || fail "no trend plot"
  [ -s "$GITHUB_STEP_SUMMARY" ] || fail "nothing written to \$GITHUB_STEP_SUMMARY"
  # Results in another user's directory (fifty-sixth attack): the night is refused (exit 2), and
  # the script stops there; it wrote its trend through their link to a root-only file.
  mkdir "$tmp/theirs" && chown nobody "$tmp/theirs"
  echo secret >"$tmp/victim" && chmod 600 "$tmp/victim"
  ln -s "$tmp/victim" "$tmp/theirs/trend.html" && ln -s "$tmp/victim" "$tmp/theirs/trend.md"
  (cd "$KS_SOURCE_DIR" && KSANDWICH_RESULTS="$tmp/theirs" KSANDWICH_NIGHT_DIR="$tmp/theirs/night" "./$script") >"$tmp/out" 2>&1
  code=$?
  [ "$code" -eq 2 ] || fail "a night in another user's directory ended $code, not 2: $(tail -5 "$tmp/out")"
  [ "$(cat "$tmp/victim")" = secret ] || fail "the script wrote through a link in a refused results directory"
fi

[ "$failures" -eq 0 ] && echo "ok: the nightly CI job's shape and its step"
exit $((failures > 0))

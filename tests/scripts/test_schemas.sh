#!/usr/bin/env bash
# Every shipped experiment validates against results-schema/experiment.schema.json, and
# the schemas themselves are valid draft 2020-12 schemas.
set -u
py=/usr/bin/python3
if ! $py -c 'import jsonschema' 2>/dev/null; then
  echo "SKIPPED: python3-jsonschema is not installed (tools/setup.sh installs it)"
  exit 77
fi
cd "$KS_SOURCE_DIR"
$py - <<'PY'
import glob, json, sys
import jsonschema
failures = 0
for name in ("experiment", "bundle"):
    schema = json.load(open(f"results-schema/{name}.schema.json"))
    jsonschema.Draft202012Validator.check_schema(schema)
    print(f"ok   results-schema/{name}.schema.json is a valid schema")
validator = jsonschema.Draft202012Validator(json.load(open("results-schema/experiment.schema.json")))
files = sorted(glob.glob("configs/experiments/*.json"))
assert files, "no shipped experiments"
for f in files:
    errors = list(validator.iter_errors(json.load(open(f))))
    for e in errors:
        print(f"FAIL {f}: /{'/'.join(map(str, e.absolute_path))}: {e.message}")
    failures += bool(errors)
    if not errors:
        print(f"ok   {f}")
# The schema must also refuse what the harness refuses.
bad = {"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clonez"}]}
if validator.is_valid(bad):
    print("FAIL: the schema accepts an unknown workload"); failures += 1
sys.exit(1 if failures else 0)
PY

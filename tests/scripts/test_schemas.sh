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
# Every key says what it is for: ksandwich-experiment(5) is made from these descriptions.
experiment = json.load(open("results-schema/experiment.schema.json"))
def resolve(node):
    while "$ref" in node:
        node = {**experiment["$defs"][node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node
def undescribed(node, path):
    node = resolve(node)
    bare = [] if "description" in node or not path else [path]
    for key, child in node.get("properties", {}).items():
        if key != "$schema":
            bare += undescribed(child, f"{path}.{key}" if path else key)
    items = node.get("items")
    if isinstance(items, dict) and "properties" in resolve(items):
        for key, child in resolve(items)["properties"].items():
            bare += undescribed(child, f"{path}[].{key}")
    return bare
bare = undescribed({"properties": experiment["properties"]}, "")
bare += undescribed({"properties": experiment["$defs"]["arm"]["properties"]}, "")
if bare:
    print("FAIL keys of the experiment schema without a description: " + ", ".join(bare)); failures += 1
else:
    print("ok   every key of the experiment schema has a description")
# The schema must also refuse what the harness refuses.
bad = {"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clonez"}]}
if validator.is_valid(bad):
    print("FAIL: the schema accepts an unknown workload"); failures += 1
# ... and what the parser refuses as hostile (issue 11): the two say the same.
refused = {
    "a label that is a path": {"workloads": [{"name": "clone", "label": "../../tmp/x"}]},
    "an fio job that is a path": {"workloads": [{"name": "fio", "job": "../../../../etc/hostname"}]},
    "a sysfs key with ..": {"arms": {"control": {}, "patched": {"sysfs": {"/sys/../tmp/x": "v"}}}},
    "storage.device with kind auto": {"storage": {"kind": "auto", "device": "/dev/sda"}},
    "ops on buffered-write": {"workloads": [{"name": "buffered-write", "ops": 5}]},
    "a fractional integer": {"rounds": 2.5},
    "rounds beyond the maximum": {"rounds": 2**32},
    "an unknown accel": {"qemu": {"accel": "xen"}},
    "sysfs knobs on the qemu backend": {"backend": "qemu", "arms": {"control": {}, "patched": {"sysfs": {"/proc/sys/vm/dirty_ratio": "10"}}}},
    "two vCPUs on the instruction clock": {"clock": "instructions", "backend": "qemu", "qemu": {"vcpus": 2}},
    "a claim of several CPUs without its needs": {"claim": {"thread": "t", "figure": "f", "parallel_cpus": 2}},
}
for what, change in refused.items():
    if validator.is_valid({**bad, "workloads": [{"name": "clone"}], **change}):
        print(f"FAIL: the schema accepts {what}"); failures += 1
    else:
        print(f"ok   the schema refuses {what}")
sys.exit(1 if failures else 0)
PY

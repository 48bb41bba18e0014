#!/usr/bin/env python3
"""Writes ksandwich-experiment(5), the experiment file's man page, from the experiment schema.

The schema (results-schema/experiment.schema.json) is the one table of the keys: their
types, defaults, bounds and descriptions. This page shows it, with the shipped default
experiment as the example, so the page cannot fall behind what `run` accepts.
Usage: experiment-man.py SCHEMA EXAMPLE VERSION OUT (OUT: the page, gzipped).
"""
import gzip
import json
import sys


def roff(text):
    """TEXT safe in a roff line: backslashes escaped, no line taken for a request."""
    text = str(text).replace("\\", "\\e").replace("-", "\\-").replace("`", "\\(ga")
    return "\\&" + text if text[:1] in (".", "'") else text


def resolve(schema, node):
    while "$ref" in node:
        node = {**schema["$defs"][node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def kind(node):
    """What a key holds, as the page says it: its type, values and bounds."""
    if "enum" in node:
        words = ["one of " + ", ".join(json.dumps(v) for v in node["enum"])]
    elif "type" in node:
        words = [node["type"]]
    else:
        words = []
    if "minimum" in node or "exclusiveMinimum" in node:
        low = node.get("minimum", node.get("exclusiveMinimum"))
        high = node.get("maximum")
        bound = ("above " if "minimum" not in node else "") + str(low)
        words.append(f"{bound} to {high}" if high is not None else f"from {bound}")
    if "exclusiveMaximum" in node:
        words.append("below " + str(node["exclusiveMaximum"]))
    if "multipleOf" in node:
        words.append("a multiple of " + str(node["multipleOf"]))
    if "pattern" in node:
        words.append("matching " + node["pattern"])
    if "minItems" in node:
        words.append(f"at least {node['minItems']} items")
    if "default" in node:
        words.append("default " + json.dumps(node["default"]))
    return "; ".join(words)


def keys(schema, node, prefix, required, out):
    """One .TP entry a key, depth first: nested keys read parent.key, list items parent[]."""
    node = resolve(schema, node)
    for name, child in node.get("properties", {}).items():
        if name == "$schema":
            continue
        child = resolve(schema, child)
        full = prefix + name
        label = kind(child) + ("; required" if name in required else "")
        out.append(".TP")
        out.append(".B " + roff(full))
        out.append(roff(f"({label})" if label else ""))
        if child.get("description"):
            out.append(".br")
            out.append(roff(child["description"]))
        if "properties" in child:
            keys(schema, child, full + ".", child.get("required", []), out)
        items = child.get("items")
        if isinstance(items, dict) and "properties" in resolve(schema, items):
            item = resolve(schema, items)
            keys(schema, item, full + "[].", item.get("required", []), out)
    return out


def main():
    schema_file, example_file, version, out_file = sys.argv[1:]
    schema = json.load(open(schema_file))
    # The arms' keys once, as arms.ARM.* (control and patched take the same ones).
    arm = schema["$defs"]["arm"]
    top = dict(schema["properties"])
    top["arms"] = {**top["arms"], "properties": {"ARM": {**arm, "description": "control or patched: how this arm's kernel or setup differs (control: no commit)"}}}
    body = keys(schema, {"properties": top}, "", schema.get("required", []), [])
    example = open(example_file).read().rstrip("\n").split("\n")
    page = [
        f'.TH KSANDWICH\\-EXPERIMENT 5 "" "{roff(version)}" "File Formats"',
        ".SH NAME",
        "ksandwich\\-experiment \\- the experiment file that ksandwich run reads",
        ".SH SYNOPSIS",
        ".B ksandwich run",
        ".I EXPERIMENT.json",
        ".br",
        ".B ksandwich run",
        ".I NAME",
        "(a shipped experiment, share/ksandwich/configs/experiments/NAME.json)",
        ".SH DESCRIPTION",
        roff(schema["description"]),
        "An experiment is one JSON object: which kernels (arms) to compare, on which storage, "
        "with which workloads, in which order of points, and by which gates the verdict is judged. "
        "A key that is not listed here, or that does not apply to what the experiment chose "
        "(a workload's or a storage kind's), is refused with the key's JSON pointer and exit 2, "
        "never ignored. Relative paths (patches, fragments, a tarball) are taken from the "
        "experiment file's directory first, then from the shipped kernel\\-patches/ and configs/kernel/.",
        ".PP",
        "The keys, as results\\-schema/experiment.schema.json defines them "
        "(a.b is key b of object a; a[].b is key b of each item of list a):",
        ".SH KEYS",
        *body,
        ".SH EXAMPLE",
        "The main job (configs/experiments/default.json):",
        ".PP",
        ".nf",
        *[roff(line) for line in example],
        ".fi",
        ".SH SEE ALSO",
        ".BR ksandwich (1),",
        ".BR ksandwich\\-run (1),",
        ".BR ksandwich\\-validate (1)",
    ]
    with gzip.GzipFile(out_file, "wb", mtime=0) as f:
        f.write(("\n".join(page) + "\n").encode())


main()

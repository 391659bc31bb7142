#!/usr/bin/env python3
"""Validate p2pnode-agent documents against api/agent-result.schema.json; `--processes`
documents (kind gpu_processes) against api/gpu-processes.schema.json beside it. A daemon's API
bodies kept with the results (*-api.json) are checked against api/openapi.yaml by tests/serve,
and `--health` documents (kind health) by the daemon's decoder (tests/unit/judge): not here.

usage: validate_schema.py SCHEMA DOC.json... ; exits 77 (skipped) when python3-jsonschema is absent.
"""
import os
import json
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3 jsonschema is not installed")
    sys.exit(77)

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
processes = jsonschema.Draft202012Validator(
    json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "gpu-processes.schema.json"))))
bad = 0
for path in sys.argv[2:]:
    if path.endswith("-api.json"):
        continue
    doc = json.load(open(path))
    if doc.get("kind") == "health":
        continue
    v = processes if doc.get("kind") == "gpu_processes" else validator
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:5]:
        print(f"{path}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    bad += 1 if errors else 0
    print(f"{path}: {'INVALID' if errors else 'ok'}")
sys.exit(1 if bad else 0)

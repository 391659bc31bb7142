#!/usr/bin/env python3
"""Validate p2pnode-agent documents against api/agent-result.schema.json.

usage: validate_schema.py SCHEMA DOC.json... ; exits 77 (skipped) when python3-jsonschema is absent.
"""
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
bad = 0
for path in sys.argv[2:]:
    doc = json.load(open(path))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:5]:
        print(f"{path}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    bad += 1 if errors else 0
    print(f"{path}: {'INVALID' if errors else 'ok'}")
sys.exit(1 if bad else 0)

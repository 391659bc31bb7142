#!/usr/bin/env python3
"""Synthesises an N-GPU agent result from a recorded one (tests/fixtures/gpu-runs), for GPUs at the
given PCI addresses: every pair cell and matrix is copied from the recorded pair (0, 1) or GPU 0;
a GPU the recording does not have reports memory_bytes 0 (not known).
Used by the benchmark to serve a full 8-GPU self-test without 8 GPUs.
usage: synth_agent_result.py TEMPLATE.json BDF... > result.json"""
import copy
import json
import sys

template = json.load(open(sys.argv[1]))
bdfs = sys.argv[2:]
n = len(bdfs)
doc = copy.deepcopy(template)
dev0 = template["devices"][0]
doc["devices"] = []
recorded = {d["pci_bus_id"]: d for d in template["devices"]}
for i, bdf in enumerate(bdfs):
    d = copy.deepcopy(recorded.get(bdf, dev0))
    d.update(index=i, cuda_ordinal=i, pci_bus_id=bdf, uuid="GPU-%08x-0000-0000-0000-%012x" % (i, i))
    # A GPU the recording does not have: its VRAM is not known, so none is reported (0), and
    # rebar.aperture judges it by the model table, not by the template's card.
    if bdf not in recorded:
        d["memory_bytes"] = 0
    doc["devices"].append(d)
for case in doc["cases"]:
    cells = case["cells"]
    if not cells:
        continue
    proto = copy.deepcopy(cells[0])
    if case["shape"] == "pair":
        case["cells"] = []
        for s in range(n):
            for t in range(n):
                if s != t:
                    c = copy.deepcopy(proto)
                    c["src"], c["dst"] = s, t
                    case["cells"].append(c)
        for key, m in case["matrices"].items():
            v = m[0][1] if len(m) > 1 else None
            case["matrices"][key] = [[None if s == t else v for t in range(n)] for s in range(n)]
    else:
        case["cells"] = []
        for g in range(n):
            c = copy.deepcopy(proto)
            c["gpu"] = g
            case["cells"].append(c)
        for key, m in case["matrices"].items():
            case["matrices"][key] = [m[0]] * n
doc["schedule"]["rounds"] = []
json.dump(doc, sys.stdout, indent=1, sort_keys=True)

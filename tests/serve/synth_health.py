#!/usr/bin/env python3
"""A `p2pnode-agent --health` document (schema 2) for the given GPUs, as a healthy box's agent prints
it: no recovery action, the PCIe replay counter at 0, the link at its maximum, memory clean, every
ordered pair's P2P status OK (PCI P2P where the GPUs have no NVLink). For the recorded machines the
serve tests and the simulated fleet run (tests/serve/eight_gpu_node.sh).
usage: synth_health.py BDF..."""
import json
import sys

gpus = sys.argv[1:]
doc = {
    "schema_version": 2, "kind": "health", "agent_version": "test",
    "nvml": {"available": True, "driver_version": "550.90.07", "reason": None},
    "gpus": [{"index": i, "pci_bus_id": g, "name": "NVIDIA GPU", "problem": None, "links": [],
              "recovery_action": "none", "recovery_problem": None,
              "pcie": {"replay": 0, "replay_rollover": 0, "gen": 4, "max_gen": 4, "width": 16, "max_width": 16},
              "memory": {"remapped_correctable": 0, "remapped_uncorrectable": 0, "remap_pending": False,
                         "remap_failure": False, "volatile_uncorrected_ecc": 0}} for i, g in enumerate(gpus)],
    "p2p_status": [{"gpu": a, "peer_gpu": b, "read": "ok", "write": "ok", "nvlink": "not_supported", "atomics": "ok", "pci": "ok"}
                   for a in gpus for b in gpus if a != b],
}
json.dump(doc, sys.stdout, indent=1)
print()

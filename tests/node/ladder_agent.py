#!/usr/bin/python3
# A stand-in for p2pnode-agent in the node VM (tests/node/ladder_vm.sh), which has no GPU: it
# speaks the agent's three documents (the self-test, --processes, --health --json) for a box of two
# GPUs whose P2P path the test loses and gives back. The daemon's configuration names it
# (agent.path); nothing in p2pnode knows it is not the real agent.
#
# What it says comes from files the test writes in /var/lib/p2pnode-test (the daemon's sandbox
# lets it read them, not write them):
#   lost      absent: the pair has peer access, the self-test passes. Present (JSON): it is lost,
#             {"until": "reboot" | "never", "boot_id": the boot it was lost in,
#              "module_ino": /sys/module/nvidia's inode then (a reload makes a new one),
#              "pause_after_reload": true: the first self-test in that boot after the module was
#              reloaded stops and waits (for the test's power cut)}
#   rebooted  written at an orderly shutdown while `lost` exists (p2pnode-test-reboot-mark.service):
#             a reboot, not a power cut, came after the loss; with until "reboot" the path is back.
#   delay_s   seconds a passing self-test takes while `lost` exists (the test watches the node
#             stay unready until it has passed).
# Every run appends one JSON line to /var/log/p2pnode-test-agent.log (writable in the sandbox).
import json
import os
import sys
import time

STATE = "/var/lib/p2pnode-test"
LOG = "/var/log/p2pnode-test-agent.log"
GPUS = [("0000:41:00.0", "GPU-5e1f0c2a-7d3b-4c59-9a61-0b7d2e4f1a01"),
        ("0000:42:00.0", "GPU-5e1f0c2a-7d3b-4c59-9a61-0b7d2e4f1a02")]


def read(name, default=None):
    try:
        with open(os.path.join(STATE, name)) as f:
            return f.read().strip()
    except OSError:
        return default


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def module_ino():
    try:
        return os.stat("/sys/module/nvidia").st_ino
    except OSError:
        return None


def log(**what):
    what.update(boot_id=boot_id(), at=time.time(), pid=os.getpid())
    with open(LOG, "a") as f:
        f.write(json.dumps(what, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())  # the test cuts the power: the line must be on the disk by then


def devices():
    return [{"index": i, "name": "NVIDIA H200", "uuid": uuid, "pci_bus_id": bus, "compute_capability": "9.0"}
            for i, (bus, uuid) in enumerate(GPUS)]


def selftest_document(peer_access):
    """The agent's document for `--cases peer_access` on two GPUs, with or without peer access."""
    cells = []
    for src, dst in ((0, 1), (1, 0)):
        cell = {"src": src, "dst": dst, "peer_access": 1 if peer_access else 0, "performance_rank": 0,
                "native_atomics": 1 if peer_access else 0, "concurrent_pairs": 1,
                "status": "passed" if peer_access else "failed"}
        if not peer_access:
            cell["reason"] = "cudaDeviceCanAccessPeer reports no peer access"
        cells.append(cell)
    case = {"key": "peer_access", "shape": "pair", "status": "passed" if peer_access else "failed",
            "duration_s": 0.01, "cells": cells}
    if not peer_access:
        case["reason"] = "2 of 2 pairs have no peer access"
    status = "passed" if peer_access else "failed"
    return {"schema_version": 1, "agent": {"name": "p2pnode-agent", "version": "0.1.0-standin"},
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "duration_s": 0.05,
            "status": status, "exit_code": 0 if peer_access else 1, "error": None, "devices": devices(),
            "cases": [case],
            "summary": {"cases_passed": 1 if peer_access else 0, "cases_failed": 0 if peer_access else 1,
                        "cases_waived": 0, "integrity_checked_bytes": 0, "integrity_bad_bytes": 0}}


def selftest(args):
    if "--cases" in args and args[args.index("--cases") + 1:][:1] != ["peer_access"]:
        log(run="selftest", verdict="error", why="only --cases peer_access is spoken", args=args)
        return 2
    try:
        lost = json.loads(read("lost", "null"))
    except ValueError:  # the test writes it and syncs; a torn write is the test's own fault
        log(run="selftest", verdict="error", why="the test's lost file is not JSON")
        print("ladder_agent: %s/lost is not JSON" % STATE, file=sys.stderr)
        return 2
    if lost is None:
        log(run="selftest", verdict="passed", why="not lost")
        print(json.dumps(selftest_document(True)))
        return 0
    reloaded = module_ino() != lost.get("module_ino")
    back = lost.get("until") == "reboot" and read("rebooted") is not None
    if not back and reloaded and lost.get("pause_after_reload") and boot_id() == lost.get("boot_id"):
        log(run="selftest", verdict="paused", why="the module was reloaded since the loss: waiting for the power cut")
        time.sleep(3600)
    if back:
        delay = float(read("delay_s", "0"))
        log(run="selftest", verdict="started", why="an orderly reboot came after the loss", delay_s=delay)
        time.sleep(delay)
        log(run="selftest", verdict="passed", why="an orderly reboot came after the loss")
        print(json.dumps(selftest_document(True)))
        return 0
    log(run="selftest", verdict="failed", why="lost until " + str(lost.get("until")), reloaded=reloaded)
    print(json.dumps(selftest_document(False)))
    return 1


def main(args):
    if "--processes" in args:  # no NVML here: the daemon reads the device files' holders instead
        print(json.dumps({"schema_version": 1, "kind": "gpu_processes", "source": "none",
                          "reason": "the test's stand-in has no NVML", "processes": []}))
        return 0
    if "--health" in args:
        print(json.dumps({"schema_version": 1, "kind": "health",
                          "nvml": {"available": False, "reason": "the test's stand-in has no NVML"}}))
        return 0
    return selftest(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

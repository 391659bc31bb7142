#!/usr/bin/env python3
"""A simulated p2pnode fleet on loopback: node scrapes made from real daemon scrapes (captured by
tests/fleet/capture.sh from the recorded fixtures and agent results), served by one process on one
port per node, with a file_sd target list as ansible/prometheus.yml writes it.

  fleet.py plan --captures DIR --nodes N --base-port P --out DIR
      writes DIR/inventory.yml (for ansible/prometheus.yml), DIR/p2pnode-targets.json (the same
      file_sd the playbook writes), DIR/expected.json (which instances each alert must name)
  fleet.py serve --captures DIR --nodes N --base-port P [--ready-file F] [--slice A:B]
      serves node i's scrape on 127.0.0.1:P+i until killed; --slice: only nodes A to B-1 (a process
      holds a socket per node and one per scraper's connection: several serve a large fleet)
  fleet.py ports --nodes N
      prints the first of N consecutive free ports on 127.0.0.1, below the kernel's ephemeral range
      (where the scrapers' own connections would take them)
  --minute S (plan, serve): the counters move, a simulated minute lasting S seconds (S=1 for a test whose
      every duration is cut 60 times): every node's reconciles step once in 5 minutes and a replay
      counter once in 7, and the counter roles below come in; without it every counter stands still

Node i is a variant of one captured kind (different node name, GPU UUIDs, figures and times):
  h8  8x RTX 4090 (EPYC, 4 NVMe), ready          h4  4x H200 (NVLink), ready
  h2  the 4x H200 node restricted to 2 GPUs      b2  2x RTX 4090, a link trained at x8: blocked
  f6  tinybox 6x RTX 4090 as its BIOS left it: failed, a kernel without the module
and every 25th node from a few offsets plays a role: a pair below its threshold, a pair without
peer access, corrupted bytes (each degraded), a regressed pair, a self-test overdue, a userspace
driver that does not match, an NVMe drive without BAR0 and a doorbell the GPU cannot ring, a
passive health pass that stopped (every other node's health pass is as recent as the scrape), GPUs
kept busy by other jobs through every self-test for a day, a GPU whose driver asks to drain P2P; the
kinds b2 and f6 come in the same way. With --minute, four more roles count errors at rates that
alert: NVLink replays on one GPU, a bridge's non-fatal and a GPU's correctable AER errors, a GPU's
PCIe replays at about 20 a minute, a client shed at about 50 connections a minute; each counter
steps once a simulated minute by an amount drawn for that minute. Everything is deterministic in i."""
import argparse
import asyncio
import json
import os
import random
import re
import resource
import socket
import sys
import time
import zlib

KIND_FILES = {"h8": "h8.prom", "h4": "h4.prom", "b2": "b2.prom", "f6": "f6.prom"}
ROLES = {1: "noaccess", 3: "below", 5: "driver", 7: "regressed", 9: "nvme", 11: "corrupt", 13: "overdue", 15: "drain",
         17: "blocked", 19: "nomodule", 21: "healthstale", 23: "busy"}
# Roles that only --minute brings (rising counters need a clock to rise with).
COUNTER_ROLES = {2: "nvlink", 4: "aer", 6: "replays", 8: "shedding"}
NOW = "@NOW@"  # a value the server writes at each request: the current Unix time
TOKEN = re.compile(rb"@(NOW|C[0-9]+)@")  # NOW, or counter k of the node ("@C3@"): its value at the request
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Exposition text -> [[name, help, type, [[labels, value], ...]], ...] in file order."""
    fams, by_name = [], {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = (line.split(" ", 3) + [""])[:4]
            if name not in by_name:
                by_name[name] = [name, "", "", []]
                fams.append(by_name[name])
            by_name[name][1 if kind == "HELP" else 2] = rest
            continue
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise ValueError("not an exposition line: %r" % line)
        name, labels, value = m.group(1), dict(LABEL.findall(m.group(2) or "")), m.group(3)
        fam = by_name.get(name) or by_name.get(re.sub(r"_total$", "", name))
        if fam is None:
            fam = by_name[name] = [name, "", "untyped", []]
            fams.append(fam)
        fam[3].append([labels, float(value)])
    return fams


def render(fams):
    out = []
    for name, help_, type_, samples in fams:
        if not samples:
            continue
        out.append("# HELP %s %s\n# TYPE %s %s\n" % (name, help_, name, type_))
        for labels, value in samples:
            lab = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
            sample_name = name + "_total" if type_ == "counter" and not name.endswith("_total") else name
            out.append("%s%s %s\n" % (sample_name, "{%s}" % lab if lab else "", value if isinstance(value, str) else repr(float(value))))
    return "".join(out)


def restrict(fams, keep):
    """The scrape of a node with only the GPUs in keep (series naming another GPU are dropped)."""
    out = []
    for name, h, t, samples in fams:
        s = [[l, v] for l, v in samples if l.get("gpu", "") in keep | {""} and l.get("peer_gpu", "") in keep | {""}]
        out.append([name, h, t, s])
    checked = family(out, "p2pnode_p2p_integrity_checked_pairs")
    if checked:
        checked[3] = [[{}, float(len(family(out, "p2pnode_p2p_access")[3]))]]
    return out


def kind_of(i, moving=False):
    role = ROLES.get(i % 25) or (COUNTER_ROLES.get(i % 25) if moving else None)
    if role == "blocked":
        return "b2", role
    if role == "nomodule":
        return "f6", role
    if role == "nvme":
        return "h8", role
    return ["h8", "h8", "h4", "h2"][i % 4], role


def load_kinds(captures):
    kinds = {k: parse(open(os.path.join(captures, f)).read()) for k, f in KIND_FILES.items()}
    gpus = sorted({l["gpu"] for l, _ in next(f for f in kinds["h4"] if f[0] == "p2pnode_gpu_info")[3]})
    kinds["h2"] = restrict(kinds["h4"], set(gpus[:2]))
    return kinds


def family(fams, name):
    return next((f for f in fams if f[0] == name), None)


def add_family(fams, name, help_, samples, type_="gauge"):
    f = family(fams, name)
    if f is None:
        fams.append([name, help_, type_, samples])
    else:
        f[3].extend(samples)


def set_gauge(fams, name, help_, value):
    """A family of one unlabelled series set to value (added if the capture has none)."""
    f = family(fams, name)
    if f is None:
        fams.append([name, help_, "gauge", [[{}, value]]])
    else:
        f[3] = [[{}, value]]


def set_state(fams, state):
    f = family(fams, "p2pnode_node_state")
    f[3] = [[l, 1.0 if l["state"] == state else 0.0] for l, _ in f[3]]
    f = family(fams, "p2pnode_node_reasons")
    if f:
        f[3] = [[{}, 1.0 if state != "ready" else 0.0]]


def last_pass(fams, now):
    """A failed self-test now; the last pass half a schedule ago (not yet overdue)."""
    sched = family(fams, "p2pnode_selftest_schedule_seconds")[3][0][1]
    family(fams, "p2pnode_selftest_last_success_timestamp_seconds")[3] = [[{}, float(int(now - sched / 2))]]


class Rising:
    """A counter that steps at each simulated minute by step(minute): deterministic, kept as it grows."""

    def __init__(self, start, step):
        self.values, self.step = [float(start)], step

    def at(self, minute):
        while len(self.values) <= minute:
            self.values.append(self.values[-1] + self.step(len(self.values) - 1))
        return self.values[minute]


def every(n, by=1):
    return lambda m: by if m % n == n - 1 else 0


def about(per_minute, seed):
    """Increments around per_minute (2/3 to 4/3 of it), drawn for each minute."""
    return lambda m: random.Random(seed * 100003 + m).randint(per_minute * 2 // 3, per_minute * 4 // 3)


def rising(fams, counters, name, help_, labels, start, step):
    """Adds (or makes rise) the counter series name{labels}: its value becomes a token the server fills in."""
    f = family(fams, name)
    if f is None:
        f = [name, help_, "counter", []]
        fams.append(f)
    s = next((s for s in f[3] if s[0] == labels), None)
    if s is None:
        s = [labels, 0.0]
        f[3].append(s)
    counters.append(Rising(start if start is not None else s[1], step))
    s[1] = "@C%d@" % (len(counters) - 1)


def move_counters(fams, i, role, counters):
    """With --minute: every node's reconciles and one GPU's replays rise slowly; the counter roles fast."""
    runs = family(fams, "p2pnode_reconcile_runs_total")
    if runs and runs[3]:
        rising(fams, counters, runs[0], runs[1], runs[3][0][0], None, every(5))
    gpus = sorted(s[0]["gpu"] for s in family(fams, "p2pnode_gpu_info")[3])
    replays = "p2pnode_gpu_pcie_replays_total"
    replays_help = "The GPU's own PCIe replay counter (NVML; link-level retransmissions), where sysfs may have no AER files"
    if family(fams, replays):
        rising(fams, counters, replays, replays_help, {"gpu": gpus[-1]}, None, every(7))
    alerts = []
    if role == "nvlink":
        # Every GPU's links count corrected ECC and data CRC errors as healthy H200s do (12 and 8 a
        # second); the first GPU's replay counter rises once in 3 minutes: a failing link.
        name, help_ = "p2pnode_nvlink_errors_total", "NVLink error counters of the GPU summed over its links, as NVML reports them (replay, recovery, crc_flit, crc_data, ecc_data)"
        for k, g in enumerate(gpus):
            rising(fams, counters, name, help_, {"gpu": g, "counter": "ecc_data"}, 1000 * k, about(710, i * 10 + k))
            rising(fams, counters, name, help_, {"gpu": g, "counter": "crc_data"}, 0, about(480, i * 20 + k))
            rising(fams, counters, name, help_, {"gpu": g, "counter": "replay"}, 12 if k == 0 else 0, every(3) if k == 0 else every(10**9))
        alerts.append("P2pnodeNvlinkErrors")
    elif role == "aer":
        # A bridge counts a non-fatal error every 4 minutes and a GPU correctable ones at about 20 a
        # minute (a failing riser); every other count stands.
        name, help_ = "p2pnode_pcie_aer_errors_total", "PCIe AER errors the kernel counted on a GPU, NVMe drive or bridge on their P2P paths (sysfs aer_dev_*), by type: correctable, nonfatal, fatal"
        for dev, kind, typ, start, step in (("0000:40:01.1", "bridge", "nonfatal", 0, every(4)), ("0000:40:01.1", "bridge", "correctable", 3, every(10**9)),
                                            ("0000:40:01.1", "bridge", "fatal", 0, every(10**9)), (gpus[0], "gpu", "correctable", 40, about(20, i)),
                                            (gpus[0], "gpu", "nonfatal", 0, every(10**9)), (gpus[0], "gpu", "fatal", 0, every(10**9))):
            rising(fams, counters, name, help_, {"device": dev, "kind": kind, "type": typ}, start, step)
        alerts += ["P2pnodePcieAerUncorrectable", "P2pnodePcieAerCorrectable"]
    elif role == "replays":
        rising(fams, counters, replays, replays_help, {"gpu": gpus[0]}, 1, about(20, i))
        alerts.append("P2pnodeGpuPcieReplays")
    elif role == "shedding":
        f = family(fams, "p2pnode_http_connections_rejected_total")
        rising(fams, counters, f[0], f[1], {"reason": "per_client_limit"}, None, about(50, i))
        alerts.append("P2pnodeApiShedding")
    return alerts


def variant(kinds, i, now, moving=False):
    """Node i's scrape text, the alerts it must raise, and its moving counters (--minute)."""
    kind, role = kind_of(i, moving)
    rng = random.Random(i)
    fams = json.loads(json.dumps(kinds[kind]))
    name = "gpu-node-%04d" % i
    for f in fams:
        for s in f[3]:
            l = s[0]
            if "UUID" in l and l["UUID"]:
                l["UUID"] = "GPU-%08x-%04x-0000-0000-%012x" % (i, len(l["UUID"]), zlib.crc32(l["gpu"].encode()))
            if "Hostname" in l:
                l["Hostname"] = name
    # Figures: each pair a little off its path class's expected figure (as healthy boxes measure).
    expected = {(l["path"], l["engine"], l["direction"]): v
                for l, v in (family(fams, "p2pnode_p2p_path_expected_bandwidth_bytes_per_second") or ["", "", "", []])[3]}
    threshold = {(l["path"], l["engine"], l["direction"]): v
                 for l, v in (family(fams, "p2pnode_p2p_path_threshold_bytes_per_second") or ["", "", "", []])[3]}
    bw = family(fams, "p2pnode_p2p_bandwidth_bytes_per_second")
    if bw:
        for s in bw[3]:
            key = (s[0].get("path"), s[0]["engine"], s[0]["direction"])
            s[1] = round(max((expected.get(key) or s[1]) * rng.uniform(0.94, 1.03), threshold.get(key, 0) * 1.01), -6)
    # Times: started up to 1.5 schedules ago, reconciled a minute ago, passed within the schedule.
    sched = family(fams, "p2pnode_selftest_schedule_seconds")
    uptime = rng.uniform(600, 1.5 * sched[3][0][1] if sched else 86400)  # not yet overdue without a pass
    for n, v in (("p2pnode_start_time_seconds", now - uptime), ("p2pnode_reconcile_last_timestamp_seconds", now - 60),
                 ("p2pnode_selftest_last_run_timestamp_seconds", now - 600),
                 ("p2pnode_selftest_last_success_timestamp_seconds", now - 540)):
        f = family(fams, n)
        if f:
            f[3] = [[{}, float(int(v))]]
    # The passive health pass runs every 10 s: its time is the time of the scrape.
    health = family(fams, "p2pnode_health_last_pass_timestamp_seconds")
    if health:
        health[3] = [[{}, NOW]]
    alerts = []
    pair = bw[3][0][0] if bw and bw[3] else None
    ce_write = [s for s in (bw[3] if bw else []) if s[0]["engine"] == "ce" and s[0]["direction"] == "write"]
    if role == "below" and ce_write:
        s = ce_write[0]
        s[1] = round(expected[(s[0]["path"], "ce", "write")] * 0.5, -6)
        # The node judges the cell itself: the cell below, and the count.
        add_family(fams, "p2pnode_p2p_below_threshold", "1 for a pair whose bandwidth in the last self-test was below the threshold of its path class (only those)", [[dict(s[0]), 1.0]])
        set_gauge(fams, "p2pnode_p2p_below_threshold_cells", "Bandwidth cells (pair and case) of the last self-test below the threshold of their path class", 1.0)
        set_state(fams, "degraded")
        family(fams, "p2pnode_selftest_passed")[3] = [[{}, 0.0]]
        last_pass(fams, now)
        alerts.append("P2pnodePairBelowThreshold")
    elif role == "regressed" and ce_write:
        l = ce_write[0][0]
        cells = [s for s in bw[3] if s[0]["gpu"] == l["gpu"] and s[0]["peer_gpu"] == l["peer_gpu"] and s[0]["direction"] == "write"]
        for s in cells:
            base = {k: v for k, v in s[0].items() if k != "path"}
            add_family(fams, "p2pnode_p2p_regressed", "1 for a pair whose bandwidth dropped more than the profile allows below its baseline (only those)", [[base, 1.0]])
            add_family(fams, "p2pnode_p2p_baseline_bandwidth_bytes_per_second", "The node's own baseline for a regressed pair: median of its last self-tests", [[dict(base), round(s[1] / 0.86, -6)]])
        family(fams, "p2pnode_p2p_regressed_cells")[3] = [[{}, float(len(cells))]]
        alerts.append("P2pnodePairRegressed")
    elif role == "corrupt" and pair:
        add_family(fams, "p2pnode_p2p_integrity_error_bytes", "Bytes that arrived corrupted in P2P copies from gpu to peer_gpu in the last self-test (only pairs with some; p2pnode_p2p_integrity_checked_pairs counts the pairs checked)",
                   [[{"gpu": pair["gpu"], "peer_gpu": pair["peer_gpu"]}, 4096.0]])
        set_state(fams, "degraded")
        family(fams, "p2pnode_selftest_passed")[3] = [[{}, 0.0]]
        last_pass(fams, now)
        alerts.append("P2pnodeIntegrityError")
    elif role == "overdue":
        sched = family(fams, "p2pnode_selftest_schedule_seconds")[3][0][1]
        family(fams, "p2pnode_start_time_seconds")[3] = [[{}, float(int(now - 5 * sched))]]
        family(fams, "p2pnode_selftest_last_success_timestamp_seconds")[3] = [[{}, float(int(now - 3 * sched))]]
        alerts.append("P2pnodeSelftestStale")
    elif role == "noaccess" and pair:
        # One pair without peer access: no bandwidth for it, the self-test fails, the node degrades.
        g, p = pair["gpu"], pair["peer_gpu"]
        bw[3] = [s for s in bw[3] if (s[0]["gpu"], s[0]["peer_gpu"]) != (g, p)]
        for s in family(fams, "p2pnode_p2p_access")[3]:
            if (s[0]["gpu"], s[0]["peer_gpu"]) == (g, p):
                s[1] = 0.0
        set_state(fams, "degraded")
        family(fams, "p2pnode_selftest_passed")[3] = [[{}, 0.0]]
        last_pass(fams, now)
    elif role == "busy":
        # Jobs have held the GPUs through every self-test since a clean pass 25 hours ago: not
        # degraded, P2pnodeSelftestBusy (not P2pnodeSelftestStale).
        sched = family(fams, "p2pnode_selftest_schedule_seconds")[3][0][1]
        family(fams, "p2pnode_selftest_last_success_timestamp_seconds")[3] = [[{}, float(int(now - max(2 * sched, 86400) - 3600))]]
        family(fams, "p2pnode_selftest_skipped_busy")[3] = [[{}, 1.0]]
        family(fams, "p2pnode_selftest_other_processes")[3] = [[{}, 2.0]]
        alerts.append("P2pnodeSelftestBusy")
    elif role == "healthstale" and health:
        # The health pass stopped 10 minutes before the fleet started.
        health[3] = [[{}, float(int(now - 600))]]
        alerts.append("P2pnodeHealthStale")
    elif role == "drain":
        # The driver's recovery action on one GPU is drain P2P (the health pass's finding with it).
        gpu = sorted(s[0]["gpu"] for s in family(fams, "p2pnode_gpu_info")[3])[0]
        add_family(fams, "p2pnode_gpu_recovery_action", "1 for a GPU whose driver names a recovery action other than none",
                   [[{"gpu": gpu, "action": "drain_p2p"}, 1.0]])
        add_family(fams, "p2pnode_health_finding", "1 for each finding of the last passive health pass",
                   [[{"check": "health.recovery", "device": gpu, "severity": "error"}, 1.0]])
        alerts.append("P2pnodeGpuDrainP2p")
    elif role == "driver":
        for s in family(fams, "p2pnode_driver_info")[3]:
            s[0]["userspace"] = "550.54.15"
        family(fams, "p2pnode_driver_versions_match")[3] = [[{}, 0.0]]
    elif role == "nvme":
        bar0 = family(fams, "p2pnode_nvme_bar0_ok")[3]
        bar0[0][1] = 0.0
        gpu = sorted(s[0]["gpu"] for s in family(fams, "p2pnode_gpu_info")[3])[0]
        add_family(fams, "p2pnode_nvme_doorbell_ok", "1 when the writer (gpu or host) rang the NVMe drive's doorbell and Identify came back right",
                   [[{"nvme": bar0[1][0]["nvme"], "gpu": gpu, "writer": "gpu"}, 0.0], [{"nvme": bar0[1][0]["nvme"], "gpu": gpu, "writer": "host"}, 1.0]])
        alerts.append("P2pnodeNvmeUnhealthy")  # pending: it waits 5 minutes
    # The node's worst pair and case, measured over expected (after the roles changed the figures).
    ratios = [v / expected[(l.get("path"), l["engine"], l["direction"])] for l, v in (bw[3] if bw else [])
              if expected.get((l.get("path"), l["engine"], l["direction"]))]
    if ratios:
        set_gauge(fams, "p2pnode_p2p_bandwidth_ratio_min", "The lowest measured over expected bandwidth of any pair and case in the last self-test (1.0 = as healthy boxes measure)", round(min(ratios), 3))
    # What the captured kinds bring with them (the recorded machines' own faults).
    if any(v == 0 for _, v in (family(fams, "p2pnode_kernel_module_installed") or [0, 0, 0, []])[3]):
        alerts.append("P2pnodeKernelWithoutModule")
    if any(v == 1 for _, v in (family(fams, "p2pnode_pcie_link_degraded") or [0, 0, 0, []])[3]):
        alerts.append("P2pnodePcieLinkDegraded")  # b2's link at x8; pending: it waits 10 minutes
    if any(v == 0 for _, v in (family(fams, "p2pnode_driver_versions_match") or [0, 0, 0, []])[3]):
        alerts.append("P2pnodeDriverMismatch")  # pending: it waits 5 minutes
    st = family(fams, "p2pnode_node_state")
    if any(l["state"] != "ready" and v == 1 for l, v in st[3]):
        alerts.append("P2pnodeNodeNotReady")  # pending: it waits 15 minutes
    counters = []
    if moving:
        alerts += move_counters(fams, i, role, counters)
    return render(fams), kind, role, alerts, counters


def plan(a):
    kinds = load_kinds(a.captures)
    now = time.time()
    os.makedirs(a.out, exist_ok=True)
    targets, expected, inv = [], {}, ["gpu_nodes:", "  hosts:"]
    counts = {}
    for i in range(a.nodes):
        text, kind, role, alerts, _ = variant(kinds, i, now, a.minute is not None)
        addr = "127.0.0.1:%d" % (a.base_port + i)
        name, cluster = "gpu-node-%04d" % i, "dc%d" % (1 + i % 2)
        targets.append({"labels": {"__scheme__": "http", "cluster": cluster, "node": name}, "targets": [addr]})
        inv.append('    %s: {p2pnode_listen: "%s", p2pnode_cluster: %s}' % (name, addr, cluster))
        for al in alerts:
            expected.setdefault(al, []).append(addr)
        key = kind + ("/" + role if role else "")
        c = counts.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += sum(1 for ln in text.splitlines() if not ln.startswith("#"))
    json.dump(targets, open(os.path.join(a.out, "p2pnode-targets.json"), "w"), indent=4)
    open(os.path.join(a.out, "inventory.yml"), "w").write("\n".join(inv) + "\n")
    json.dump({k: sorted(v) for k, v in expected.items()}, open(os.path.join(a.out, "expected.json"), "w"), indent=1)
    total = sum(c[1] for c in counts.values())
    print("%d nodes, %d series: %s" % (a.nodes, total,
          ", ".join("%s %d (%d series each)" % (k, c[0], c[1] // c[0]) for k, c in sorted(counts.items()))))


async def serve_all(a):
    kinds = load_kinds(a.captures)
    now = time.time()
    first, last = (int(x) for x in (a.slice or "0:%d" % a.nodes).split(":"))
    nodes = []
    for i in range(first, min(last, a.nodes)):
        text, _, _, _, counters = variant(kinds, i, now, a.minute is not None)
        # The text split at its tokens: [text, token, text, token, ..., text].
        nodes.append((TOKEN.split(text.encode()), counters))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %d\r\n\r\n"
    not_found = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"

    def body(parts, counters):
        t = time.time()
        minute = int((t - now) / a.minute) if a.minute else 0
        out = [parts[0]]
        for k in range(1, len(parts), 2):
            tok = parts[k]
            out.append(b"%d" % (t if tok == b"NOW" else counters[int(tok[1:])].at(minute)))
            out.append(parts[k + 1])
        text = b"".join(out)
        return head % len(text) + text

    def handler(parts, counters):
        async def handle(reader, writer):
            try:
                while True:
                    req = await reader.readuntil(b"\r\n\r\n")
                    writer.write(body(parts, counters) if req.split(b" ", 2)[1].startswith(b"/metrics") else not_found)
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                pass
            finally:
                writer.close()
        return handle

    servers = [await asyncio.start_server(handler(*n), "127.0.0.1", a.base_port + first + i, backlog=64) for i, n in enumerate(nodes)]
    if a.ready_file:
        open(a.ready_file, "w").write("%d\n" % len(servers))
    await asyncio.gather(*(s.serve_forever() for s in servers))


def free_ports(n):
    """The first of n consecutive ports on 127.0.0.1 that bind now, below the ephemeral range."""
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    for _ in range(50):
        base, socks = random.randrange(10000, max(10001, low - n)), []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                socks.append(s)
            return base
        except OSError:
            pass
        finally:
            for s in socks:
                s.close()
    sys.exit("fleet.py ports: no %d consecutive free ports on 127.0.0.1 in 50 tries" % n)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["plan", "serve", "ports"])
    p.add_argument("--captures")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--base-port", type=int)
    p.add_argument("--out")
    p.add_argument("--ready-file")
    p.add_argument("--slice", help="A:B: serve only nodes A to B-1")
    p.add_argument("--minute", type=float, help="seconds a simulated minute lasts: the counters move (default: they stand still)")
    a = p.parse_args()
    if a.command == "ports":
        print(free_ports(a.nodes))
        return
    if a.captures is None or a.base_port is None:
        sys.exit("fleet.py %s: --captures and --base-port are required" % a.command)
    missing = [f for f in KIND_FILES.values() if not os.path.isfile(os.path.join(a.captures, f))]
    if missing:
        sys.exit("fleet.py: %s lacks the captured scrapes %s (tests/fleet/capture.sh writes them)" % (a.captures, ", ".join(missing)))
    if a.command == "plan":
        if not a.out:
            sys.exit("fleet.py plan: --out DIR is required")
        plan(a)
    else:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        asyncio.run(serve_all(a))


if __name__ == "__main__":
    main()

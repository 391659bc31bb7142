#!/usr/bin/env python3
"""Compares p2pnode-agent documents with nvbandwidth's JSON output.

Usage: bench_compare.py RUNS.tsv
RUNS.tsv: one line per process run by bench-4gpu.sh, tab-separated:
    tool  gpus  round  wall_s  maxrss_kb  rc  output_path
tool is "agent" or "nvbandwidth". Prints, per GPU count, the time and memory of both tools and
their ratios, and per measurement the mean over every pair (or GPU) of each tool and the ratio
agent / nvbandwidth (latency: lower is better). Figures are means over the pairs of a run; the
ranges are over the rounds.
"""
import json
import statistics
import sys

# agent case and matrix key -> nvbandwidth testcase (the seven cases it is compared with)
PAIRS = [
    ("CE write", "ce_write_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_write_ce"),
    ("CE read", "ce_read_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_read_ce"),
    ("SM write", "sm_write_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_write_sm"),
    ("SM read", "sm_read_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_read_sm"),
    ("latency (ns, lower is better)", "latency", "latency_ns", "device_to_device_latency_sm"),
    ("host->device", "host_device_bandwidth", "h2d_bandwidth_gbps", "host_to_device_memcpy_ce"),
    ("device->host", "host_device_bandwidth", "d2h_bandwidth_gbps", "device_to_host_memcpy_ce"),
]
NVB_CASES = [p[3] for p in PAIRS]


def numbers(m):
    out = []
    for row in m if isinstance(m, list) else []:
        for v in row if isinstance(row, list) else [row]:
            try:
                f = float(v)
            except (TypeError, ValueError):
                continue
            if f == f and f > 0:  # skips N/A, null, the diagonal
                out.append(f)
    return out


def agent_value(doc, case, key):
    for c in doc.get("cases", []):
        if c.get("key") == case:
            v = numbers(c.get("matrices", {}).get(key))
            return statistics.mean(v) if v else None
    return None


def nvb_value(doc, name):
    for t in doc.get("nvbandwidth", {}).get("testcases", []):
        if t.get("name") == name:
            v = numbers(t.get("bandwidth_matrix"))
            return statistics.mean(v) if v else None
    return None


def load(path, tool):
    try:
        text = open(path).read()
    except OSError:
        return None
    if tool == "nvbandwidth":  # a line or two of warnings may come before the JSON
        text = text[text.find("{"):] if "{" in text else text
    try:
        return json.loads(text)
    except ValueError:
        return None


def rng(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    lo, hi = min(vals), max(vals)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)


def main():
    rows = []
    for line in open(sys.argv[1]):
        f = line.rstrip("\n").split("\t")
        if len(f) < 7 or f[0] == "tool":
            continue
        rows.append({"tool": f[0], "gpus": int(f[1]), "round": int(f[2]), "wall": float(f[3]),
                     "rss_mb": int(f[4]) * 1024 / 1e6 if f[4].isdigit() else None, "rc": f[5], "path": f[6],
                     "doc": load(f[6], f[0])})
    print("## Time and peak RSS (per GPU count; ranges over the rounds)\n")
    print("| GPUs | nvbandwidth wall s | agent wall s | time ratio | nvbandwidth RSS MB | agent RSS MB | RSS ratio |")
    print("|---|---|---|---|---|---|---|")
    for g in sorted({r["gpus"] for r in rows}):
        nv = [r for r in rows if r["gpus"] == g and r["tool"] == "nvbandwidth"]
        ag = [r for r in rows if r["gpus"] == g and r["tool"] == "agent"]
        tr, mr = [], []
        for a in ag:  # ratio within a round, against that round's nvbandwidth
            n = [x for x in nv if x["round"] == a["round"]]
            if n:
                tr.append(a["wall"] / n[0]["wall"])
                if a["rss_mb"] and n[0]["rss_mb"]:
                    mr.append(a["rss_mb"] / n[0]["rss_mb"])
        print(f"| {g} | {rng([r['wall'] for r in nv], '{:.2f}')} | {rng([r['wall'] for r in ag], '{:.2f}')} | "
              f"{rng(tr, '{:.3f}')} | {rng([r['rss_mb'] for r in nv], '{:.0f}')} | "
              f"{rng([r['rss_mb'] for r in ag], '{:.1f}')} | {rng(mr, '{:.3f}')} |")
    for g in sorted({r["gpus"] for r in rows}):
        print(f"\n## Measurements at {g} GPU(s): mean over pairs (GPUs), ranges over the rounds\n")
        print("| measurement | nvbandwidth | agent | ratio agent / nvbandwidth |")
        print("|---|---|---|---|")
        for label, case, key, nvcase in PAIRS:
            nvv, agv, ratios = [], [], []
            for a in [r for r in rows if r["gpus"] == g and r["tool"] == "agent" and r["doc"]]:
                av = agent_value(a["doc"], case, key)
                agv.append(av)
                for n in [r for r in rows if r["gpus"] == g and r["tool"] == "nvbandwidth" and r["doc"]
                          and r["round"] == a["round"]]:
                    nvx = nvb_value(n["doc"], nvcase)
                    if av is not None and nvx:
                        ratios.append(av / nvx)
            for n in [r for r in rows if r["gpus"] == g and r["tool"] == "nvbandwidth" and r["doc"]]:
                nvv.append(nvb_value(n["doc"], nvcase))
            if any(v is not None for v in agv + nvv):
                print(f"| {label} | {rng(nvv, '{:.2f}')} | {rng(agv, '{:.2f}')} | {rng(ratios, '{:.4f}')} |")
    bad = [r for r in rows if r["tool"] == "agent" and r["doc"] and r["doc"].get("summary", {}).get("integrity_bad_bytes", 0)]
    print(f"\nagent runs with bad bytes: {len(bad)}; agent exit codes: "
          f"{sorted({r['rc'] for r in rows if r['tool'] == 'agent'})}; nvbandwidth exit codes: "
          f"{sorted({r['rc'] for r in rows if r['tool'] == 'nvbandwidth'})}")


if __name__ == "__main__":
    main()

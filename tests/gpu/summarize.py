#!/usr/bin/env python3
"""Print a short summary of p2pnode-agent JSON documents; optionally compare two (serial vs rounds).

usage: summarize.py RESULT.json [OTHER.json]
With two files, prints every pair's bandwidth in both and flags differences above 3%.
"""
import json
import sys

BW_CASES = ["ce_write_bandwidth", "ce_read_bandwidth", "ce_bidir_bandwidth", "sm_write_bandwidth",
            "sm_read_bandwidth"]


def load(path):
    with open(path) as f:
        return json.load(f)


def cells(doc, key, measure):
    out = {}
    for c in doc["cases"]:
        if c["key"] != key:
            continue
        for cell in c["cells"]:
            if cell["status"] == "waived" or measure not in cell:
                continue
            v = cell[measure]
            out[(cell.get("src", cell.get("gpu")), cell.get("dst"))] = v["median"] if isinstance(v, dict) else v
    return out


def summary(path):
    d = load(path)
    print(f"== {path}: status={d['status']} exit={d['exit_code']} duration_s={d['duration_s']} "
          f"peak_rss_MB={d['host']['peak_rss_bytes'] / 1e6:.1f} mode={d['config']['mode']} "
          f"gpus={len(d['devices'])} seed={d['config']['seed']}")
    if d.get("error"):
        print("   error:", d["error"])
    for c in d["cases"]:
        line = f"   {c['key']:<24} {c['status']:<7} {c['duration_s']:.3f}s steps={c['steps']}"
        for k, m in c["matrices"].items():
            vals = [v for row in m for v in (row if isinstance(row, list) else [row]) if v is not None]
            if vals:
                line += f"  {k}: min={min(vals):.2f} max={max(vals):.2f}"
        print(line)
        for cell in c["cells"]:
            if cell["status"] != "passed":
                print(f"      {cell['status']} {cell.get('src', cell.get('gpu'))}->{cell.get('dst')}: "
                      f"{cell.get('reason', '')}")
            for m in ("bandwidth_gbps", "latency_ns", "h2d_bandwidth_gbps", "d2h_bandwidth_gbps"):
                if m in cell and cell[m]["spread_pct"] > 3.0:
                    print(f"      spread {cell.get('src', cell.get('gpu'))}->{cell.get('dst')} {m}: "
                          f"{cell[m]['spread_pct']:.2f}% (min {cell[m]['min']:.2f} max {cell[m]['max']:.2f})")
    s = d["summary"]
    print(f"   integrity: checked {s['integrity_checked_bytes']} bytes, bad {s['integrity_bad_bytes']}")
    return d


def compare(a_path, b_path):
    a, b = load(a_path), load(b_path)
    worst = 0.0
    over = 0
    print(f"== compare {a_path} ({a['config']['mode']}) vs {b_path} ({b['config']['mode']})")
    for key in BW_CASES:
        ca, cb = cells(a, key, "bandwidth_gbps"), cells(b, key, "bandwidth_gbps")
        for pair in sorted(ca):
            if pair not in cb:
                continue
            diff = (cb[pair] - ca[pair]) / ca[pair] * 100.0
            worst = max(worst, abs(diff))
            flag = " >3%" if abs(diff) > 3.0 else ""
            over += 1 if flag else 0
            print(f"   {key:<20} {pair[0]}->{pair[1]}  {ca[pair]:9.2f}  {cb[pair]:9.2f}  {diff:+6.2f}%{flag}")
    print(f"   largest difference {worst:.2f}%, pairs over 3%: {over}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summary(p)
    if len(sys.argv) == 3:
        compare(sys.argv[1], sys.argv[2])

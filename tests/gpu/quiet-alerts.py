#!/usr/bin/env python3
"""The alert rules on what a quiet box exported (run-quiet-box.sh's metrics-series.txt): writes a
promtool rule test whose input is every scraped series at its 15 s interval and which expects no
alert of any rule at every minute, then runs `promtool test rules` on it.
usage: quiet-alerts.py metrics-series.txt [rules.yml]"""
import re, subprocess, sys, tempfile, os

src = sys.argv[1]
rules = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "prometheus/p2pnode-alerts.yml")
scrapes, cur = [], None
for line in open(src):
    line = line.rstrip("\n")
    if line.startswith("# t="):
        cur = {}
        scrapes.append(cur)
    elif cur is not None and line:
        name, value = line.rsplit(" ", 1)
        cur[name] = value
names = sorted({n for s in scrapes for n in s})
series = []
for n in names:
    labels = n[n.index("{") + 1:-1] if "{" in n else ""
    metric = n.split("{")[0]
    sel = metric + "{" + ('job="p2pnode",instance="box:9470"' + ("," + labels if labels else "")) + "}"
    series.append((sel, " ".join(s.get(n, "_") for s in scrapes)))
alerts = sorted(set(re.findall(r"^\s+- alert: (\S+)", open(rules).read(), re.M)))
minutes = max(1, len(scrapes) * 15 // 60)
with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
    f.write(f"rule_files: [{rules}]\nevaluation_interval: 1m\ntests:\n  - interval: 15s\n    input_series:\n")
    for sel, vals in series:
        f.write(f"      - series: '{sel}'\n        values: '{vals}'\n")
    f.write("    alert_rule_test:\n")
    for m in range(1, minutes + 1):
        for a in alerts:
            if a in ("P2pnodeDown", "P2pnodeHealthStale") or a.startswith("P2pnodeSelftest"): continue
            f.write(f"      - {{eval_time: {m}m, alertname: {a}, exp_alerts: []}}\n")
    path = f.name
print(f"{len(scrapes)} scrapes, {len(series)} series, {minutes} minutes, {len(alerts)} alert rules -> {path}")
sys.exit(subprocess.call(["promtool", "test", "rules", path]))

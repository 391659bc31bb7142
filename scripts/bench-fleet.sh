#!/bin/bash
# What p2pnode costs a fleet's Prometheus, on this machine: a simulated fleet (tests/fleet: scrapes
# of real daemons on four recorded machines, 1,000 variants served on loopback by one process), the
# file_sd targets and prometheus.yml written by the real ansible/prometheus.yml from an inventory of
# 100, then 1,000 nodes, and a real Prometheus (Debian's) with the alert and recording rules, in one
# run. Measured at 100 and at 1,000 nodes, after SETTLE_S of scraping: Prometheus' RSS, head series
# and samples ingested per second, the rule groups' evaluation time (/api/v1/rules), every dashboard
# query's latency p50/p99 over ROUNDS runs (/api/v1/query; the fleet dashboard for every cluster,
# the node dashboard with one node selected, as its drill-down opens it), and the nodes each alert
# names against the nodes the fleet made faulty. First: series per node for 2, 4, 8 GPUs, default
# and metrics.detail full (and before this layout, with BEFORE=path/to/an-older/p2pnode).
# usage: scripts/bench-fleet.sh path/to/p2pnode [NODES_SMALL NODES_LARGE]
#        env: SETTLE_S (default 130: four 30 s scrapes and a 2-minute rule group's evaluation; then 30 s to measure ingest), ROUNDS (default 50), BEFORE
set -uo pipefail
# stdin from /dev/null: ansible-playbook refuses a non-blocking stdin ("Ansible requires blocking IO"),
# which another program sharing ctest's stdin may leave behind.
exec </dev/null
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode [NODES_SMALL NODES_LARGE]}")
SMALL=${2:-100}
LARGE=${3:-1000}
SETTLE_S=${SETTLE_S:-130}
ROUNDS=${ROUNDS:-50}
SRC=$(cd "$(dirname "$0")/.." && pwd)
for t in prometheus promtool ansible-playbook curl python3; do
  command -v $t >/dev/null || { echo "$t is not installed (scripts/install-deps.sh test installs it)"; exit 1; }
done
WORK=$(mktemp -d /tmp/p2pnode-bench-fleet.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# 1. series per node
log "capturing real daemons' scrapes (default, metrics.detail full${BEFORE:+, and $BEFORE})"
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/cap" || exit 1
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/cap-full" $'metrics:\n  detail: full\n' || exit 1
[ -z "${BEFORE:-}" ] || bash "$SRC/tests/fleet/capture.sh" "$(readlink -f "$BEFORE")" "$WORK/cap-before" || exit 1
python3 - "$SRC/tests/fleet" "$WORK" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import fleet
work = sys.argv[2]
cols = [(c, os.path.join(work, d)) for c, d in (("before", "cap-before"), ("default", "cap"), ("metrics.detail full", "cap-full"))
        if os.path.isdir(os.path.join(work, d))]
counts = {c: {k: sum(len(f[3]) for f in fams) for k, fams in fleet.load_kinds(d).items()} for c, d in cols}
print("\n| GPUs (machine) | " + " | ".join(c for c, _ in cols) + " |\n|---|" + "---|" * len(cols))
for k, what in (("h2", "2 (the 4x H200 node, two of its GPUs)"), ("h4", "4 (4x H200, NVLink)"), ("h8", "8 (8x RTX 4090, 4 NVMe)"),
                ("f6", "6 (tinybox, failed: no self-test)"), ("b2", "2 (link at x8, blocked: no self-test)")):
    print("| %s | %s |" % (what, " | ".join("{:,}".format(counts[c][k]) for c, _ in cols)))
PY

# 2. the fleet, its targets through the real playbook, Prometheus
BASE=$(python3 "$SRC/tests/fleet/fleet.py" ports --nodes "$LARGE") || exit 1
python3 "$SRC/tests/fleet/fleet.py" plan --captures "$WORK/cap" --nodes "$LARGE" --base-port "$BASE" --out "$WORK/fleet" >&2 || exit 1
python3 "$SRC/tests/fleet/fleet.py" serve --captures "$WORK/cap" --nodes "$LARGE" --base-port "$BASE" --ready-file "$WORK/fleet/ready" \
  > "$WORK/fleet.log" 2>&1 &
FLEET_PID=$!
PIDS+=($FLEET_PID)
for i in $(seq 300); do [ -s "$WORK/fleet/ready" ] && break; sleep 0.2; done
[ -s "$WORK/fleet/ready" ] || { cat "$WORK/fleet.log"; exit 1; }
mkdir -p "$WORK/prom"
playbook() {  # N: the inventory's first N nodes through ansible/prometheus.yml into $WORK/prom
  head -n $((2 + $1)) "$WORK/fleet/inventory.yml" > "$WORK/inventory-$1.yml"
  local t0=$(date +%s.%N)
  ansible-playbook -i "$WORK/inventory-$1.yml" "$SRC/ansible/prometheus.yml" -e p2pnode_prometheus_dir="$WORK/prom" \
    > "$WORK/playbook-$1.log" 2>&1 || { tail -20 "$WORK/playbook-$1.log" >&2; exit 1; }
  log "ansible/prometheus.yml for $1 nodes: $(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))") s"
}
playbook "$SMALL"
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PROM="http://127.0.0.1:$PROM_PORT"
prometheus --config.file="$WORK/prom/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" --web.listen-address="127.0.0.1:$PROM_PORT" \
  > "$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
PIDS+=($PROM_PID)

measure() {  # N
  log "$1 nodes: waiting for every target, then ${SETTLE_S} s of scraping"
  python3 - "$PROM" "$1" <<'PY' || exit 1
import json, sys, time, urllib.parse, urllib.request
prom, n = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 300
while time.time() < deadline:
    try:
        r = json.load(urllib.request.urlopen(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": 'count(up{job="p2pnode"} == 1)'})))
        if r["data"]["result"] and int(r["data"]["result"][0]["value"][1]) == n: sys.exit(0)
    except Exception:
        pass
    time.sleep(2)
sys.exit("not every target is up after 300 s")
PY
  sleep "$SETTLE_S"
  python3 - "$PROM" "$1" "$PROM_PID" "$FLEET_PID" "$SRC" "$ROUNDS" "$WORK/fleet/expected.json" "$BASE" <<'PY'
import json, os, statistics, sys, time, urllib.parse, urllib.request
prom, n, pid, fleet_pid, src, rounds, expected_file, base = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7], int(sys.argv[8])
def q(expr):
    return json.load(urllib.request.urlopen(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))["data"]["result"]
def one(expr):
    r = q(expr)
    return float(r[0]["value"][1]) if r else float("nan")
def rss(p):
    for line in open("/proc/%s/status" % p):
        if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024
def own(name):  # Prometheus' own metric (the generated prometheus.yml does not scrape Prometheus)
    total = 0.0
    for line in urllib.request.urlopen(prom + "/metrics").read().decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"): total += float(line.rsplit(" ", 1)[1])
    return total
a0, t0 = own("prometheus_tsdb_head_samples_appended_total"), time.time()
time.sleep(30)
ingest = (own("prometheus_tsdb_head_samples_appended_total") - a0) / (time.time() - t0)
rss_b, series = rss(pid), own("prometheus_tsdb_head_series")
scraped = one('sum(scrape_samples_scraped{job="p2pnode"})')
scrape_ms = one('quantile(0.99, scrape_duration_seconds{job="p2pnode"})') * 1000
print("\n### %d nodes\n" % n)
print("Prometheus RSS %.0f MiB (%.0f KiB per node), %s head series, %s samples per scrape round (%.0f per node), ingest %.0f samples/s, "
      "scrape p99 %.1f ms; the fleet's server %.0f MiB"
      % (rss_b / 2**20, rss_b / 1024 / n, "{:,}".format(int(series)), "{:,}".format(int(scraped)), scraped / n, ingest, scrape_ms, rss(fleet_pid) / 2**20))
groups = json.load(urllib.request.urlopen(prom + "/api/v1/rules"))["data"]["groups"]
print("\nrule group evaluation time: " + ", ".join("%s %.1f ms (%s)" % (g["name"], g["evaluationTime"] * 1000,
      ", ".join("%s %.1f" % (r.get("name"), r["evaluationTime"] * 1000) for r in g["rules"] if r["evaluationTime"] > 0.002) or "every rule < 2 ms")
      for g in groups))
# Every dashboard query: the fleet dashboard for all clusters, the node dashboard with one 8-GPU node.
node = "127.0.0.1:%d" % base
rows = []
for f, inst in (("p2pnode-fleet.json", ".*"), ("p2pnode-cluster.json", node)):
    d = json.load(open(os.path.join(src, "grafana", f)))
    for p in d["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$cluster", ".*").replace('=~"$instance"', '="%s"' % inst if inst != ".*" else '=~".*"')
            times, res = [], 0
            for _ in range(rounds):
                t0 = time.perf_counter()
                res = len(q(expr))
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            rows.append((f.replace(".json", ""), p["title"] + ("" if len(p["targets"]) == 1 else " " + t["refId"]), res,
                         statistics.median(times), times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]))
print("\n%d runs of each query; load average during them: %s (this machine's 2 cores are shared)" % (rounds, open("/proc/loadavg").read().split()[0]))
print("\n| dashboard | panel | series | p50 ms | p99 ms |\n|---|---|---|---|---|")
for r in rows: print("| %s | %s | %d | %.1f | %.1f |" % r)
worst = max(rows, key=lambda r: r[4])
print("\nslowest query: %s / %s, p99 %.1f ms (goal <= 100 ms): %s" % (worst[0], worst[1], worst[4], "met" if worst[4] <= 100 else "NOT met"))
# Alerts against the nodes the fleet made faulty (those among the first n).
exp = {k: {i for i in v if int(i.rsplit(":", 1)[1]) - base < n} for k, v in json.load(open(expected_file)).items()}
got = {}  # the alerts Prometheus holds (and sends to Alertmanager), pending or firing
for a in json.load(urllib.request.urlopen(prom + "/api/v1/alerts"))["data"]["alerts"]:
    got.setdefault(a["labels"]["alertname"], set()).add(a["labels"]["instance"])
bad = [k for k in set(exp) | set(got) if exp.get(k, set()) != got.get(k, set())]
print("\nalerts: " + ", ".join("%s %d" % (k, len(got.get(k, ()))) for k in sorted(set(exp) | set(got))) +
      (" - every one names exactly the faulty nodes" if not bad else " - WRONG: %s" % ", ".join(
          "%s missing %d extra %d" % (k, len(exp.get(k, set()) - got.get(k, set())), len(got.get(k, set()) - exp.get(k, set()))) for k in bad)))
PY
}
measure "$SMALL"
playbook "$LARGE"
measure "$LARGE"

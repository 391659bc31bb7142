#!/bin/bash
# The dashboards (grafana/*.json) against a simulated fleet on loopback: real daemons on four
# recorded machines (tests/fleet/capture.sh) give the scrapes, tests/fleet/fleet.py serves 25
# variants of them (2, 4, 6 and 8 GPUs; nodes degraded, regressed, blocked, failed, overdue, …) and a
# real Prometheus (Debian's) scrapes them through file_sd, as ansible/prometheus.yml writes it, with
# the alert and recording rules loaded. Checked: each dashboard's structure (unique ids, a 24-column
# grid, every query on the ${datasource} variable, the cluster variable), every query's PromQL
# (promtool check rules), every p2pnode_* name it uses exists in a real scrape, every query returns
# data from the fleet, a few panels' exact counts, and every alert names exactly the nodes the fleet
# made faulty. Then scripts/render_dashboards.py (which draws docs/images/p2pnode-*.png) draws both
# dashboards from the fleet, every query answered, each PNG under 300 KB.
# Usage: bash tests/grafana/test_dashboard.sh path/to/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
NODES=25
require prometheus promtool curl python3
# Debian's interpreter, which python3-matplotlib is installed for (another python3 may come first on PATH).
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || { echo "FAIL: python3-matplotlib is not installed (scripts/install-deps.sh test)"; exit 1; }
WORK=$(temp_dir grafana)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
wait_until() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.2; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 1. structure, and the queries as recording rules for promtool
if python3 - "$WORK/rules.yml" "$WORK/queries.tsv" "$SRC"/grafana/*.json > "$WORK/structure.out" 2>&1 <<'PY'
import json, os, sys
problems, rules, queries = [], [], []
for f in sys.argv[3:]:
    d, name = json.load(open(f)), os.path.basename(f)
    for k in ("uid", "title", "panels", "templating", "schemaVersion"):
        if k not in d: problems.append("%s: missing top-level key %s" % (name, k))
    names = {v["name"] for v in d["templating"]["list"]}
    if not {"datasource", "cluster"} <= names: problems.append("%s: templating lacks datasource/cluster: %s" % (name, names))
    ids = [p["id"] for p in d["panels"]]
    if len(ids) != len(set(ids)): problems.append("%s: panel ids repeat: %s" % (name, ids))
    for p in d["panels"]:
        g = p["gridPos"]
        if g["x"] < 0 or g["x"] + g["w"] > 24: problems.append("%s: panel %d leaves the 24-column grid" % (name, p["id"]))
        if p["type"] == "row": continue
        if not p.get("description"): problems.append("%s: panel %d has no description" % (name, p["id"]))
        if not p.get("targets"): problems.append("%s: panel %d has no query" % (name, p["id"]))
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}": problems.append("%s: panel %d query not on ${datasource}" % (name, p["id"]))
            expr = t["expr"].replace("$instance", ".*").replace("$cluster", ".*")
            uid = d["uid"].replace("-", "_")
            rules.append("      - record: dashboard:%s_panel%d_%s\n        expr: %s" % (uid, p["id"], t["refId"], json.dumps(expr)))
            queries.append("%s\t%d\t%s\t%s" % (d["uid"], p["id"], p["title"], expr))
open(sys.argv[1], "w").write("groups:\n  - name: dashboard\n    rules:\n" + "\n".join(rules) + "\n")
open(sys.argv[2], "w").write("\n".join(queries) + "\n")
print("%d dashboards, %d queries" % (len(sys.argv) - 3, len(queries)))
for p in problems: print("problem:", p)
sys.exit(1 if problems else 0)
PY
then pass "structure: $(cat "$WORK/structure.out")"; else fail "structure"; cat "$WORK/structure.out"; fi
promtool check rules "$WORK/rules.yml" > "$WORK/promtool.out" 2>&1 && pass "promtool check rules: every query is valid PromQL" \
  || { fail "promtool check rules"; cat "$WORK/promtool.out"; }

# 2. the fleet: scrapes of real daemons, 25 variants served on consecutive ports
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/captures" || { fail "capturing the daemons' scrapes"; exit 1; }
BASE=$(python3 "$SRC/tests/fleet/fleet.py" ports --nodes $NODES) || { fail "$NODES consecutive free ports"; exit 1; }
planned=$(python3 "$SRC/tests/fleet/fleet.py" plan --captures "$WORK/captures" --nodes $NODES --base-port "$BASE" --out "$WORK/fleet") \
  && pass "fleet: $planned" || { fail "fleet.py plan: $planned"; exit 1; }
python3 "$SRC/tests/fleet/fleet.py" serve --captures "$WORK/captures" --nodes $NODES --base-port "$BASE" --ready-file "$WORK/fleet/ready" \
  > "$WORK/fleet.log" 2>&1 &
PIDS+=($!)
wait_until 30 test -s "$WORK/fleet/ready" || { fail "the fleet did not listen"; cat "$WORK/fleet.log"; exit 1; }
exporters=$(printf '%s,' "$SRC"/daemon/engine/*metrics*.cpp)  # every file that registers a family
missing=$(python3 - "${exporters%,}" "$WORK"/captures/*.prom "$SRC"/grafana/*.json <<'PY'
import json, re, sys
used, have = set(), set()
for f in sys.argv[2:]:
    if f.endswith(".prom"):
        have |= set(re.findall(r"^# TYPE (p2pnode_[a-z0-9_]+)", open(f).read(), re.M))
        continue
    for p in json.load(open(f))["panels"]:
        for t in p.get("targets", []): used |= set(re.findall(r"\bp2pnode_[a-z0-9_]+", t["expr"]))
have |= {h + "_total" for h in have}
# Families the captured machines cannot have (errors on clean self-tests, regressions, cells below
# their threshold, a doorbell test, which no recorded machine's profile asks for): the name must be
# one the daemon registers;
# their exposition is asserted in tests/unit (metrics_test, baseline_test, doorbell_test).
conditional = {"p2pnode_nvme_doorbell_ok", "p2pnode_p2p_integrity_error_bytes", "p2pnode_p2p_regressed", "p2pnode_p2p_below_threshold",
               "p2pnode_health_finding", "p2pnode_gpu_recovery_action"}  # a finding, a recovery action
code = "".join(open(f).read() for f in sys.argv[1].split(","))
have |= {n for n in conditional if '"%s"' % n in code}
print(" ".join(sorted(used - have)))
PY
)
[ -z "$missing" ] && pass "every p2pnode_* name the dashboards use is in a real scrape (or registered by the daemon)" || fail "not in the scrapes: $missing"

# 3. a real Prometheus scraping the fleet every second, rules every second; every panel's query
PROM_PORT=$(free_port)
# The shipped rules, their groups' 2-minute intervals cut to the test's second.
for r in p2pnode-alerts.yml p2pnode-rules.yml; do sed 's/^    interval: 2m$/    interval: 1s/' "$SRC/prometheus/$r" > "$WORK/fleet/$r"; done
grep -q 'interval: 2m' "$WORK"/fleet/*.yml && { fail "a rule group's interval was not cut to 1s"; exit 1; }
cat > "$WORK/fleet/prometheus.yml" <<Y
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [p2pnode-alerts.yml, p2pnode-rules.yml]
scrape_configs:
  - job_name: p2pnode
    file_sd_configs: [{files: [p2pnode-targets.json]}]
Y
prometheus --config.file="$WORK/fleet/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"
q() { curl -sf "$PROM/api/v1/query" --data-urlencode "query=$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'; }
all_up() { [ "$(q 'count(up{job="p2pnode"} == 1)')" = "$NODES" ]; }
wait_until 60 all_up && pass "Prometheus scrapes all $NODES nodes" || { fail "Prometheus does not scrape the fleet: $(q 'count(up == 1)') up"; tail -20 "$WORK/prometheus.log"; }
sleep 3  # a few samples, so increase() has two points and the rules have run
# One process for every query (a curl and a python per query cost ~0.2 s each on this box).
python3 - "$PROM" "$WORK/queries.tsv" "$WORK/counts" <<'PY' || fail "a dashboard query returned no data or an error"
import json, sys, urllib.parse, urllib.request
prom, bad, out = sys.argv[1], 0, []
for line in open(sys.argv[2]):
    if not line.strip(): continue
    uid, pid, title, expr = line.rstrip("\n").split("\t")
    try:
        r = json.load(urllib.request.urlopen(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        n = len(r["data"]["result"])
    except Exception as e:
        n = "error %s" % e
    print("   %s panel %s (%s): %s series" % (uid, pid, title, n) if n else "FAIL %s panel %s (%s): no data from the fleet" % (uid, pid, title))
    bad += not isinstance(n, int) or n == 0
    out.append("%s %s %s" % (uid, pid, n))
open(sys.argv[3], "w").write("\n".join(out) + "\n")
sys.exit(1 if bad else 0)
PY
[ "$FAILS" -eq 0 ] && pass "every query of every dashboard returns data from the fleet"
count() { awk -v u="$1" -v i="$2" '$1 == u && $2 == i {print $3}' "$WORK/counts"; }
title_id() { python3 -c 'import json,sys; print([p["id"] for p in json.load(open(sys.argv[1]))["panels"] if p["title"] == sys.argv[2]][0])' "$SRC/grafana/$1.json" "$2"; }
expect() {  # DASHBOARD TITLE WANTED
  local n; n=$(count "${1#p2pnode-}" "$(title_id "$1" "$2")")
  n=$(count "$([ "$1" = p2pnode-fleet ] && echo p2pnode-fleet || echo p2pnode-cluster)" "$(title_id "$1" "$2")")
  [ "$n" = "$3" ] && pass "$1: $2: $3" || fail "$1: $2: $n series, wanted $3"
}
X=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["P2pnodeNodeNotReady"].__len__())' "$WORK/fleet/expected.json")
[ "$(q 'sum(p2pnode_node_state{state="ready"})')" = "$((NODES - X))" ] && pass "$((NODES - X)) nodes ready, $X not" || fail "nodes ready: $(q 'sum(p2pnode_node_state{state="ready"})')"
expect p2pnode-fleet "Worst pair ratio per node" 20
expect p2pnode-fleet "Nodes not ready" "$X"
# The state panels read the recording rule: as many states as the scrapes have at 1.
expect p2pnode-fleet "Nodes by state" "$(q 'count(count by (state) (p2pnode_node_state == 1))')"
expect p2pnode-fleet "Nodes with regressions" 1
expect p2pnode-fleet "Nodes with corrupted bytes" 1
expect p2pnode-fleet "Self-tests overdue" 2  # the overdue node and the busy one
expect p2pnode-fleet "Kernels without the module" 1
# One 8-GPU node's matrices: 56 ordered pairs (the node dashboard with that node selected).
H8="127.0.0.1:$BASE"
for m in 'p2pnode_p2p_bandwidth_bytes_per_second{instance="'$H8'", engine="ce", direction="write"}' \
         'p2pnode_p2p_bandwidth_bytes_per_second{instance="'$H8'", engine="ce", direction="write"} / on(instance, job, path, engine, direction) group_left() p2pnode_p2p_path_expected_bandwidth_bytes_per_second' \
         'p2pnode_p2p_latency_seconds{instance="'$H8'"}' 'p2pnode_p2p_link_info{instance="'$H8'"}'; do
  [ "$(q "count($m)")" = 56 ] && pass "8-GPU node matrix: 56 pairs: ${m:0:60}…" || fail "8-GPU node matrix $m: $(q "count($m)")"
done
# The pictures' renderer over this fleet: it exits 1 when a query fails.
if /usr/bin/python3 "$SRC/scripts/render_dashboards.py" --prom "$PROM" --out "$WORK" --caption "tests/grafana" \
     "$SRC/grafana/p2pnode-fleet.json" "$SRC/grafana/p2pnode-cluster.json:instance=$H8" > "$WORK/render.out" 2>&1 &&
   [ "$(find "$WORK" -maxdepth 1 -name 'p2pnode-*.png' -size -300k | wc -l)" = 2 ]; then
  pass "scripts/render_dashboards.py draws both dashboards from the fleet, each PNG under 300 KB"
else fail "scripts/render_dashboards.py"; cat "$WORK/render.out"; ls -l "$WORK"/*.png; fi

# 4. every alert names exactly the nodes the fleet made faulty (pending or firing)
if python3 - "$PROM" "$WORK/fleet/expected.json" <<'PY'
import json, sys, urllib.parse, urllib.request
prom, expected = sys.argv[1], json.load(open(sys.argv[2]))
got = {}  # the alerts Prometheus holds (and sends to Alertmanager), pending or firing
for a in json.load(urllib.request.urlopen(prom + "/api/v1/alerts"))["data"]["alerts"]:
    got.setdefault(a["labels"]["alertname"], set()).add(a["labels"]["instance"])
bad = 0
for name in sorted(set(got) | set(expected)):
    g, e = got.get(name, set()), set(expected.get(name, []))
    print("%s   %s: %d node(s)%s" % ("ok " if g == e else "FAIL", name, len(g), "" if g == e else ", missing %s, extra %s" % (sorted(e - g), sorted(g - e))))
    bad += g != e
sys.exit(1 if bad else 0)
PY
then pass "every alert names the right nodes"; else fail "alerts"; fi
finish

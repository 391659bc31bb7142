#!/bin/bash
# grafana/p2pnode-cluster.json against the real thing: a real Prometheus (Debian's) scrapes a real
# `p2pnode serve` holding an 8-GPU self-test result (the 8x RTX 4090 fixture), then every panel's
# query runs through Prometheus's HTTP API. Checked: the dashboard's structure (unique ids, a
# 24-column grid, every query on the ${datasource} variable), every query's PromQL (promtool check
# rules), every p2pnode_* name it uses exists in the daemon's scrape, every query succeeds, and the
# panels that must show something on a healthy 8-GPU node do (1 node ready, 56 pairs, …).
# Usage: bash tests/grafana/test_dashboard.sh path/to/p2pnode     (exit 77: a tool is missing)
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DASH="$SRC/grafana/p2pnode-cluster.json"
for t in prometheus promtool curl python3; do
  command -v $t >/dev/null || { echo "SKIP: $t is not installed (scripts/install-deps.sh test installs it)"; exit 77; }
done
WORK=$(mktemp -d /tmp/p2pnode-grafana.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
FAILS=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
wait_until() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.2; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 1. structure, and the queries as recording rules for promtool
if python3 - "$DASH" "$WORK/rules.yml" "$WORK/queries.tsv" > "$WORK/structure.out" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
problems = []
for k in ("uid", "title", "panels", "templating", "schemaVersion"):
    if k not in d: problems.append("missing top-level key " + k)
names = {v["name"] for v in d["templating"]["list"]}
if not {"datasource", "instance"} <= names: problems.append("templating lacks datasource/instance: %s" % names)
ids = [p["id"] for p in d["panels"]]
if len(ids) != len(set(ids)): problems.append("panel ids repeat: %s" % ids)
rules, queries = [], []
for p in d["panels"]:
    g = p["gridPos"]
    if g["x"] < 0 or g["x"] + g["w"] > 24: problems.append("panel %d leaves the 24-column grid" % p["id"])
    if p["type"] == "row": continue
    if not p.get("description"): problems.append("panel %d has no description" % p["id"])
    for t in p.get("targets", []):
        if t.get("datasource", {}).get("uid") != "${datasource}": problems.append("panel %d query not on ${datasource}" % p["id"])
        expr = t["expr"].replace("$instance", ".*")
        rules.append("      - record: p2pnode_dashboard:panel%d_%s\n        expr: %s" % (p["id"], t["refId"], json.dumps(expr)))
        queries.append("%d\t%s\t%s" % (p["id"], p["title"], expr))
    if not p.get("targets"): problems.append("panel %d has no query" % p["id"])
open(sys.argv[2], "w").write("groups:\n  - name: dashboard\n    rules:\n" + "\n".join(rules) + "\n")
open(sys.argv[3], "w").write("\n".join(queries) + "\n")
print("%d panels, %d queries" % (len(d["panels"]), len(queries)))
for p in problems: print("problem:", p)
sys.exit(1 if problems else 0)
PY
then pass "structure: $(cat "$WORK/structure.out")"; else fail "structure"; cat "$WORK/structure.out"; fi
promtool check rules "$WORK/rules.yml" > "$WORK/promtool.out" 2>&1 && pass "promtool check rules: every query is valid PromQL" \
  || { fail "promtool check rules"; cat "$WORK/promtool.out"; }

# 2. a node: the 8x 4090 fixture with a synthesised 8-GPU self-test result, as scripts/bench-serve.sh
source "$SRC/tests/serve/eight_gpu_node.sh"
rc=0; start_eight_gpu_node "$BIN" "$SRC" "$WORK" || rc=$?
PIDS+=($NODE_PID)
[ $rc -eq 0 ] || { fail "the 8-GPU node did not come up"; exit 1; }
P2P=$NODE_ADDR
curl -sf "http://$P2P/metrics" > "$WORK/scrape.txt"
missing=$(python3 - "$DASH" "$WORK/scrape.txt" "$SRC/daemon/engine/metrics.cpp" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
used = set()
for p in d["panels"]:
    for t in p.get("targets", []): used |= set(re.findall(r"\bp2pnode_[a-z0-9_]+", t["expr"]))
have = set(re.findall(r"^# TYPE (p2pnode_[a-z0-9_]+)", open(sys.argv[2]).read(), re.M))
have |= {h + "_total" for h in have}
# Families this 8-GPU node cannot have (its profile pairs no NVMe drive with a GPU, so no doorbell
# test runs): the name must at least be the one the daemon registers; its exposition line is
# asserted in tests/unit/judge/doorbell_test.cpp.
conditional = {"p2pnode_nvme_doorbell_ok"}
code = open(sys.argv[3]).read()
have |= {n for n in conditional if '"%s"' % n in code}
print(" ".join(sorted(used - have)))
PY
)
[ -z "$missing" ] && pass "every p2pnode_* name the dashboard uses is in the daemon's scrape" || fail "not in the scrape: $missing"

# 3. a real Prometheus scraping it every second; every panel's query through its HTTP API
PROM_PORT=$(free_port)
cat > "$WORK/prometheus.yml" <<Y
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: p2pnode
    static_configs: [{targets: ["$P2P"]}]
Y
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"
scraped() { curl -sf "$PROM/api/v1/query" --data-urlencode 'query=p2pnode_info' | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["data"]["result"] else 1)'; }
wait_until 60 scraped && pass "Prometheus scraped the daemon" || { fail "Prometheus did not scrape the daemon"; tail -20 "$WORK/prometheus.log"; }
sleep 3  # a few samples, so increase() has two points
while IFS=$'\t' read -r id title expr; do
  [ -n "$id" ] || continue
  n=$(curl -sf "$PROM/api/v1/query" --data-urlencode "query=$expr" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(len(r["data"]["result"]) if r.get("status") == "success" else "error " + str(r))')
  case "$n" in [0-9]*) echo "   panel $id ($title): $n series" ;; *) fail "panel $id ($title): $n" ;; esac
  echo "$id $n" >> "$WORK/counts"
done < "$WORK/queries.tsv"
count() { awk -v i="$1" '$1 == i {print $2}' "$WORK/counts"; }
# What a ready 8-GPU node with a clean self-test must show: panel ids as in the dashboard.
q() { curl -sf "$PROM/api/v1/query" --data-urlencode "query=$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'; }
title_id() { python3 -c 'import json,sys; print([p["id"] for p in json.load(open(sys.argv[1]))["panels"] if p["title"] == sys.argv[2]][0])' "$DASH" "$1"; }
[ "$(count "$(title_id 'Nodes by state')")" = 1 ] && [ "$(q 'count by (state) (p2pnode_node_state == 1)')" = 1 ] \
  && pass "Nodes by state: one node, in one state" || fail "Nodes by state"
[ "$(count "$(title_id 'CE write bandwidth, every pair')")" = 56 ] && pass "CE write bandwidth, every pair: 56 pairs of 8 GPUs" \
  || fail "CE write bandwidth, every pair: $(count "$(title_id 'CE write bandwidth, every pair')") series, wanted 56"
[ "$(count "$(title_id 'Slowest pair: CE write bandwidth')")" = 1 ] && pass "Slowest pair: one series for the node" || fail "Slowest pair"
[ "$(count "$(title_id 'Pairs with corrupted bytes')")" = 0 ] && pass "no pair with corrupted bytes on a clean result" || fail "corrupted bytes panel"
[ "$(count "$(title_id 'VRAM aperture per GPU')")" = 8 ] && pass "VRAM aperture per GPU: 8 GPUs" || fail "aperture panel"
[ "$(count "$(title_id 'NVMe controllers not healthy')")" = 0 ] && [ "$(q 'count(p2pnode_nvme_bar0_ok)')" = 4 ] \
  && pass "NVMe: 4 controllers known, none unhealthy" || fail "NVMe panel"
[ "$(count "$(title_id 'CE write: measured over expected, every pair')")" = 56 ] && pass "ratio matrix: 56 pairs of 8 GPUs" \
  || fail "ratio matrix: $(count "$(title_id 'CE write: measured over expected, every pair')") series, wanted 56"
[ "$(count "$(title_id 'How each pair is connected')")" = 56 ] && pass "pair links: 56 pairs" || fail "pair links panel"
[ "$(count "$(title_id 'Pairs regressed against their baseline')")" = 0 ] && pass "no regressed pair on a first self-test" \
  || fail "regressed panel"
echo "$FAILS failure(s)"
[ "$FAILS" -eq 0 ]

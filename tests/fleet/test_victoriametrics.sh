#!/bin/bash
# The rules and dashboards on VictoriaMetrics give the answers they give on Prometheus. A simulated
# fleet (tests/fleet: real daemons' scrapes on four recorded machines, 25 variants, faulty ones
# among them, counters rising) is scraped by Prometheus in agent mode as ansible/victoriametrics.yml
# configures it, which remote-writes the same samples into a real VictoriaMetrics (Debian's 1.79)
# and, added here, a real Prometheus. Prometheus evaluates prometheus/*.yml itself; vmalert, run
# with the playbook's command line, evaluates the same files against VictoriaMetrics, writes the
# recorded series and ALERTS back into it and sends its alerts to a real Alertmanager. Then, at one
# instant: every rule's expression, every dashboard query (grafana/*.json, instant or over a
# range as Grafana asks it) and the dashboards' variables give the same series and values from both
# stores (tests/fleet/parity.py), a query the two engines answer differently (increase(), which
# Prometheus extrapolates) is told apart, and the alerts firing in Prometheus, in vmalert and in
# Alertmanager name exactly the nodes the fleet made faulty, with the same labels and texts.
# With FEEDER=vmagent, vmagent scrapes in place of the agent, with the command line of the
# playbook's p2pnode-vmagent.service, writing to both stores. Time runs 60 times fast: a simulated
# minute lasts a second (the scrape interval), and every duration in the rules and dashboards is cut
# 60 times (parity.py scale), so 10-minute windows fill in 10 s and a 1-hour one in 60 s. Everything
# on loopback. Usage: [FEEDER=vmagent] bash tests/fleet/test_victoriametrics.sh path/to/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
NODES=25
require prometheus victoria-metrics vmalert prometheus-alertmanager ansible-playbook curl python3
python3 -c "import yaml" 2>/dev/null || { echo "FAIL: python3-yaml is missing (scripts/install-deps.sh test installs it)"; exit 1; }
WORK=$(temp_dir vm)
PIDS=()
# Stopped last first, each waited for: the agent and vmalert flush their remote writes to stores
# still running (to a stopped one they would retry for a minute).
stop_all() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null; wait "${PIDS[i]}" 2>/dev/null; done
  rm -rf "$WORK"
}
trap stop_all EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {  # NAME COMMAND...: in the background, its output in $WORK/NAME.log
  local name=$1; shift
  "$@" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}

# 1. the fleet: 25 variants of real daemons' scrapes, a simulated minute a second
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/captures" || { fail "capturing the daemons' scrapes"; exit 1; }
BASE=$(python3 "$SRC/tests/fleet/fleet.py" ports --nodes $NODES) || { fail "$NODES consecutive free ports"; exit 1; }
fleet=(--captures "$WORK/captures" --nodes $NODES --base-port "$BASE" --minute 1)
planned=$(python3 "$SRC/tests/fleet/fleet.py" plan "${fleet[@]}" --out "$WORK/fleet") && pass "fleet: $planned" || { fail "fleet.py plan"; exit 1; }
start fleet python3 "$SRC/tests/fleet/fleet.py" serve "${fleet[@]}" --ready-file "$WORK/fleet/ready"
wait_until 30 test -s "$WORK/fleet/ready" || { fail "the fleet did not listen"; cat "$WORK/fleet.log"; exit 1; }

# 2. the rules and dashboards with every duration cut 60 times
python3 "$SRC/tests/fleet/parity.py" scale --by 60 --out "$WORK/rules" "$SRC"/prometheus/p2pnode-*.yml &&
python3 "$SRC/tests/fleet/parity.py" scale --by 60 --out "$WORK/dashboards" "$SRC"/grafana/*.json || { fail "scaling the rules"; exit 1; }

# 3. the stores, the rule engines, Alertmanager, and the agent feeding both stores
VM_PORT=$(free_port) PROM_PORT=$(free_port) AM_PORT=$(free_port) VMALERT_PORT=$(free_port) AGENT_PORT=$(free_port) VMAGENT_PORT=$(free_port)
VM=http://127.0.0.1:$VM_PORT PROM=http://127.0.0.1:$PROM_PORT AM=http://127.0.0.1:$AM_PORT VMALERT=http://127.0.0.1:$VMALERT_PORT
cat > "$WORK/alertmanager.yml" <<Y
route: {receiver: log, group_by: [alertname, instance], group_wait: 1s, group_interval: 1s}
receivers: [{name: log}]
Y
start alertmanager prometheus-alertmanager --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address=
# VictoriaMetrics shows a sample to queries 30 s after it came by default (-search.latencyOffset):
# cut 60 times like every other duration here.
start victoria-metrics victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr="127.0.0.1:$VM_PORT" -search.latencyOffset=1s
cat > "$WORK/prometheus.yml" <<Y
global: {evaluation_interval: 1s}
rule_files: [$WORK/rules/p2pnode-alerts.yml, $WORK/rules/p2pnode-rules.yml]
Y
start prometheus prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver
wait_until 30 curl -sf "$VM/health" && wait_until 30 curl -sf "$PROM/-/ready" && wait_until 30 curl -sf "$AM/-/ready" ||
  { fail "a store or Alertmanager did not start"; tail -5 "$WORK"/*.log; exit 1; }
# The agent's configuration and vmalert's unit as the playbook writes them for this fleet's inventory.
ansible-playbook -i "$WORK/fleet/inventory.yml" "$SRC/ansible/victoriametrics.yml" -e p2pnode_prometheus_dir="$WORK/layout" \
  -e p2pnode_victoriametrics_url="$VM" -e p2pnode_alertmanager_url="$AM" -e p2pnode_scrape_interval=1s \
  -e p2pnode_vmalert_listen="127.0.0.1:$VMALERT_PORT" -e p2pnode_vmagent_listen="127.0.0.1:$VMAGENT_PORT" </dev/null > "$WORK/playbook.log" 2>&1 &&
  pass "ansible/victoriametrics.yml wrote the agent's configuration and vmalert's unit" ||
  { fail "ansible/victoriametrics.yml"; tail -20 "$WORK/playbook.log"; exit 1; }
# vmalert with the unit's command line, over the rules cut 60 times; its remote writes each second.
mapfile -t vmalert < <(python3 - "$WORK/layout/p2pnode-vmalert.service" "$WORK/rules" <<'PY'
import re, shlex, sys
unit = open(sys.argv[1]).read().replace("\\\n", " ")
args = shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1))
rules = [a for a in args if a.startswith("-rule=")]
args = [a for a in args if not a.startswith("-rule=")] + ["-rule=%s/%s" % (sys.argv[2], r.rsplit("/", 1)[1]) for r in rules]
print("\n".join(args + ["-remoteWrite.flushInterval=1s"]))
PY
)
start vmalert "${vmalert[@]}"
# The agent as configured, writing to Prometheus too (each within half a second).
python3 - "$WORK/layout/prometheus-agent.yml" "$PROM" > "$WORK/agent.yml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["remote_write"].append({"url": sys.argv[2] + "/api/v1/write"})
for w in c["remote_write"]:
    w["queue_config"] = {"batch_send_deadline": "500ms"}
print(yaml.safe_dump(c))
PY
if [ "${FEEDER:-agent}" = vmagent ]; then
  # vmagent as its unit runs it, writing to Prometheus too, each write within half a second.
  mapfile -t vmagent < <(python3 - "$WORK/layout/p2pnode-vmagent.service" "$WORK/vmagent" "$PROM" <<'PY'
import re, shlex, sys
unit = open(sys.argv[1]).read().replace("\\\n", " ")
args = [a for a in shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)) if not a.startswith("-remoteWrite.tmpDataPath=")]
print("\n".join(args + ["-remoteWrite.tmpDataPath=" + sys.argv[2], "-remoteWrite.url=%s/api/v1/write" % sys.argv[3], "-remoteWrite.flushInterval=500ms"]))
PY
)
  start agent "${vmagent[@]}"
else
  start agent prometheus --enable-feature=agent --config.file="$WORK/agent.yml" --storage.agent.path="$WORK/agent" \
    --web.listen-address="127.0.0.1:$AGENT_PORT"
fi
q() {  # URL EXPR: the first value
  curl -sf "$1/api/v1/query" --data-urlencode "query=$2" --data-urlencode nocache=1 |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
all_up() { [ "$(q "$PROM" 'count(up{job="p2pnode"} == 1)')" = $NODES ] && [ "$(q "$VM" 'count(up{job="p2pnode"} == 1)')" = $NODES ]; }
wait_until 60 all_up && pass "both stores hold all $NODES nodes' scrapes (through ${FEEDER:-agent})" ||
  { fail "the stores do not see the fleet: Prometheus $(q "$PROM" 'count(up == 1)'), VictoriaMetrics $(q "$VM" 'count(up == 1)')"; tail -5 "$WORK"/*.log; exit 1; }
T0=$(date +%s)
log "waiting until every expected alert fires in Alertmanager and an hour (60 s) of samples is in"
am_has_all() {
  [ $(( $(date +%s) - T0 )) -ge 65 ] &&
  curl -sf "$AM/api/v2/alerts" | python3 -c '
import json, sys
exp = json.load(open(sys.argv[1]))
got = {(a["labels"]["alertname"], a["labels"]["instance"]) for a in json.load(sys.stdin)}
sys.exit(0 if {(k, i) for k, v in exp.items() for i in v} <= got else 1)' "$WORK/fleet/expected.json"
}
wait_until 150 am_has_all || fail "Alertmanager did not get every expected alert within 150 s"

# 4. the same answers at one instant (a few seconds back, so both stores hold every sample before it)
AT=$(python3 -c 'import time; print("%.3f" % (time.time() - 3))')
log "asking both stores every rule, dashboard query and variable at $AT"
python3 "$SRC/tests/fleet/parity.py" compare --a "$PROM" --b "$VM" --rules "$WORK/rules" --dashboards "$WORK/dashboards" \
  --instance "127.0.0.1:$BASE" --at "$AT" --range 60 --step 5 --clock-slack 5 \
  --expect-differ 'sum by (instance) (increase(p2pnode_reconcile_runs_total[60s]))' \
  && pass "every rule, dashboard query and variable: the same series and values from Prometheus and VictoriaMetrics" \
  || fail "Prometheus and VictoriaMetrics answer differently (A: Prometheus, B: VictoriaMetrics)"

# 5. the alerts: Prometheus', vmalert's and Alertmanager's against the faulty nodes, and each other
python3 "$SRC/tests/fleet/parity.py" alerts --prometheus "$PROM" --vmalert "$VMALERT" --alertmanager "$AM" \
  --expected "$WORK/fleet/expected.json" && pass "alerts: the same from both rule engines, in Alertmanager, naming exactly the faulty nodes" \
  || fail "alerts"
grep -iE 'level=error|"level":"error"|\berror\b' "$WORK/vmalert.log" | head -5
finish

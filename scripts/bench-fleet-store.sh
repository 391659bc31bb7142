#!/bin/bash
# What the fleet costs VictoriaMetrics beside one Prometheus, in one run on this machine: one
# simulated fleet (tests/fleet: real daemons' scrapes on four recorded machines, served on loopback
# by several processes), grown through SIZES nodes; at each size ansible/victoriametrics.yml writes
# the targets, the agent's configuration and vmalert's unit from an inventory of that many nodes, and
#   - vmagent (the playbook's p2pnode-vmagent.service; FEEDER=agent: Prometheus in agent mode, as
#     prometheus-agent.yml configures it) scrapes them and remote-writes every sample to
#     VictoriaMetrics (Debian's); vmalert, with its unit's command line, evaluates prometheus/*.yml
#     against it and sends its alerts to Alertmanager;
#   - one plain Prometheus (as scripts/bench-fleet.sh: the playbook's prometheus.yml, the rules
#     loaded) scrapes the same nodes, until the size it would not hold (memory) or does not keep up
#     with (every target up within WAIT_S), after which VictoriaMetrics goes on alone.
# After SETTLE_S at each size, for each store (scripts/bench_fleet_store.py measure): series per
# node, each process's RSS and CPU, disk and bytes per sample, ingest, the rule groups' evaluation
# time, every dashboard query's p50/p99 over ROUNDS runs as Grafana asks it (instant or over the
# dashboard's range at Grafana's step; the fleet dashboard for every cluster, the node dashboard with
# one 8-GPU node), with the other store (and its scraper) stopped meanwhile so each answers from its
# own share of the 2 cores, and the nodes each alert names against those the fleet made faulty.
# Then the tables and the per-node line fitted through the sizes (bench_fleet_store.py table).
# usage: scripts/bench-fleet-store.sh path/to/p2pnode [SIZE...]   (default 1000 2500 5000 10000)
#        env: FEEDER (vmagent or agent), SETTLE_S (130), ROUNDS (50), WAIT_S (600), BUDGET_S (2400: no
#             new size after it),
#             PROM_MAX (the largest size the plain Prometheus is given; default: as memory allows),
#             RESULTS (the file the JSON lines go to; default: a new one in /tmp, named at the end)
set -uo pipefail
exec </dev/null  # ansible-playbook refuses a non-blocking stdin
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode [SIZE...]}")
shift
SIZES=("${@:-1000 2500 5000 10000}")
read -r -a SIZES <<< "${SIZES[*]}"
MAX=${SIZES[-1]}
SETTLE_S=${SETTLE_S:-130}
ROUNDS=${ROUNDS:-50}
WAIT_S=${WAIT_S:-600}
BUDGET_S=${BUDGET_S:-2400}
PROM_MAX=${PROM_MAX:-$MAX}
FEEDER=${FEEDER:-vmagent}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BENCH="python3 $SRC/scripts/bench_fleet_store.py"
for t in prometheus victoria-metrics vmalert vmagent prometheus-alertmanager ansible-playbook curl python3; do
  command -v $t >/dev/null || { echo "$t is not installed (scripts/install-deps.sh test installs it)"; exit 1; }
done
WORK=$(mktemp -d /tmp/p2pnode-bench-store.XXXXXX)
RESULTS=${RESULTS:-$(mktemp --suffix=.jsonl /tmp/p2pnode-bench-store-results.XXXXXX)}
T_START=$(date +%s)
declare -A PID
# Stopped last first, each continued first (a store may be stopped mid-measure) and waited for.
stop() {  # NAME
  local p=${PID[$1]:-}
  [ -n "$p" ] || return 0
  kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
  unset "PID[$1]"
}
ORDER=()
stop_all() {
  local i
  for ((i = ${#ORDER[@]} - 1; i >= 0; i--)); do stop "${ORDER[i]}"; done
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap stop_all EXIT
start() {  # NAME COMMAND...: in the background, its output in $WORK/NAME.log
  local name=$1; shift
  "$@" > "$WORK/$name.log" 2>&1 &
  PID[$name]=$!
  ORDER+=("$name")
}
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
wait_until() {  # SECONDS COMMAND...
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 1; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
log "$(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 2^20}' /proc/meminfo); load average $(cut -d' ' -f1-3 /proc/loadavg); sizes ${SIZES[*]}"

# 1. the fleet: MAX nodes, a process per 2,500 (each holds a socket per node and one per scraper's
# connection, two scrapers here: under the 20,000 open files a process may have)
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/cap" || exit 1
# Ports below the kernel's ephemeral range, so the scrapers' own connections never take one.
BASE=$(python3 "$SRC/tests/fleet/fleet.py" ports --nodes "$MAX") || exit 1
fleet=(--captures "$WORK/cap" --nodes "$MAX" --base-port "$BASE")
python3 "$SRC/tests/fleet/fleet.py" plan "${fleet[@]}" --out "$WORK/fleet" >&2 || exit 1
SLICE=2500
for ((a = 0; a < MAX; a += SLICE)); do
  start "fleet-$a" python3 "$SRC/tests/fleet/fleet.py" serve "${fleet[@]}" --slice "$a:$((a + SLICE))" --ready-file "$WORK/fleet/ready-$a"
done
for ((a = 0; a < MAX; a += SLICE)); do
  wait_until 300 test -s "$WORK/fleet/ready-$a" || { log "the fleet's slice from $a did not listen"; tail "$WORK/fleet-$a.log"; exit 1; }
done
log "the fleet listens: $MAX nodes on ports $BASE.. ($(( (MAX + SLICE - 1) / SLICE )) processes)"

# 2. Alertmanager, the stores, vmalert and the agent; the layout from the playbook for SIZE nodes
VM_PORT=$(free_port) PROM_PORT=$(free_port) AM_PORT=$(free_port) VMALERT_PORT=$(free_port) AGENT_PORT=$(free_port) VMAGENT_PORT=$(free_port)
VM=http://127.0.0.1:$VM_PORT PROM=http://127.0.0.1:$PROM_PORT AM=http://127.0.0.1:$AM_PORT VMALERT=http://127.0.0.1:$VMALERT_PORT
playbook() {  # N: the inventory's first N nodes through ansible/victoriametrics.yml into $WORK/layout
  head -n $((2 + $1)) "$WORK/fleet/inventory.yml" > "$WORK/inventory.yml"
  local t0=$(date +%s.%N)
  ansible-playbook -i "$WORK/inventory.yml" "$SRC/ansible/victoriametrics.yml" -e p2pnode_prometheus_dir="$WORK/layout" \
    -e p2pnode_victoriametrics_url="$VM" -e p2pnode_alertmanager_url="$AM" -e p2pnode_vmalert_listen="127.0.0.1:$VMALERT_PORT" -e p2pnode_vmagent_listen="127.0.0.1:$VMAGENT_PORT" \
    > "$WORK/playbook-$1.log" 2>&1 || { tail -20 "$WORK/playbook-$1.log" >&2; exit 1; }
  log "ansible/victoriametrics.yml for $1 nodes: $(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))") s"
}
playbook "${SIZES[0]}"
cat > "$WORK/alertmanager.yml" <<Y
route: {receiver: log, group_by: [alertname, instance]}
receivers: [{name: log}]
Y
start alertmanager prometheus-alertmanager --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address=
# A query may select 300,000 series by default (-search.maxUniqueTimeseries); the rule over every
# pair's peer access selects 56 an 8-GPU node: 60 a node, as docs/monitoring.md tells a site.
start victoria-metrics victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr="127.0.0.1:$VM_PORT" \
  -search.maxUniqueTimeseries=$(( MAX * 60 > 300000 ? MAX * 60 : 300000 ))
start prometheus prometheus --config.file="$WORK/layout/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-admin-api
wait_until 60 curl -sf "$VM/health" && wait_until 60 curl -sf "$PROM/-/ready" && wait_until 60 curl -sf "$AM/-/ready" ||
  { log "a store or Alertmanager did not start"; tail -5 "$WORK"/*.log; exit 1; }
unit_command() {  # UNIT: its ExecStart, an argument a line
  python3 - "$1" <<'PY'
import re, shlex, sys
print("\n".join(shlex.split(re.search(r"^ExecStart=(.*)$", open(sys.argv[1]).read().replace("\\\n", " "), re.M).group(1))))
PY
}
mapfile -t vmalert < <(unit_command "$WORK/layout/p2pnode-vmalert.service")
start vmalert "${vmalert[@]}"
if [ "$FEEDER" = vmagent ]; then
  mapfile -t vmagent < <(unit_command "$WORK/layout/p2pnode-vmagent.service" | sed "s|^-remoteWrite.tmpDataPath=.*|-remoteWrite.tmpDataPath=$WORK/vmagent|")
  start scraper "${vmagent[@]}"
else
  start scraper prometheus --enable-feature=agent --config.file="$WORK/layout/prometheus-agent.yml" --storage.agent.path="$WORK/agent" \
    --web.listen-address="127.0.0.1:$AGENT_PORT"
fi
wait_until 60 curl -sf "$VMALERT/health" || { log "vmalert did not start"; tail -5 "$WORK/vmalert.log"; exit 1; }
fleet_pids() { local k; for k in "${!PID[@]}"; do [[ $k == fleet-* ]] && echo "--pid fleet=${PID[$k]}"; done; }

# 3. each size
for n in "${SIZES[@]}"; do
  elapsed=$(( $(date +%s) - T_START ))
  [ "$elapsed" -lt "$BUDGET_S" ] || { log "the run's $BUDGET_S s are spent: no $n nodes"; break; }
  # The plain Prometheus goes on while what every process here would add at this size (its RSS
  # per node at the last size, times the nodes added, and a third again for a compaction or a
  # merge) fits in nine tenths of the memory free; VictoriaMetrics' side goes first.
  if [ -n "${LAST_N:-}" ]; then
    fits() {  # PID...: yes, or why not
      python3 - "$n" "$LAST_N" "$@" <<'PY'
import sys
n, last, pids = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
rss = lambda p: int([l for l in open("/proc/%s/status" % p) if l.startswith("VmRSS:")][0].split()[1]) * 1024
need = sum(rss(p) * (n / last - 1) for p in pids) * 4 / 3
avail = int([l for l in open("/proc/meminfo") if l.startswith("MemAvailable:")][0].split()[1]) * 1024
print("yes" if need < avail * 0.9 else "%.1f GiB more needed, %.1f GiB available" % (need / 2**30, avail / 2**30))
PY
    }
    vm_side=(${PID[victoria-metrics]} ${PID[scraper]} ${PID[vmalert]} $(for k in "${!PID[@]}"; do [[ $k == fleet-* ]] && echo "${PID[$k]}"; done))
    if [ -n "${PID[prometheus]:-}" ]; then
      why=$([ "$n" -le "$PROM_MAX" ] && fits "${vm_side[@]}" "${PID[prometheus]}" || echo "PROM_MAX is $PROM_MAX")
      [ "$why" = yes ] || { log "the plain Prometheus stops before $n nodes: $why"; stop prometheus; }
    fi
    why=$(fits "${vm_side[@]}")
    [ "$why" = yes ] || { log "no $n nodes: $why"; break; }
  elif [ "$n" -gt "$PROM_MAX" ]; then
    stop prometheus
  fi
  [ "$n" = "${SIZES[0]}" ] || playbook "$n"
  log "$n nodes: waiting for every target in each store"
  $BENCH wait --url "$VM" --nodes "$n" --timeout "$WAIT_S" || { log "VictoriaMetrics does not hold $n nodes"; break; }
  if [ -n "${PID[prometheus]:-}" ]; then
    $BENCH wait --url "$PROM" --nodes "$n" --timeout 120 || { log "the plain Prometheus does not keep up with $n nodes"; stop prometheus; }
  fi
  log "$n nodes: ${SETTLE_S} s of scraping and rule evaluation"
  sleep "$SETTLE_S"
  common=(--nodes "$n" --base-port "$BASE" --expected "$WORK/fleet/expected.json" --grafana "$SRC/grafana" --rounds "$ROUNDS" $(fleet_pids))
  others=()
  [ -n "${PID[prometheus]:-}" ] && others=(--pause "${PID[prometheus]}")
  $BENCH measure --store victoriametrics --url "$VM" --data "$WORK/vm" --vmalert "$VMALERT" --alertmanager "$AM" "${common[@]}" \
    --pid victoria-metrics="${PID[victoria-metrics]}" --pid scraper="${PID[scraper]}" --feeder "$FEEDER" --pid vmalert="${PID[vmalert]}" "${others[@]}" >> "$RESULTS" ||
    { log "measuring VictoriaMetrics at $n nodes failed"; break; }
  if [ -n "${PID[prometheus]:-}" ]; then
    $BENCH measure --store prometheus --url "$PROM" --data "$WORK/tsdb" "${common[@]}" --pid prometheus="${PID[prometheus]}" \
      --pause "${PID[scraper]}" --pause "${PID[vmalert]}" --pause "${PID[victoria-metrics]}" >> "$RESULTS" ||
      { log "measuring Prometheus at $n nodes failed"; stop prometheus; }
  fi
  LAST_N=$n
done
log "done in $(( $(date +%s) - T_START )) s; results in $RESULTS"
$BENCH table "$RESULTS"

#!/bin/bash
# The pictures of the two Grafana dashboards in docs/images, from the simulated fleet: real daemons
# on four recorded machines give the scrapes (tests/fleet/capture.sh), tests/fleet/fleet.py serves
# 25 variants of them on loopback, a real Prometheus (Debian's) scrapes them every second with the
# alert and recording rules loaded (their 2-minute groups cut to a second, as tests/grafana does),
# and after SCRAPE_S seconds scripts/render_dashboards.py runs every panel's own query from
# grafana/*.json and draws it with matplotlib, laid out on the dashboard's grid. The node dashboard
# shows fleet node 1 (an 8x RTX 4090 node with one pair without peer access: degraded).
# usage: scripts/render-dashboards.sh path/to/p2pnode [OUTDIR]   (default OUTDIR: docs/images)
#        env: SCRAPE_S (default 150). Needs prometheus, python3-matplotlib (scripts/install-deps.sh test).
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode [OUTDIR]}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${2:-$SRC/docs/images}" && cd "${2:-$SRC/docs/images}" && pwd)
SCRAPE_S=${SCRAPE_S:-150}
NODES=25
for t in prometheus curl; do
  command -v $t >/dev/null || { echo "$t is not installed (scripts/install-deps.sh test installs it)"; exit 1; }
done
# Debian's interpreter: python3-matplotlib is installed for it, not for another python3 on PATH.
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || { echo "python3-matplotlib is not installed (scripts/install-deps.sh test)"; exit 1; }
WORK=$(mktemp -d /tmp/p2pnode-render.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up() { curl -sf "$PROM/api/v1/query" --data-urlencode 'query=count(up{job="p2pnode"} == 1)' | grep -q "\"$NODES\"\]"; }

# The fleet: real daemons' scrapes, 25 variants on consecutive ports from BASE.
bash "$SRC/tests/fleet/capture.sh" "$BIN" "$WORK/captures" || exit 1
BASE=$(python3 "$SRC/tests/fleet/fleet.py" ports --nodes $NODES) || exit 1
python3 "$SRC/tests/fleet/fleet.py" plan --captures "$WORK/captures" --nodes $NODES --base-port "$BASE" --out "$WORK/fleet" || exit 1
python3 "$SRC/tests/fleet/fleet.py" serve --captures "$WORK/captures" --nodes $NODES --base-port "$BASE" \
  --ready-file "$WORK/fleet/ready" > "$WORK/fleet.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 150); do [ -s "$WORK/fleet/ready" ] && break; sleep 0.2; done
[ -s "$WORK/fleet/ready" ] || { echo "the fleet did not listen:"; cat "$WORK/fleet.log"; exit 1; }

# Prometheus, as tests/grafana/test_dashboard.sh runs it.
for r in p2pnode-alerts.yml p2pnode-rules.yml; do sed 's/^    interval: 2m$/    interval: 1s/' "$SRC/prometheus/$r" > "$WORK/fleet/$r"; done
cat > "$WORK/fleet/prometheus.yml" <<Y
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [p2pnode-alerts.yml, p2pnode-rules.yml]
scrape_configs:
  - job_name: p2pnode
    file_sd_configs: [{files: [p2pnode-targets.json]}]
Y
PROM_PORT=$(free_port)
PROM="http://127.0.0.1:$PROM_PORT"
prometheus --config.file="$WORK/fleet/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do up && break; sleep 0.2; done
up || { echo "Prometheus does not scrape all $NODES nodes:"; tail -20 "$WORK/prometheus.log"; exit 1; }
START=$(date +%s)
echo "the fleet is up, Prometheus at $PROM: $SCRAPE_S s of scraping before the pictures" >&2
sleep "$SCRAPE_S"

/usr/bin/python3 "$SRC/scripts/render_dashboards.py" --prom "$PROM" --out "$OUT" --start "$START" \
  --caption "simulated fleet of $NODES nodes (tests/fleet) scraped by Prometheus for $SCRAPE_S s; $(date -u +%Y-%m-%d)" \
  "$SRC/grafana/p2pnode-fleet.json" "$SRC/grafana/p2pnode-cluster.json:instance=127.0.0.1:$((BASE + 1))"

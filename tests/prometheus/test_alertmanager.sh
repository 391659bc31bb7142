#!/bin/bash
# The example Alertmanager configuration (prometheus/alertmanager.example.yml): amtool check-config;
# every alert of p2pnode-alerts.yml routed by its severity (critical pages, warning a ticket, info
# chat) with amtool config routes test; every aggregation in the rules keeps node and cluster (the
# example groups and inhibits by them); then a real Alertmanager on loopback, sent one node's
# P2pnodeNodeNotReady beside its warning, info and critical alerts and another node's warning:
# only the first node's warning and info are inhibited. About 3 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
require amtool prometheus-alertmanager python3 curl jq
config=prometheus/alertmanager.example.yml
rules=prometheus/p2pnode-alerts.yml
work=$(temp_dir am)
am=
trap '[ -z "$am" ] || { kill "$am"; wait "$am"; } 2>/dev/null; rm -rf "$work"' EXIT

amtool check-config "$config" > "$work/check" 2>&1 && pass "amtool check-config" || { cat "$work/check"; fail "amtool check-config"; }

# Each alert's severity decides its receiver; the labels are those a firing alert carries.
python3 - "$rules" > "$work/alerts" <<'PY' || fail "reading $rules"
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        if "alert" in r: print(r["alert"], r["labels"]["severity"])
PY
declare -A receiver=([critical]=p2pnode-page [warning]=p2pnode-ticket [info]=p2pnode-chat)
while read -r alert severity; do
  want=${receiver[$severity]:-none}
  if amtool config routes test --config.file="$config" --verify.receivers="$want" \
       alertname="$alert" severity="$severity" job=p2pnode instance=n1:9470 node=n1 cluster=c1 > "$work/route" 2>&1; then
    pass "$alert ($severity) goes to $want"
  else
    fail "$alert ($severity) goes to $(cat "$work/route"), not $want"
  fi
done < "$work/alerts"
[ "$(wc -l < "$work/alerts")" -ge 20 ] || fail "only $(wc -l < "$work/alerts") alerts read from $rules"

# An aggregation that dropped node or cluster would put its alerts in no node's group.
grep -n 'by *(' "$rules" | grep -v 'node' | grep . && fail "the aggregations above drop node (group_by and equal use it)"
grep -n 'by *(' "$rules" | grep -v 'cluster' | grep . && fail "the aggregations above drop cluster"
[ "$FAILS" -eq 0 ] && pass "every aggregation in the rules keeps node and cluster"

# --- the inhibition, in a real Alertmanager (receivers on a closed loopback port: nothing leaves) ---
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed 's|http://alert-router.example:9095/|http://127.0.0.1:9/|' "$config" > "$work/am.yml"
prometheus-alertmanager --config.file="$work/am.yml" --storage.path="$work/data" \
  --web.listen-address="127.0.0.1:$port" --cluster.listen-address= > "$work/am.log" 2>&1 &
am=$!
url=http://127.0.0.1:$port
for _ in $(seq 200); do curl -sf "$url/-/ready" > /dev/null && break; sleep 0.05; done
curl -sf "$url/-/ready" > /dev/null || { cat "$work/am.log"; fail "Alertmanager did not start"; exit 1; }
alert() {  # alert NAME SEVERITY NODE [LABEL=VALUE]
  printf '{"labels": {"alertname": "%s", "severity": "%s", "job": "p2pnode", "instance": "%s:9470", "node": "%s", "cluster": "c1"%s}}' \
    "$1" "$2" "$3" "$3" "${4:+, \"${4%%=*}\": \"${4#*=}\"}"
}
printf '[%s,%s,%s,%s,%s]' "$(alert P2pnodeNodeNotReady warning n1)" "$(alert P2pnodePairBelowThreshold warning n1 gpu=0000:00:06.0)" \
  "$(alert P2pnodeSelftestBusy info n1)" "$(alert P2pnodeGpuXid critical n1 gpu=0000:00:06.0)" \
  "$(alert P2pnodePairBelowThreshold warning n2 gpu=0000:00:06.0)" > "$work/alerts.json"
curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$work/alerts.json" "$url/api/v2/alerts" > /dev/null ||
  fail "POST /api/v2/alerts"
state() {  # state NAME NODE: active or suppressed
  curl -s "$url/api/v2/alerts" | jq -r --arg a "$1" --arg n "$2" '.[] | select(.labels.alertname == $a and .labels.node == $n) | .status.state'
}
check_state() {  # check_state NAME NODE WANT WHY
  local got; got=$(state "$1" "$2")
  [ "$got" = "$3" ] && pass "$1 on $2: $3 ($4)" || fail "$1 on $2: $got, not $3 ($4)"
}
check_state P2pnodeNodeNotReady n1 active "sent: an alert does not inhibit itself"
check_state P2pnodePairBelowThreshold n1 suppressed "a warning of the not-ready node"
check_state P2pnodeSelftestBusy n1 suppressed "info of the not-ready node"
check_state P2pnodeGpuXid n1 active "critical still pages"
check_state P2pnodePairBelowThreshold n2 active "another node's warning"

finish

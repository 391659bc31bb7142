#!/bin/bash
# Through the daemon: the recorded 4x H200 node, a replayed agent whose result carries
# NVML's view (one pair NV18), a profile with no hand-set bandwidth thresholds. After the start
# self-test the pair is NV18 in /v1/topology, /v1/findings and p2pnode_p2p_link_info, and status
# shows measured, expected and ratio. Three more self-tests build the baseline; a fourth at 88 %
# (above the 0.85 threshold) degrades the node with a regression naming both figures, raises
# p2pnode_p2p_regressed, and the history survives a restart. About 3 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_expect.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3

sed -e '/min_bandwidth:/,/any:/d' "$SRC/profiles/h200-nvlink.yaml" > "$WORK/h200-nvlink.yaml"
RESULT="$WORK/result.json"
scaled() {  # the real NV18 run with every pair bandwidth times $1
  python3 - "$1" "$SRC/tests/unit/agent/data/h200x2-nv18.json" > "$RESULT.tmp" <<'PY'
import json, sys
f = float(sys.argv[1]); d = json.load(open(sys.argv[2]))
for c in d["cases"]:
    for cell in c["cells"]:
        for k in ("bandwidth_gbps", "direction_bandwidth_gbps"):
            if isinstance(cell.get(k), dict):
                for s in ("median", "mean", "min", "max", "p10", "p90"): cell[k][s] *= f
print(json.dumps(d))
PY
  mv "$RESULT.tmp" "$RESULT"
}
scaled 1.0
make_node h200 h200-4gpu "$WORK/h200-nvlink.yaml"
write_config h200 "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\"]"
start_daemon h200 || exit 1
AUTH=(-H "Authorization: Bearer $TOKEN")

S=$(curl -s "$URL/v1/status")
check "the start self-test passed without hand-set thresholds" test "$(jq -r .selftest.verdict <<<"$S")" = passed
check "status: 14 cells with measured, expected and ratio" \
  jq -e '[.selftest.expectations[] | select(.measured_gbps > 0 and .expected_gbps > 0 and .ratio > 0.99 and .ratio < 1.03)] | length == 14' <<<"$S"
check "/v1/topology: the pair is NV18, the others PHB" \
  jq -e '.matrix[0][1] == "NV18" and .matrix[1][0] == "NV18" and .matrix[0][2] == "PHB"' <(curl -s "$URL/v1/topology")
check "/v1/findings: pcie.topology counts 1 NV18" \
  jq -e '.findings[] | select(.check == "pcie.topology") | .summary | test("1 NV18")' <(curl -s "$URL/v1/findings")
M=$(curl -s "$URL/metrics")
check "p2pnode_p2p_link_info says NV18" grep -q 'p2pnode_p2p_link_info{gpu="0000:00:06.0",link="NV18",peer_gpu="0000:00:07.0"} 1' <<<"$M"
check "p2pnode_p2p_path_expected_bandwidth_bytes_per_second is there (NV18-450)" grep -q '^p2pnode_p2p_path_expected_bandwidth_bytes_per_second{direction="write",engine="ce",path="NV18-450"}' <<<"$M"
check "p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second is there" grep -q '^p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second{' <<<"$M"
check "p2pnode status prints the expectations" bash -c "'$BIN' status --url '$URL' | grep -q 'measured / expected (ratio)'"

selftest() {  # POST one and wait until it is recorded
  local before; before=$(curl -s "$URL/v1/status" | jq '[.reconcile.runs[]] | add')
  curl -s -X POST "${AUTH[@]}" "$URL/v1/selftest" >/dev/null
  wait_until 30 bash -c "[ \$(curl -s '$URL/v1/status' | jq '[.reconcile.runs[]] | add') -gt $before ]" && wait_until 30 decided "$URL"
}
selftest; selftest
check "no regression while the figures hold" jq -e '.selftest.warnings == [] and .state == "ready"' <(curl -s "$URL/v1/status")
scaled 0.88
selftest
S=$(curl -s "$URL/v1/status")
check "88 % of the baseline still passes the 0.85 threshold" test "$(jq -r .selftest.verdict <<<"$S")" = passed
check "the regression is a warning naming both figures" \
  jq -e '.selftest.warnings | any(test("ce_write_bandwidth 0000:00:06.0->0000:00:07.0 \\(NV18\\): 348.8 GB/s, 12 % below its baseline of 396.4 GB/s"))' <<<"$S"
check "/v1/findings: selftest.bandwidth warns with the lowest cell" \
  jq -e '.findings[] | select(.check == "selftest.bandwidth") | .severity == "warning" and (.summary | test("at 0.88-1.01 of expected; lowest ce_read_bandwidth .*: 346.6 of 393.8 GB/s; 10 regressed"))' \
  <(curl -s "$URL/v1/findings")
check "the node is degraded by it" jq -e '.state == "degraded" and (.reasons | any(test("^self-test regression: ")))' <<<"$S"
check "p2pnode_p2p_regressed is 1 for the pair" \
  grep -q 'p2pnode_p2p_regressed{direction="write",engine="ce",gpu="0000:00:06.0",peer_gpu="0000:00:07.0"} 1' <(curl -s "$URL/metrics")
stop_daemon h200
check "the baseline history survives in the state file (4 runs)" \
  jq -e '.baselines.history["ce_write_bandwidth 0000:00:06.0->0000:00:07.0"] | length == 4' "$WORK/h200/root/var/lib/p2pnode/state.json"
finish

#!/bin/bash
# The passive health pass through the daemon, about 20 s: the recorded 4x H200 node with a recorded
# /dev/kmsg stream (tests/serve/data/kmsg-xid.txt: Xid 79 on 0000:00:06.0 and 74 on 0000:00:07.0
# five minutes before now, an Xid 13 from long before) and /proc/uptime put in its root, AER files
# added to GPU 0000:00:06.0, and an agent that answers --health with an NVLink document the test
# rewrites. health.interval 1s: the Xids are findings naming the GPUs and their pairs, counted once
# per record; a correctable AER rise at 30 a minute (a healthy link's few are not: the limit is 8 a
# minute) and an NVLink replay rise become findings and metrics; then the
# driver's own word (agent schema 2): a drain-P2P recovery action makes /readyz 503 naming the GPU
# and its pairs, and 200 again when it clears; a P2P status that drops and a fallen-off-the-bus report
# without an Xid are findings; every response against api/openapi.yaml; promtool on the scrape; the
# alert rules on what was scraped.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_health.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq

make_node h200 h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
R="$WORK/h200/root"
mkdir -p "$R/dev"
cp "$SRC/tests/serve/data/kmsg-xid.txt" "$R/dev/kmsg"
echo "86400.25 170000.00" > "$R/proc/uptime"  # the kernel's clock: the 79 and 74 are 5 minutes old
G="$R/sys/bus/pci/devices/0000:00:06.0"
aer() {  # aer RXERR: the kernel's aer_dev_* files with RxErr at RXERR
  printf 'RxErr %s\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR %s\n' "$1" "$1" > "$G/aer_dev_correctable.new"
  mv "$G/aer_dev_correctable.new" "$G/aer_dev_correctable"
}
aer 0
printf 'Undefined 0\nDLP 0\nCmpltTO 0\nTOTAL_ERR_NONFATAL 0\n' > "$G/aer_dev_nonfatal"
printf 'Undefined 0\nDLP 0\nCmpltTO 0\nTOTAL_ERR_FATAL 0\n' > "$G/aer_dev_fatal"
export P2PNODE_TEST_HEALTH_DOC="$WORK/health.json"
nvlink() {  # nvlink REPLAY: GPUs 06.0 and 07.0 with two links each to one another
  cat > "$P2PNODE_TEST_HEALTH_DOC.new" <<JSON
{"schema_version": 1, "kind": "health", "agent_version": "test",
 "nvml": {"available": true, "driver_version": "580.159.04", "reason": null},
 "gpus": [
  {"index": 0, "pci_bus_id": "0000:00:06.0", "name": "NVIDIA H200", "problem": null, "links": [
    {"link": 0, "active": true, "remote_pci_bus_id": "0000:00:07.0", "errors": {"replay": $1, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": null}},
    {"link": 1, "active": true, "remote_pci_bus_id": "0000:00:07.0", "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": null}}]},
  {"index": 1, "pci_bus_id": "0000:00:07.0", "name": "NVIDIA H200", "problem": null, "links": [
    {"link": 0, "active": true, "remote_pci_bus_id": "0000:00:06.0", "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": null}},
    {"link": 1, "active": true, "remote_pci_bus_id": "0000:00:06.0", "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": null}}]}]}
JSON
  mv "$P2PNODE_TEST_HEALTH_DOC.new" "$P2PNODE_TEST_HEALTH_DOC"
}
nvlink 5
write_config h200 "$SRC/tests/serve/agents/health.sh" "[\"$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json\"]" \
  "health: {interval: 1s, window: 10m, agent_time_limit: 5s, nvlink_interval: 1s}"
start_daemon h200 || exit 1

passes() { curl -s "$URL/v1/health" | jq -e ".passes >= $1 and (.devices | length) == 4" >/dev/null; }
wait_until 30 passes 2 || fail "two health passes with the four GPUs within 30 s"
record health GET /v1/health
H=$BODY
check "/v1/health: schema 1, interval 1 s, window 600 s" jq -e '.schema_version == 1 and .interval_s == 1 and .window_s == 600' <<<"$H"
check "Xid 79 is an error finding on GPU 0000:00:06.0 naming its pairs and the process" \
  jq -e '.findings[] | select(.check == "health.xid" and .subject == "0000:00:06.0") | .severity == "error" and
         (.summary | test("^Xid 79 on GPU 0000:00:06.0: GPU has fallen off the bus.*1x in the last 10m.*0000:00:06.0-0000:00:07.0")) and
         .observed.processes[0].process == "all_reduce_perf" and (.observed.pairs | length) == 3' <<<"$H"
check "Xid 74 is an error finding on GPU 0000:00:07.0 (NVLink)" \
  jq -e '.findings[] | select(.check == "health.xid" and .subject == "0000:00:07.0" and .observed.xid == 74) | .severity == "error" and .observed.area == "nvlink"' <<<"$H"
check "the Xid 45 after it is a warning" \
  jq -e '[.findings[] | select(.check == "health.xid" and .observed.xid == 45 and .severity == "warning")] | length == 1' <<<"$H"
check "the Xid 13 of long ago is counted but no finding" \
  jq -e '([.findings[] | select(.observed.xid == 13)] | length == 0) and (.xid.counts | any(.xid == 13 and .gpu == "0000:00:08.0" and .count == 1))' <<<"$H"
check "no AER or NVLink finding from first readings" jq -e '[.findings[] | select(.check == "health.aer" or .check == "health.nvlink")] | length == 0' <<<"$H"
check "GPU 0000:00:07.0 has no AER statistics, and says so" \
  jq -e '.devices[] | select(.bdf == "0000:00:07.0") | .aer == null and (.aer_absent | test("no AER statistics"))' <<<"$H"
check "NVLink read through the agent's --health" jq -e '.nvlink.read == true and .nvlink.driver_version == "580.159.04" and (.nvlink.gpus | length) == 2' <<<"$H"
check "the 32 GT/s x16 links are not degraded" jq -e '[.devices[] | select(.link_degraded)] | length == 0' <<<"$H"

# The stream grows by one Xid 79 record; the records already seen are not counted again.
printf '4,2007,86390000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=48300, name=python3, GPU has fallen off the bus.\n' >> "$R/dev/kmsg"
aer 30
nvlink 9
risen() {
  curl -s "$URL/v1/health" | jq -e '[.findings[] | select(.check == "health.aer" or .check == "health.nvlink" or (.check == "health.xid" and .observed.count == 2))] | length == 3' >/dev/null
}
wait_until 20 risen || fail "the AER, NVLink and second Xid 79 findings within 20 s"
record health2 GET /v1/health
H=$BODY
check "30 correctable AER errors on GPU 0000:00:06.0 within a minute are a warning naming RxErr, the rate and the pairs" \
  jq -e '.findings[] | select(.check == "health.aer") | .subject == "0000:00:06.0" and .severity == "warning" and
         (.summary | test("30 correctable PCIe AER errors in the last 10m on gpu 0000:00:06.0 \\(RxErr \\+30\\), 30/min \\(limit 8/min\\); on 3 P2P paths"))' <<<"$H"
check "NVLink 0 of 0000:00:06.0: replay +4" \
  jq -e '.findings[] | select(.check == "health.nvlink") | .subject == "0000:00:06.0" and (.summary | test("NVLink 0 of GPU 0000:00:06.0: replay \\+4 errors"))' <<<"$H"
check "the new Xid 79 record is counted once: 2 for 0000:00:06.0, the 74 still 1" \
  jq -e '(.xid.counts[] | select(.gpu == "0000:00:06.0" and .xid == 79) | .count == 2) and (.xid.counts[] | select(.xid == 74) | .count == 1)' <<<"$H"

record status GET /v1/status
check "/v1/status carries the health summary" \
  jq -e '.health.enabled and .health.findings_error >= 2 and .health.findings_warning >= 3 and (.health.findings | any(test("^error health.xid 0000:00:06.0: Xid 79")))' <<<"$BODY"
check "p2pnode status lists the health findings" bash -c "'$BIN' status --url '$URL' | grep -q '^  error health.xid 0000:00:06.0: Xid 79'"
record metrics GET /metrics
M=$BODY
check "p2pnode_gpu_xid_events_total counts the 79s" grep -q '^p2pnode_gpu_xid_events_total{gpu="0000:00:06.0",xid="79"} 2$' <<<"$M"
check "p2pnode_pcie_aer_errors_total for the GPU" grep -q '^p2pnode_pcie_aer_errors_total{device="0000:00:06.0",kind="gpu",type="correctable"} 30$' <<<"$M"
check "p2pnode_nvlink_errors_total sums the GPU's links" grep -q '^p2pnode_nvlink_errors_total{counter="replay",gpu="0000:00:06.0"} 9$' <<<"$M"
check "p2pnode_nvlink_active_links" grep -q '^p2pnode_nvlink_active_links{gpu="0000:00:07.0"} 2$' <<<"$M"
check "p2pnode_health_finding for the Xid" grep -q '^p2pnode_health_finding{check="health.xid",device="0000:00:06.0",severity="error"} 1$' <<<"$M"
check "p2pnode_pcie_link_degraded only where a link is degraded (none here)" test "$(grep -c '^p2pnode_pcie_link_degraded{' <<<"$M")" = 0
if require promtool; then
  check "promtool check metrics passes" bash -c "promtool check metrics < '$RESP/metrics.body'"
  # The alert rules on what this daemon exported: the Xid alert fires on its finding series.
  series=$(grep '^p2pnode_health_finding{check="health.xid",device="0000:00:06.0"' <<<"$M" | sed 's/ 1$//; s/{/{job="p2pnode",instance="n1:9470",/')
  cat > "$WORK/alerts_test.yml" <<YML
rule_files: [$SRC/prometheus/p2pnode-alerts.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {series: '$series', values: '1x5'}
    alert_rule_test:
      - eval_time: 2m
        alertname: P2pnodeGpuXid
        exp_alerts:
          - exp_labels: {severity: critical, job: p2pnode, instance: "n1:9470", check: health.xid, device: "0000:00:06.0"}
            exp_annotations:
              runbook_url: "docs/runbook.md#p2pnodegpuxid"
              summary: "n1:9470: GPU 0000:00:06.0 logged an Xid that takes it out of P2P"
              description: "The NVIDIA driver logged an Xid on 0000:00:06.0 in the health window (74 NVLink, 79 fallen off the bus, 48/95 memory, 119/120 GSP, …): GET /v1/health names it and what to do"
YML
  check "P2pnodeGpuXid fires on the scraped finding series" promtool test rules "$WORK/alerts_test.yml"
fi
check "the journal line for the Xid 79 finding" grep -q 'Xid 79 on GPU 0000:00:06.0' "$WORK/h200/log"

# The driver's own word (agent schema 2): GPU 06.0's recovery action drain_p2p takes the node out
# of P2P readiness until it clears; the P2P status of 06.0 -> 07.0 drops from OK; a fallen-off-the-
# bus report without an Xid number (three /dev/kmsg records, as 570 drivers print it) on 08.0.
driver() {  # driver ACTION READ: the two GPUs' documents with 06.0's recovery action and 06->07's read status
  python3 - "$P2PNODE_TEST_HEALTH_DOC" "$1" "$2" <<'PY'
import json, sys
path, action, read = sys.argv[1:]
d = json.load(open(path))
d["schema_version"] = 2
for g in d["gpus"]:
    g["recovery_action"] = action if g["pci_bus_id"] == "0000:00:06.0" else "none"
    g["recovery_problem"] = None
    g["pcie"] = {"replay": 1, "replay_rollover": 0, "gen": 5, "max_gen": 5, "width": 16, "max_width": 16}
    g["memory"] = {"remapped_correctable": 0, "remapped_uncorrectable": 0, "remap_pending": False, "remap_failure": False,
                   "volatile_uncorrected_ecc": 0}
pair = lambda a, b, r: {"gpu": a, "peer_gpu": b, "read": r, "write": "ok", "nvlink": "ok", "atomics": "ok", "pci": "not_supported"}
d["p2p_status"] = [pair("0000:00:06.0", "0000:00:07.0", read), pair("0000:00:07.0", "0000:00:06.0", "ok")]
json.dump(d, open(path + ".new", "w"))
PY
  mv "$P2PNODE_TEST_HEALTH_DOC.new" "$P2PNODE_TEST_HEALTH_DOC"
}
driver none ok
readyz_code() { curl -s -o "$WORK/readyz.json" -w '%{http_code}' "$URL/readyz"; }
wait_until 20 bash -c "curl -s '$URL/v1/health' | jq -e '.gpus | length == 2' >/dev/null" || fail "the driver's state read within 20 s"
check "/readyz 200 while the driver asks for nothing" test "$(readyz_code)" = 200
driver drain_p2p disabled_by_regkey
printf '%s\n' '3,2010,86395000000,-;NVRM: The NVIDIA GPU 0000:00:08.0' \
  '3,2011,86395000010,c;NVRM: (PCI ID: 10de:2335) installed in this system has' \
  '3,2012,86395000020,c;NVRM: fallen off the bus and is not responding to commands.' >> "$R/dev/kmsg"
wait_until 20 bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '$URL/readyz') = 503 ]" || fail "/readyz 503 within 20 s of drain_p2p"
record readyz_drain GET /readyz
check "/readyz 503 names the GPU, the driver's action and its pairs" \
  jq -e '(.reasons | any(test("health.recovery 0000:00:06.0: the driver.s recovery action for GPU 0000:00:06.0 is \"Drain P2P\": peer traffic to and from it must stop.*0000:00:06.0-0000:00:07.0")))' <<<"$BODY"
record health3 GET /v1/health
H=$BODY
check "health.recovery is an error finding with p2p_ready false" \
  jq -e '.findings[] | select(.check == "health.recovery") | .subject == "0000:00:06.0" and .severity == "error" and .observed.p2p_ready == false' <<<"$H"
check "health.p2p_status: the driver no longer allows reads 06.0 -> 07.0" \
  jq -e '.findings[] | select(.check == "health.p2p_status") | .subject == "0000:00:06.0" and (.summary | test("to 0000:00:07.0: read disabled_by_regkey"))' <<<"$H"
check "health.kernel: 08.0 fell off the bus (no Xid), its pairs named" \
  jq -e '.findings[] | select(.check == "health.kernel") | .subject == "0000:00:08.0" and .severity == "error" and (.summary | test("has fallen off the bus.*PCI ID 10de:2335.*0000:00:06.0-0000:00:08.0"))' <<<"$H"
record metrics2 GET /metrics
M=$BODY
check "p2pnode_gpu_recovery_action for the drained GPU" grep -q '^p2pnode_gpu_recovery_action{action="drain_p2p",gpu="0000:00:06.0"} 1$' <<<"$M"
check "and for no other GPU (none: no series)" test "$(grep -c '^p2pnode_gpu_recovery_action{' <<<"$M")" = 1
check "p2pnode_gpu_pcie_replays_total per GPU" grep -q '^p2pnode_gpu_pcie_replays_total{gpu="0000:00:07.0"} 1$' <<<"$M"
if require promtool; then
  series=$(grep '^p2pnode_gpu_recovery_action{' <<<"$M" | sed 's/ 1$//; s/{/{job="p2pnode",instance="n1:9470",/')
  cat > "$WORK/drain_test.yml" <<YML
rule_files: [$SRC/prometheus/p2pnode-alerts.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {series: '$series', values: '1x5'}
    alert_rule_test:
      - eval_time: 2m
        alertname: P2pnodeGpuDrainP2p
        exp_alerts:
          - exp_labels: {severity: critical, job: p2pnode, instance: "n1:9470", gpu: "0000:00:06.0", action: drain_p2p}
            exp_annotations:
              runbook_url: "docs/runbook.md#p2pnodegpudrainp2p"
              summary: "n1:9470: the driver asks to drain P2P on GPU 0000:00:06.0 (drain_p2p)"
              description: "NVML's GPU recovery action of 0000:00:06.0 is drain_p2p: peer traffic to and from it must stop, and the node answers /readyz 503 until the driver clears it. GET /v1/health names the GPU's pairs; nvidia-smi -q shows it under GPU Recovery Action"
YML
  check "P2pnodeGpuDrainP2p fires on the scraped series" promtool test rules "$WORK/drain_test.yml"
fi
driver none ok
wait_until 20 bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '$URL/readyz') = 200 ]" || fail "/readyz 200 again within 20 s of the action clearing"
check "/readyz 200 once the driver cleared the action" test "$(readyz_code)" = 200

# Uncorrected ECC errors rise on 07.0: a health.memory error, and a self-test run now says in its
# verdict that its integrity check ran on memory that cannot be trusted.
python3 - "$P2PNODE_TEST_HEALTH_DOC" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for g in d["gpus"]:
    if g["pci_bus_id"] == "0000:00:07.0": g["memory"]["volatile_uncorrected_ecc"] = 3
json.dump(d, open(sys.argv[1] + ".new", "w"))
PY
mv "$P2PNODE_TEST_HEALTH_DOC.new" "$P2PNODE_TEST_HEALTH_DOC"
wait_until 20 bash -c "curl -s '$URL/v1/health' | jq -e '.findings[] | select(.check == \"health.memory\" and .subject == \"0000:00:07.0\" and .severity == \"error\")' >/dev/null" ||
  fail "health.memory error for 0000:00:07.0 within 20 s"
LAST=$(curl -s "$URL/v1/selftest" | jq .started_unix)
curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" "$URL/v1/selftest"
wait_until 30 bash -c "[ \"\$(curl -s '$URL/v1/selftest' | jq .started_unix)\" != '$LAST' ]" || fail "a new self-test within 30 s"
record selftest_memory GET /v1/selftest
check "the self-test's verdict names the memory that cannot be trusted" \
  jq -e '.reasons | any(test("^integrity: its bytes were checked while the health pass found: GPU 0000:00:07.0 memory: uncorrected ECC errors \\+3"))' <<<"$BODY"
if ensure_validator; then
  validate_responses --recorded-only && pass "every response matches api/openapi.yaml" || fail "responses match api/openapi.yaml"
else
  fail "npm could not install the validator"
fi
stop_daemon h200
finish

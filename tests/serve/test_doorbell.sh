#!/bin/bash
# The daemon's side end to end: `p2pnode serve` on the 8x 4090 fixture whose NVMe
# 0000:87:00.0 is on vfio-pci, with a profile pairing it with GPU 0000:83:00.0. After the self-test
# the daemon runs the agent (a stand-in, agents/doorbell.sh, replaying the VM's recorded
# nvme_doorbell document turned into a GPU cell and a host cell for this drive) with
# `--cases nvme_doorbell --writer both --nvme bdf=…,serial=…,model=…,gpu=…`, then serves the verdict:
# /v1/selftest, /v1/status, /metrics (p2pnode_nvme_doorbell_ok{nvme,gpu,writer}), `p2pnode status`,
# and a failed GPU writer makes the node failed with the reason. Responses validated against
# api/openapi.yaml. Usage: test_doorbell.sh PATH-TO-p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_doorbell.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3

SERIAL=S64FNE0R700001
MODEL="SAMSUNG MZQL21T9HCJR-00A07"
profile() {  # the 8x 4090 profile plus the drive, by address, paired with the GPU beside it
  cp "$SRC/profiles/epyc-8x4090.yaml" "$WORK/epyc-doorbell.yaml"
  cat >>"$WORK/epyc-doorbell.yaml" <<YAML
nvme:
  noiommu: true
  drives:
    - address: "0000:87:00.0"
      driver: vfio-pci
      power_fixups: false
      pair_gpu: "0000:83:00.0"
YAML
  sed -i 's/^  name: epyc-8x4090$/  name: epyc-doorbell/' "$WORK/epyc-doorbell.yaml"
}
# doorbell_doc OUT GPU_STATUS: the VM's recorded document as p2pnode-agent would print it here.
doorbell_doc() {
  python3 - "$SRC/tests/unit/agent/data/nvme-doorbell-vm.json" "$1" "$2" "$SERIAL" "$MODEL" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1])); out, gpu_status, serial, model = sys.argv[2:6]
case = d["cases"][0]
host = case["cells"][0]
host.update({"nvme": "0000:87:00.0", "pair_gpu": "0000:83:00.0", "expected_serial": serial, "expected_model": model,
             "identify": {"serial": serial, "model": model}, "iommu": "noiommu"})
gpu = copy.deepcopy(host)
gpu["writer"] = "gpu"
gpu["step"] = 0
host["step"] = 1
if gpu_status == "failed":
    gpu["status"] = "failed"
    gpu["reason"] = ("gpu writer: cudaHostRegister(BAR0 doorbell page, cudaHostRegisterIoMemory|cudaHostRegisterMapped) "
                     "failed with cudaErrorInvalidValue: kernel 6.17.0-14-generic has no follow_pfn() [cause: module_io_memory_pfn]")
    for k in ("doorbell", "identify", "completion_us", "ready_ms"): gpu.pop(k, None)
case["cells"] = [gpu, host]
case["steps"] = 2
case["status"] = "failed" if gpu_status == "failed" else "passed"
d["status"] = "failed" if gpu_status == "failed" else "passed"
d["exit_code"] = 1 if gpu_status == "failed" else 0
d["summary"].update({"cases_passed": 0 if gpu_status == "failed" else 1, "cases_failed": 1 if gpu_status == "failed" else 0})
json.dump(d, open(out, "w"), indent=1)
PY
}
node() {  # node NAME GPU_STATUS
  make_node "$1" epyc-8x4090-4nvme "$WORK/epyc-doorbell.yaml"
  local root="$WORK/$1/root" gpus
  printf '{"schema_version": 1, "drives": [{"serial": "%s", "model": "%s", "address": "0000:87:00.0"}]}\n' \
    "$SERIAL" "$MODEL" > "$root/var/lib/p2pnode/nvme-serials.json"
  gpus=$("$BIN" check --root "$root" --json | jq -r '[.node.gpus[].bdf] | join(" ")')
  python3 "$SRC/tests/serve/synth_agent_result.py" "$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json" $gpus > "$WORK/$1/result.json"
  doorbell_doc "$WORK/$1/doorbell.json" "$2"
  write_config "$1" "$SRC/tests/serve/agents/doorbell.sh" \
    "[\"$WORK/$1/result.json\", \"$WORK/$1/doorbell.json\", \"$WORK/$1/args.log\"]" "apply: false"
}
profile

# --- both writers pass ---
node ok passed
start_daemon ok || exit 1
check "the agent was asked for the doorbell of the paired drive, both writers" \
  grep -q -- "--cases nvme_doorbell --writer both --nvme bdf=0000:87:00.0,serial=$SERIAL,model=$MODEL,gpu=0000:83:00.0" "$WORK/ok/args.log"
check "the ordinary self-test ran first, without nvme_doorbell" bash -c "head -1 '$WORK/ok/args.log' | grep -vq nvme_doorbell"
record selftest_ok GET /v1/selftest
check "/v1/selftest: nvme_doorbell passed" jq -e '.nvme_doorbell.verdict == "passed"' "$RESP/selftest_ok.body"
check "/v1/selftest: gpu and host writer both ok, on the drive and GPU" \
  jq -e '[.nvme_doorbell.results[] | "\(.writer) \(.nvme) \(.gpu) \(.ok) \(.serial)"] == ["gpu 0000:87:00.0 0000:83:00.0 true '$SERIAL'", "host 0000:87:00.0 0000:83:00.0 true '$SERIAL'"]' \
  "$RESP/selftest_ok.body"
record status_ok GET /v1/status
check "/v1/status: two doorbell lines" jq -e '.nvme_doorbell.lines | length == 2' "$RESP/status_ok.body"
check "/v1/status: no doorbell reason" bash -c "! jq -r '.reasons[]' '$RESP/status_ok.body' | grep -q 'NVMe doorbell'"
curl -sf "$URL/metrics" > "$WORK/metrics_ok.txt"
check "metric: gpu writer 1" grep -q '^p2pnode_nvme_doorbell_ok{gpu="0000:83:00.0",nvme="0000:87:00.0",writer="gpu"} 1$' "$WORK/metrics_ok.txt"
check "metric: host writer 1" grep -q '^p2pnode_nvme_doorbell_ok{gpu="0000:83:00.0",nvme="0000:87:00.0",writer="host"} 1$' "$WORK/metrics_ok.txt"
"$BIN" status --url "$URL" > "$WORK/status_ok.txt" 2>&1
check "p2pnode status: the GPU line a person reads" \
  grep -q "^NVMe doorbell: 0000:87:00.0 <- GPU 0000:83:00.0, gpu writer: OK, the drive answered Identify (serial $SERIAL) in [0-9]* us$" "$WORK/status_ok.txt"
check "p2pnode status: the host line" grep -q "^NVMe doorbell: 0000:87:00.0 <- GPU 0000:83:00.0, host writer: OK" "$WORK/status_ok.txt"

# --- the GPU cannot register the doorbell page (seed 002's unpatched module) ---
node bad failed
start_daemon bad || exit 1
record status_bad GET /v1/status
check "a failed GPU writer makes the node failed" jq -e '.state == "failed"' "$RESP/status_bad.body"
check "the reason names the drive, the writer, the GPU and the cause" bash -c \
  "jq -r '.reasons[]' '$RESP/status_bad.body' | grep -q 'NVMe doorbell: 0000:87:00.0 (gpu writer, GPU 0000:83:00.0): gpu writer: cudaHostRegister.*module_io_memory_pfn'"
curl -sf "$URL/metrics" > "$WORK/metrics_bad.txt"
check "metric: gpu writer 0" grep -q '^p2pnode_nvme_doorbell_ok{gpu="0000:83:00.0",nvme="0000:87:00.0",writer="gpu"} 0$' "$WORK/metrics_bad.txt"
check "metric: host writer still 1 (the GPU side is what is broken)" \
  grep -q '^p2pnode_nvme_doorbell_ok{gpu="0000:83:00.0",nvme="0000:87:00.0",writer="host"} 1$' "$WORK/metrics_bad.txt"
"$BIN" status --url "$URL" > "$WORK/status_bad.txt" 2>&1
check "p2pnode status: the failed line" grep -q "^NVMe doorbell: 0000:87:00.0 <- GPU 0000:83:00.0, gpu writer: FAILED: gpu writer: cudaHostRegister" "$WORK/status_bad.txt"
record selftest_bad GET /v1/selftest

if ensure_validator; then
  validate_responses --recorded-only && pass "every response matches api/openapi.yaml" || fail "responses match api/openapi.yaml"
else
  fail "OpenAPI validation: npm could not install openapi-response-validator and swagger-parser (npm is installed by scripts/install-deps.sh test; its output is above)"
fi
finish

#!/bin/bash
# The passive health pass in a real kernel: one boot (QEMU/TCG, Debian's kernel, busybox initramfs)
# with an emulated NVMe drive behind a pcie-root-port (which has an AER capability) and QEMU's HMP
# monitor on a socket. When the guest (tests/vm/guest/health.sh) has `p2pnode serve` watching,
# the host injects a correctable Receiver Error and then an uncorrectable non-fatal Completion
# Timeout at the root port (`pcie_aer_inject_error`); the kernel's AER driver counts what reaches it
# in sysfs and the daemon must report the rise as a finding and a metric. QEMU 7.2 forwards only
# uncorrectable messages (hw/pci/pcie_aer.c: pcie_aer_msg_alldev), so the correctable injection is
# shown, not asserted. The two scrapes then go through promtool against the alert rules.
# Usage: bash tests/vm/test_health_vm.sh path/to/p2pnode. Exit 0 passed, 1 failed, 77 skipped.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
P2PNODE=$(readlink -f "${1:-build/daemon/p2pnode}")
SERVE_BIN=$(dirname "$P2PNODE")/p2pnode-serve
[ -x "$SERVE_BIN" ] || { echo "FAIL: $SERVE_BIN is missing (p2pnode serve execs it; build both)"; exit 1; }
require python3 jq promtool  # python3: QEMU's monitor socket
JQ=$(command -v jq)

vm_prepare "$P2PNODE"
vm_add_program "$SERVE_BIN" /bin/p2pnode-serve
vm_add_program "$JQ" /bin/jq
vm_pack
log=$VM_TMP/health.log
mon=$VM_TMP/monitor.sock
# The injector: waits for the guest's marker on the console, then speaks HMP on the monitor socket.
inject() {
  local n=0
  until grep -q '^P2P-INJECT-AER' "$log" 2>/dev/null; do
    sleep 0.2; n=$((n + 1)); [ $n -lt 1500 ] || return 1
  done
  python3 - "$mon" >"$VM_TMP/monitor.out" 2>&1 <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
def cmd(c):
    s.sendall(c.encode() + b"\n")
    time.sleep(0.5)
    try:
        return s.recv(65536).decode(errors="replace")
    except socket.timeout:
        return ""
cmd("")
for c in ("pcie_aer_inject_error -c rp1 0x1", "pcie_aer_inject_error rp1 0x4000"):
    out = cmd(c)
    print(c, "->", "OK" if "OK id: rp1" in out else out.strip().splitlines()[-1:] )
PY
}
inject &
injector=$!
t0=$(date +%s)
truncate -s 64M $VM_TMP/h.img
vm_boot health "" -monitor unix:$mon,server,nowait \
  -device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1 \
  -drive file=$VM_TMP/h.img,if=none,id=h,format=raw -device nvme,serial=P2PVM-H,drive=h,bus=rp1
echo "vm: one boot in $(( $(date +%s) - t0 )) s"
kill $injector 2>/dev/null; wait $injector 2>/dev/null
echo "monitor: $(tr '\n' ';' < "$VM_TMP/monitor.out" 2>/dev/null)"
grep -q 'pcie_aer_inject_error rp1 0x4000 -> OK' "$VM_TMP/monitor.out" 2>/dev/null ||
  echo "P2P-CHECK FAIL QEMU accepted the injection at rp1 (monitor said: $(cat "$VM_TMP/monitor.out" 2>/dev/null))" >>"$log"

# The alert rule on the two scrapes the guest printed (before and after the injection).
if true; then
  before=$(sed -n 's/^P2P-METRIC-BEFORE //p' "$log" | tr -d '\r')
  after=$(sed -n 's/^P2P-METRIC-AFTER //p' "$log" | tr -d '\r')
  series=$(sed 's/{/{job="p2pnode",instance="vm:9470",/' <<<"${after% *}")
  if [ -n "$before" ] && [ -n "$after" ]; then
    cat >"$VM_TMP/alert_test.yml" <<YML
rule_files: [$here/../../prometheus/p2pnode-alerts.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {series: '$series', values: '${before##* } ${before##* } ${after##* } ${after##* } ${after##* }'}
    alert_rule_test:
      - {eval_time: 1m, alertname: P2pnodePcieAerUncorrectable, exp_alerts: []}
      - eval_time: 3m
        alertname: P2pnodePcieAerUncorrectable
        exp_alerts:
          - exp_labels: {severity: critical, job: p2pnode, instance: "vm:9470", device: "0000:00:02.0", kind: bridge, type: nonfatal}
            exp_annotations:
              runbook_url: "docs/runbook.md#p2pnodepcieaeruncorrectable"
              summary: "vm:9470: uncorrectable (nonfatal) PCIe AER errors on bridge 0000:00:02.0"
              description: "The kernel counted uncorrectable AER errors on 0000:00:02.0 in the last 10 minutes; P2P transfers through it can be dropped or corrupted. GET /v1/health names the error types and the GPU pairs whose path crosses it"
YML
    if promtool test rules "$VM_TMP/alert_test.yml" >"$VM_TMP/promtool.out" 2>&1; then
      echo "P2P-CHECK PASS alert P2pnodePcieAerUncorrectable fires on the VM's scrapes ($before -> $after)" >>"$log"
    else
      echo "P2P-CHECK FAIL alert on the VM's scrapes: $(tr '\n' ' ' <"$VM_TMP/promtool.out")" >>"$log"
    fi
  else
    echo "P2P-CHECK FAIL the guest printed no before/after metric lines" >>"$log"
  fi
else
  echo "P2P-INFO promtool not installed: the alert on the VM's scrapes is not checked" >>"$log"
fi
vm_report health

# The health scenario, sourced by /init after scenarios.sh: `p2pnode serve` with a health pass every
# second watches the emulated drive and the PCIe root port it sits behind; the host injects AER
# errors at that root port through QEMU's monitor (pcie_aer_inject_error) when this prints
# P2P-INJECT-AER; the real kernel's AER driver counts them in sysfs and p2pnode must turn the rise
# into a finding and a metric.
hapi() { wget -q -O - "http://127.0.0.1:$PORT$1"; }
aer_total() { sed -n "s/^TOTAL_ERR_$2 //p" "$(dev $1)/aer_dev_$3"; }
health_has() { hapi /v1/health | jq -e "$1" >/dev/null; }
metric() { hapi /metrics | grep -F "$1"; }
status_errors() { hapi /v1/status | jq -e '.health.findings_error >= 1'; }

scenario_health() {
  ip link set lo up
  check "nvme bound the drive" load_nvme 1
  local b rp
  b=$(bdf_of_serial P2PVM-H)
  rp=$(port_of $b)
  show "drive P2PVM-H at $b behind root port $rp ($(cat $(dev $rp)/vendor):$(cat $(dev $rp)/device))"
  check "the root port has the kernel's AER statistics" test -r $(dev $rp)/aer_dev_nonfatal
  check "the drive has none (QEMU's nvme has no AER capability)" test ! -e $(dev $b)/aer_dev_correctable
  # Test harness, not p2pnode: QEMU forwards an error message up only with SERR# set in the port's
  # COMMAND register, which Linux leaves to the firmware and SeaBIOS leaves clear.
  local cmd
  cmd=$(cfg_u8 $rp 5)
  printf "\\$(printf %o $((cmd | 1)))" | dd of=$(dev $rp)/config bs=1 seek=5 count=1 conv=notrunc 2>/dev/null
  check "SERR# set on $rp for QEMU" eq $(( $(cfg_u8 $rp 5) & 1 )) 1
  (umask 077; mkdir -p /etc/p2pnode; echo 0123456789abcdef0123456789abcdef >/etc/p2pnode/token)
  /bin/p2pnode serve --config /guest/health/p2pnode.yaml --port-file /tmp/port >/tmp/serve.log 2>&1 &
  check "serve: listening" wait_for 60 test -s /tmp/port
  PORT=$(cat /tmp/port 2>/dev/null)
  check "health: two passes watching the drive and its root port" \
    wait_for 60 health_has ".passes >= 2 and ([.devices[] | select(.bdf == \"$rp\" and .kind == \"bridge\" and .aer.nonfatal.total == 0)] | length == 1)"
  hapi /v1/health >/tmp/h0.json
  check "health: no finding before the injection" jq -e '[.findings[] | select(.check == "health.aer")] | length == 0' /tmp/h0.json
  check "health: NVLink skipped, with the reason" jq -e '.nvlink.read == false and (.nvlink.skipped | test("no GPU"))' /tmp/h0.json
  check "metrics: the root port's nonfatal counter is 0" \
    metric "p2pnode_pcie_aer_errors_total{device=\"$rp\",kind=\"bridge\",type=\"nonfatal\"} 0"
  echo "P2P-METRIC-BEFORE $(metric "p2pnode_pcie_aer_errors_total{device=\"$rp\",kind=\"bridge\",type=\"nonfatal\"}")"
  local cor0
  cor0=$(aer_total $rp COR correctable)
  echo "P2P-INJECT-AER $rp"
  check "kernel: the root port counted the non-fatal error (TOTAL_ERR_NONFATAL 1, CmpltTO 1)" \
    wait_for 60 sh -c "[ \"\$(sed -n 's/^TOTAL_ERR_NONFATAL //p' $(dev $rp)/aer_dev_nonfatal)\" = 1 ] && grep -qx 'CmpltTO 1' $(dev $rp)/aer_dev_nonfatal"
  show "kernel: correctable total $cor0 -> $(aer_total $rp COR correctable) (QEMU does not forward correctable messages)"
  dmesg | grep -E 'AER|PCIe Bus Error' | tail -6 | sed 's/^/P2P-INFO kernel: /'
  check "health: an error finding health.aer on $rp on the path of $b" \
    wait_for 30 health_has ".findings[] | select(.check == \"health.aer\" and .subject == \"$rp\" and .severity == \"error\" and .observed.severity == \"nonfatal\" and .observed.on_paths_of == [\"$b\"])"
  hapi /v1/health >/tmp/h1.json
  jq -r '.findings[] | select(.check == "health.aer") | "P2P-INFO finding: \(.severity) \(.subject): \(.summary)"' /tmp/h1.json
  check "health: the finding names CmpltTO +1" jq -e '.findings[] | select(.check == "health.aer") | .summary | test("CmpltTO \\+1")' /tmp/h1.json
  check "metrics: p2pnode_pcie_aer_errors_total for $rp nonfatal is 1" \
    metric "p2pnode_pcie_aer_errors_total{device=\"$rp\",kind=\"bridge\",type=\"nonfatal\"} 1"
  check "metrics: p2pnode_health_finding for $rp" metric "p2pnode_health_finding{check=\"health.aer\",device=\"$rp\",severity=\"error\"} 1"
  echo "P2P-METRIC-AFTER $(metric "p2pnode_pcie_aer_errors_total{device=\"$rp\",kind=\"bridge\",type=\"nonfatal\"}")"
  check "status: the health summary counts the error" status_errors
  grep -q "health.aer\|AER error" /tmp/serve.log && show "daemon log: $(grep -m1 'AER error' /tmp/serve.log)"
}

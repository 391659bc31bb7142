# Run inside the VM by /init (scenario "doorbell"): the nvme_doorbell case's host writer
# (/bin/p2pnode-nvme-doorbell) on a drive p2pnode bound to vfio-pci, under intel-iommu (VFIO type1).
# BAR0 is also read independently with devmem (CC 0x14, CSTS 0x1c, AQA 0x24) while nobody holds
# the device, to see that the controller is left as found.
DB=/bin/p2pnode-nvme-doorbell

lc() { tr A-F a-f; }
regs() { echo "CC=$(bar0_reg32 $1 20 | lc) CSTS=$(bar0_reg32 $1 28 | lc) AQA=$(bar0_reg32 $1 36 | lc)"; }
doorbell_run() {  # doorbell_run OUT ARGS...: the exit status in OUT.rc, the document in OUT
  local out=$1
  shift
  timeout 120 $DB "$@" >"$out" 2>"$out.err"
  echo $? >"$out.rc"
  jq -c '.cases[0] | {status, reason, cells: [.cells[] | {nvme, writer, status, reason, iommu, identify,
    completion_us, ready_ms, found: .doorbell.found.cc, left: .doorbell.left.cc, log: .doorbell.log}]}' "$out" 2>/dev/null |
    sed 's/^/P2P-OUT /'
  sed 's/^/P2P-ERR /' "$out.err"
}
j() { jq -r "$2" "$1" 2>/dev/null; }  # j FILE FILTER

scenario_doorbell() {
  load_nvme 2
  local b k grp before after holder st
  b=$(bdf_of_serial P2PVM-DB)
  k=$(bdf_of_serial P2PVM-KEEP)
  check "doorbell: IOMMU on (/sys/class/iommu/dmar0)" test -e /sys/class/iommu/dmar0
  apply_json /tmp/apply.json $PROFILES/doorbell.yaml
  check "doorbell: p2pnode bound P2PVM-DB ($b) to vfio-pci" eq "$(driver $b)" vfio-pci
  check "doorbell: P2PVM-DB in D0 with Memory+BusMaster" sh -c "[ \"\$(cat $(dev $b)/power_state)\" = D0 ]"
  check "doorbell: P2PVM-KEEP ($k) left on nvme" eq "$(driver $k)" nvme
  check "doorbell: serial remembered before the bind" grep -q P2PVM-DB /var/lib/p2pnode/nvme-serials.json
  before=$(regs $b)
  # What the nvme driver left (its shutdown: EN=1, SHN=01, CSTS.SHST=10). vfio-pci resets the function
  # (reset_method below) when a process first opens the device, so run 1 finds the controller reset.
  show "devmem before the first VFIO open: $before; reset_method: $(cat $(dev $b)/reset_method 2>/dev/null)"

  # 1: as the daemon runs it: the drives on vfio-pci, serial and model from nvme-serials.json.
  doorbell_run /tmp/db1.json
  after=$(regs $b)
  show "devmem after run 1: $after"
  check "doorbell 1: exit 0" eq "$(cat /tmp/db1.json.rc)" 0
  check "doorbell 1: case passed" eq "$(j /tmp/db1.json '.cases[0].status')" passed
  check "doorbell 1: one cell, the drive on vfio-pci only" eq "$(j /tmp/db1.json '[.cases[0].cells[].nvme] | join(" ")')" "$b"
  check "doorbell 1: host writer" eq "$(j /tmp/db1.json '.cases[0].cells[0].writer')" host
  check "doorbell 1: VFIO type1 (IOMMU translating)" eq "$(j /tmp/db1.json '.cases[0].cells[0].iommu')" type1
  check "doorbell 1: Identify serial is QEMU's serial=" eq "$(j /tmp/db1.json '.cases[0].cells[0].identify.serial')" P2PVM-DB
  check "doorbell 1: Identify model as sysfs recorded" eq "$(j /tmp/db1.json '.cases[0].cells[0].identify.model')" \
    "$(jq -r '.drives[] | select(.serial=="P2PVM-DB") | .model' /var/lib/p2pnode/nvme-serials.json)"
  check "doorbell 1: completion success, CID 0x0D0B" eq "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.completion | "\(.status) \(.cid)"')" "success 3339"
  check "doorbell 1: controller found disabled" eq "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.found.enabled')" false
  check "doorbell 1: enabled and ready during the test" sh -c "jq -e '.cases[0].cells[0].ready_ms >= 0' /tmp/db1.json"
  check "doorbell 1: CC as found" eq "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.cc_as_found')" true
  check "doorbell 1: CSTS as found" eq "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.csts_as_found')" true
  check "doorbell 1: left disabled, not ready" eq "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.left | "\(.enabled) \(.ready)"')" "false false"
  check "doorbell 1: devmem reads what it left (CC, CSTS, AQA)" eq "$after" \
    "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.left | "CC=\(.cc) CSTS=\(.csts) AQA=\(.aqa)"')"
  check "doorbell 1: still on vfio-pci" eq "$(driver $b)" vfio-pci
  echo "P2P-DOC $(jq -c . /tmp/db1.json)"  # the whole document, for the record (tests/unit/agent/data)

  # 2: the same again, drive named on the command line with its model: the same registers.
  doorbell_run /tmp/db2.json --nvme "bdf=$b,serial=P2PVM-DB,model=QEMU NVMe Ctrl"
  check "doorbell 2: exit 0, passed" eq "$(cat /tmp/db2.json.rc) $(j /tmp/db2.json '.cases[0].status')" "0 passed"
  check "doorbell 2: found the same as run 1" eq "$(j /tmp/db2.json '.cases[0].cells[0].doorbell.found')" "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.found')"
  check "doorbell 2: left the same as run 1" eq "$(j /tmp/db2.json '.cases[0].cells[0].doorbell.left')" "$(j /tmp/db1.json '.cases[0].cells[0].doorbell.left')"
  check "doorbell 2: devmem CC/CSTS/AQA as after run 1" eq "$(regs $b)" "$after"

  # 3: a serial that is not this drive's: the identify check fails and names both.
  doorbell_run /tmp/db3.json --nvme "bdf=$b,serial=NOT-THIS-ONE"
  check "doorbell 3: wrong serial exits 1" eq "$(cat /tmp/db3.json.rc)" 1
  check "doorbell 3: names both serials" grep -q "Identify says serial 'P2PVM-DB', sysfs recorded 'NOT-THIS-ONE'" /tmp/db3.json
  check "doorbell 3: left as found all the same" eq "$(j /tmp/db3.json '.cases[0].cells[0].doorbell.cc_as_found')" true

  # 4: a drive on nvme is never touched.
  st=$(cat $(dev $k)/nvme/nvme*/state)
  doorbell_run /tmp/db4.json --nvme "bdf=$k,serial=P2PVM-KEEP"
  check "doorbell 4: drive on nvme: exit 0, waived" eq "$(cat /tmp/db4.json.rc) $(j /tmp/db4.json '.cases[0].status')" "0 waived"
  check "doorbell 4: the reason says so" grep -q "$k is on nvme, not vfio-pci: not touched" /tmp/db4.json
  check "doorbell 4: no register snapshot was taken" eq "$(j /tmp/db4.json '.cases[0].cells[0].doorbell')" null
  check "doorbell 4: still on nvme, controller $st" eq "$(driver $k) $(cat $(dev $k)/nvme/nvme*/state)" "nvme $st"
  check "doorbell 4: its namespace is still there" sh -c "ls /sys/block | grep -q '^nvme.n1'"

  # 5: a drive whose VFIO group another process holds (an application using it) is never touched.
  grp=$(basename "$(readlink $(dev $b)/iommu_group)")
  sleep 120 </dev/vfio/$grp &
  holder=$!
  sleep 1
  doorbell_run /tmp/db5.json --nvme "bdf=$b,serial=P2PVM-DB"
  check "doorbell 5: group held: exit 0, waived" eq "$(cat /tmp/db5.json.rc) $(j /tmp/db5.json '.cases[0].status')" "0 waived"
  check "doorbell 5: the reason names the holder's file" grep -q "$b is in use: another process holds /dev/vfio/$grp; not touched" /tmp/db5.json
  kill $holder
  wait $holder 2>/dev/null
  check "doorbell 5: devmem CC/CSTS/AQA as after run 1" eq "$(regs $b)" "$after"

  # 6: after the holder is gone the drive answers again.
  doorbell_run /tmp/db6.json --nvme "bdf=$b,serial=P2PVM-DB"
  check "doorbell 6: passes again" eq "$(cat /tmp/db6.json.rc) $(j /tmp/db6.json '.cases[0].status')" "0 passed"
  show "figures: run 1 ready $(j /tmp/db1.json '.cases[0].cells[0].ready_ms') ms, completion $(j /tmp/db1.json '.cases[0].cells[0].completion_us') us; run 2 $(j /tmp/db2.json '.cases[0].cells[0].ready_ms') ms, $(j /tmp/db2.json '.cases[0].cells[0].completion_us') us; whole program $(j /tmp/db1.json .duration_s) s"
}

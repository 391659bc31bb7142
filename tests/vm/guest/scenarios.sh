# Scenarios run inside the VM by /init. Each asserts on what the real kernel reports (sysfs, config
# space read with od, BAR0 through resource0 and /dev/mem) and prints one P2P-CHECK line per fact.
P2P=/bin/p2pnode
PROFILES=/guest/profiles

check() {  # check "what" COMMAND...: PASS when the command succeeds
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then echo "P2P-CHECK PASS $what"; else echo "P2P-CHECK FAIL $what"; fi
}
eq() { [ "$1" = "$2" ] || { echo "  (observed '$1', wanted '$2')" >&2; return 1; }; }
show() { echo "P2P-INFO $*"; }

wait_for() {  # wait_for SECONDS COMMAND...
  local n=$(( $1 * 10 ))
  shift
  while [ $n -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; n=$((n - 1)); done
  return 1
}

load_nvme() {
  modprobe nvme
  wait_for 20 test -e "/sys/class/nvme/nvme$(( $1 - 1 ))/serial"
}
# The PCI address of the controller with this serial (while bound to nvme).
bdf_of_serial() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(sed 's/ *$//' $c/serial)" = "$1" ] && basename "$(readlink -f $c/device)" && return 0
  done
  return 1
}
dev() { echo /sys/bus/pci/devices/$1; }
driver() { [ -e "$(dev $1)/driver" ] && basename "$(readlink -f $(dev $1)/driver)" || echo none; }
cfg_u8() { od -An -tu1 -j "$2" -N 1 "$(dev $1)/config" | tr -d ' '; }
cfg_u16() { od -An -tu2 -j "$2" -N 2 "$(dev $1)/config" | tr -d ' '; }
pm_cap() {  # walk the capability list from 0x34 to the PM capability (ID 1)
  local p
  p=$(cfg_u8 $1 52)
  while [ "${p:-0}" -ne 0 ]; do
    [ "$(cfg_u8 $1 $p)" -eq 1 ] && { echo $p; return 0; }
    p=$(cfg_u8 $1 $((p + 1)))
  done
  return 1
}
pmcsr_state() { echo "D$(( $(cfg_u16 $1 $(( $(pm_cap $1) + 4 ))) & 3 ))"; }
command_reg() { cfg_u16 $1 4; }
has_mem_bm() { [ $(( $(command_reg $1) & 6 )) -eq 6 ]; }
bar0_reg32() {  # devmem read of BAR0 + offset (an independent read, not p2pnode's)
  local start
  start=$(head -1 "$(dev $1)/resource" | cut -d' ' -f1)
  devmem $(( start + $2 )) 32
}
apply_json() {  # apply_json OUT PROFILE [ARGS]: p2pnode apply --json; the exit status in OUT.rc
  local out=$1 prof=$2
  shift 2
  $P2P apply --profile "$prof" --json "$@" >"$out" 2>"$out.err"
  echo $? >"$out.rc"
  sed 's/^/P2P-OUT /' "$out"
  sed 's/^/P2P-ERR /' "$out.err"
}
state() {
  show "$1: driver=$(driver $1) power_state=$(cat $(dev $1)/power_state) control=$(cat $(dev $1)/power/control)" \
    "pmcsr=$(pmcsr_state $1) command=$(printf 0x%04x $(command_reg $1)) override=$(cat $(dev $1)/driver_override)"
}

# 1, 4, 5: IOMMU on. The drive without fix-ups sits in D3hot; with them D0 and sane; a second apply
# writes nothing; after remove+rescan (nvme takes it back) apply --once restores it.
scenario_iommu() {
  load_nvme 1
  local b
  b=$(bdf_of_serial P2PVM-A)
  check "drive P2PVM-A found on nvme" eq "$(driver $b)" nvme
  check "IOMMU on: /sys/class/iommu/dmar0" test -e /sys/class/iommu/dmar0
  state $b
  show "PM capability at $(pm_cap $b)"

  apply_json /tmp/nofix.json $PROFILES/iommu-nofixups.yaml
  check "1a: apply without fix-ups exits 0" eq "$(cat /tmp/nofix.json.rc)" 0
  check "1a: bound to vfio-pci" eq "$(driver $b)" vfio-pci
  check "1a: /dev/vfio group appeared" sh -c 'ls /dev/vfio | grep -q "^[0-9]"'
  wait_for 10 sh -c "[ \"\$(cat $(dev $b)/power_state)\" = D3hot ]"
  state $b
  check "1a: without fix-ups power_state D3hot" eq "$(cat $(dev $b)/power_state)" D3hot
  check "1a: without fix-ups power/control auto" eq "$(cat $(dev $b)/power/control)" auto
  check "1a: without fix-ups PMCSR D3" eq "$(pmcsr_state $b)" D3

  apply_json /tmp/fix.json $PROFILES/iommu.yaml
  state $b
  check "1: apply with fix-ups exits 0" eq "$(cat /tmp/fix.json.rc)" 0
  check "1: on vfio-pci" eq "$(driver $b)" vfio-pci
  check "1: power_state D0" eq "$(cat $(dev $b)/power_state)" D0
  check "1: power/control on" eq "$(cat $(dev $b)/power/control)" on
  check "1: PMCSR D0 (capability list walked)" eq "$(pmcsr_state $b)" D0
  check "1: COMMAND has Memory+BusMaster" has_mem_bm $b
  check "1: p2pnode read VS 1.4.0 through resource0" grep -q '"version": "1.4.0"' /tmp/fix.json
  check "1: p2pnode read CAP not all-Fs" sh -c "grep '\"cap\":' /tmp/fix.json | grep -vq ffffffffffffffff"
  local vs cap
  vs=$(bar0_reg32 $b 8)
  cap=$(bar0_reg32 $b 0)
  show "devmem: CAP(low)=$cap VS=$vs"
  check "1: BAR0 VS via devmem 0x00010400" eq "$vs" 0x00010400
  check "1: BAR0 CAP via devmem not all-Fs" sh -c "[ '$cap' != 0xFFFFFFFF ] && [ -n '$cap' ]"
  sleep 2
  check "1: still D0 two seconds later" eq "$(cat $(dev $b)/power_state)" D0
  check "1: serial remembered" grep -q P2PVM-A /var/lib/p2pnode/nvme-serials.json

  apply_json /tmp/again.json $PROFILES/iommu.yaml
  check "5: second apply exits 0" eq "$(cat /tmp/again.json.rc)" 0
  check "5: second apply performs no write" grep -q '"writes": 0' /tmp/again.json
  check "5: second apply has no step" grep -q '"steps": \[\]' /tmp/again.json
  $P2P plan --profile $PROFILES/iommu.yaml >/tmp/plan.txt 2>&1
  sed 's/^/P2P-OUT /' /tmp/plan.txt
  check "5: plan is empty" grep -q ', 0 step(s)' /tmp/plan.txt

  echo 1 >$(dev $b)/remove
  echo 1 >/sys/bus/pci/rescan
  wait_for 20 test -e $(dev $b)/driver
  wait_for 20 test -e /sys/bus/pci/devices/$b/nvme
  state $b
  check "4: after remove+rescan nvme took the drive back" eq "$(driver $b)" nvme
  apply_json /tmp/rescan.json $PROFILES/iommu.yaml --once
  state $b
  check "4: apply --once exits 0" eq "$(cat /tmp/rescan.json.rc)" 0
  check "4: back on vfio-pci" eq "$(driver $b)" vfio-pci
  check "4: power_state D0" eq "$(cat $(dev $b)/power_state)" D0
  check "4: PMCSR D0" eq "$(pmcsr_state $b)" D0
  check "4: COMMAND has Memory+BusMaster" has_mem_bm $b

  # Recovery: put the drive in D3hot through PMCSR behind the kernel's back (the kernel still says
  # D0, power/control is already on): the fix-ups cannot reach D0, so apply removes and rescans it
  # with the override re-applied, and the fresh bind plus fix-ups bring it back.
  local pm
  pm=$(pm_cap $b)
  printf '\003\000' | dd of=$(dev $b)/config bs=1 seek=$((pm + 4)) conv=notrunc 2>/dev/null
  state $b
  check "4b: PMCSR forced to D3 while the kernel says $(cat $(dev $b)/power_state)" eq "$(pmcsr_state $b)" D3
  $P2P apply --once --profile $PROFILES/iommu.yaml >/tmp/recover.out 2>&1
  echo $? >/tmp/recover.rc
  sed 's/^/P2P-OUT /' /tmp/recover.out
  state $b
  check "4b: apply exits 0" eq "$(cat /tmp/recover.rc)" 0
  check "4b: it recovered by remove+rescan" grep -q "remove+rescan, attempt 1" /tmp/recover.out
  check "4b: on vfio-pci with the override re-applied" eq "$(driver $b):$(cat $(dev $b)/driver_override)" vfio-pci:vfio-pci
  check "4b: PMCSR D0" eq "$(pmcsr_state $b)" D0
  check "4b: power_state D0" eq "$(cat $(dev $b)/power_state)" D0
  check "4b: COMMAND has Memory+BusMaster" has_mem_bm $b
}

# 2: two drives, one with a mounted filesystem holding a file: refused with every reason, still on
# nvme, the file unchanged; the other bound; `check` names the refusal as an error on that drive.
scenario_refuse() {
  load_nvme 2
  modprobe crc32c_generic
  modprobe ext4
  local data free ns sum1 sum2
  data=$(bdf_of_serial P2PVM-DATA)
  free=$(bdf_of_serial P2PVM-FREE)
  ns=/dev/$(basename $(dev $data)/nvme/nvme*)n1
  mke2fs -q "$ns" >/dev/null 2>&1
  mkdir -p /mnt/data
  mount -t ext2 "$ns" /mnt/data
  check "2: the data drive's filesystem is mounted" grep -q "^$ns /mnt/data " /proc/mounts
  dd if=/dev/urandom of=/mnt/data/payload bs=64k count=16 2>/dev/null
  sync
  sum1=$(sha256sum /mnt/data/payload | cut -d' ' -f1)
  show "data drive $data ($ns), free drive $free, payload $sum1"
  $P2P plan --profile $PROFILES/refuse.yaml >/tmp/plan.txt 2>&1
  sed 's/^/P2P-OUT /' /tmp/plan.txt
  check "2: plan shows the refusal" grep -q "refusing to unbind $data" /tmp/plan.txt
  apply_json /tmp/refuse.json $PROFILES/refuse.yaml
  check "2: apply exits non-zero (a refusal is a finding)" sh -c "[ \$(cat /tmp/refuse.json.rc) -ne 0 ]"
  check "2: refused outcome" grep -q '"outcome": "refused"' /tmp/refuse.json
  check "2: reason: mounted at /mnt/data" grep -q "n1 is mounted at /mnt/data" /tmp/refuse.json
  check "2: reason: carries data: ext2" grep -q "n1 carries data: ext2" /tmp/refuse.json
  check "2: refused drive still on nvme" eq "$(driver $data)" nvme
  check "2: refused drive override untouched" eq "$(cat $(dev $data)/driver_override)" "(null)"
  check "2: the other drive bound to vfio-pci" eq "$(driver $free)" vfio-pci
  check "2: the other drive D0" eq "$(cat $(dev $free)/power_state)" D0
  # check: the refusal is a finding on the data drive itself (not "ok ... on nvme"), with its reasons
  $P2P check --profile $PROFILES/refuse.yaml >/tmp/check.txt 2>&1
  echo $? >/tmp/check.rc
  sed 's/^/P2P-OUT /' /tmp/check.txt
  check "2: check exits 1 (an error finding)" eq "$(cat /tmp/check.rc)" 1
  check "2: check: nvme.binding error on the refused drive" \
    grep -q "^ERROR *nvme.binding *$data *on nvme, the profile wants vfio-pci (serial P2PVM-DATA), refused: " /tmp/check.txt
  check "2: check: with the reasons (mounted, data)" \
    sh -c "grep \"nvme.binding *$data\" /tmp/check.txt | grep 'n1 is mounted at /mnt/data' | grep -q 'n1 carries data: ext2'"
  check "2: check: the bound drive is ok" grep -q "^ok *nvme.binding *$free *on vfio-pci, D0" /tmp/check.txt
  echo 3 >/proc/sys/vm/drop_caches
  sum2=$(sha256sum /mnt/data/payload | cut -d' ' -f1)
  check "2: file checksum unchanged" eq "$sum2" "$sum1"
  check "2: still mounted" grep -q " /mnt/data " /proc/mounts
  umount /mnt/data
}

# 3: IOMMU off, noiommu asked for, Debian's kernel has no CONFIG_VFIO_NOIOMMU.
scenario_noiommu() {
  load_nvme 1
  local b
  b=$(bdf_of_serial P2PVM-A)
  check "3: no IOMMU units" sh -c '[ -z "$(ls /sys/class/iommu 2>/dev/null)" ]'
  apply_json /tmp/noiommu.json $PROFILES/noiommu.yaml
  check "3: apply exits non-zero" sh -c "[ \$(cat /tmp/noiommu.json.rc) -ne 0 ]"
  check "3: error names CONFIG_VFIO_NOIOMMU" grep -q CONFIG_VFIO_NOIOMMU /tmp/noiommu.json
  check "3: error says nothing was unbound" grep -q "nothing was unbound" /tmp/noiommu.json
  check "3: kernel really lacks the parameter" test ! -e /sys/module/vfio/parameters/enable_unsafe_noiommu_mode
  check "3: still on nvme" eq "$(driver $b)" nvme
  check "3: driver_override untouched" eq "$(cat $(dev $b)/driver_override)" "(null)"
  check "3: namespace still there" test -b /dev/nvme0n1
  apply_json /tmp/iommuoff.json $PROFILES/iommu.yaml
  check "3: without noiommu: refused before loading anything" grep -q "nvme.noiommu: true" /tmp/iommuoff.json
  check "3: still on nvme after both" eq "$(driver $b)" nvme
}

# scripts/bench-nvme-vm.sh: nvme -> vfio-pci/D0 with p2pnode, beside seed 002's shell procedure
# (modprobe, driver_override, unbind, drivers_probe, power/control=on, setpci PMCSR=D0, setpci
# COMMAND=0x0006) on the same drive, alternating, ROUNDS times. Needs /bin/nsclock and setpci.
to_nvme() {  # back to nvme, untimed
  echo >$(dev $1)/driver_override
  echo $1 >/sys/bus/pci/drivers/vfio-pci/unbind
  echo $1 >/sys/bus/pci/drivers_probe
  wait_for 20 test -e $(dev $1)/nvme
  wait_for 20 sh -c "cat $(dev $1)/nvme/nvme*/serial"
}
on_vfio_d0() { [ "$(driver $1)" = vfio-pci ] && [ "$(cat $(dev $1)/power_state)" = D0 ]; }
seed_procedure() {  # seed 002, with this device's PMCSR offset (0x60 + 4 here, 0x84 on the SN530)
  local b=$1 pmcsr
  pmcsr=$(printf %x $(( $(pm_cap $b) + 4 )))
  modprobe vfio-pci
  echo vfio-pci >/sys/bus/pci/devices/$b/driver_override
  echo $b >/sys/bus/pci/drivers/nvme/unbind
  echo $b >/sys/bus/pci/drivers_probe
  echo on >/sys/bus/pci/devices/$b/power/control
  setpci -s $b $pmcsr.W=0x0008
  setpci -s $b COMMAND=0x0006
}
# QEMU's pcie-root-port has an ACS capability and Linux turns its redirect bits on when
# the (virtual) IOMMU is on; apply must clear them on the real kernel, and the read-back shows it.
acs_cap() {  # walk the extended capability list from 0x100 to ACS (ID 0x000d)
  local p=256 h
  while [ "$p" -ne 0 ]; do
    h=$(od -An -tu4 -j $p -N 4 "$(dev $1)/config" | tr -d ' ')
    [ $(( h & 65535 )) -eq 13 ] && { echo $p; return 0; }
    p=$(( (h >> 20) & 4092 ))
  done
  return 1
}
acs_ctl() { cfg_u16 $1 $(( $(acs_cap $1) + 6 )); }
port_of() { basename "$(dirname "$(readlink -f $(dev $1))")"; }

scenario_acs() {
  load_nvme 2
  local a b ra rb
  a=$(bdf_of_serial P2PVM-A)
  b=$(bdf_of_serial P2PVM-B)
  ra=$(port_of $a)
  rb=$(port_of $b)
  show "drives $a under $ra, $b under $rb"
  check "acs: the drives sit behind two root ports" sh -c "[ -n '$ra' ] && [ '$ra' != '$rb' ]"
  check "acs: the root port has an ACS capability" acs_cap $ra
  show "ACS control before: $ra=$(printf 0x%04x $(acs_ctl $ra)) $rb=$(printf 0x%04x $(acs_ctl $rb))"
  check "acs: Linux set P2P request+completion redirect (IOMMU on)" sh -c "[ $(( $(acs_ctl $ra) & 12 )) -eq 12 ]"
  sed "s/@A@/$a/; s/@B@/$b/" $PROFILES/acs.yaml >/tmp/acs.yaml
  # --verbose: a row per bridge (the table groups the two ports' identical findings into one row)
  $P2P check --verbose --profile /tmp/acs.yaml >/tmp/acs-check.txt 2>&1
  sed 's/^/P2P-OUT /' /tmp/acs-check.txt
  check "acs: check names the redirect on $ra" grep -q "ERROR *pcie.acs *$ra" /tmp/acs-check.txt
  $P2P plan --profile /tmp/acs.yaml >/tmp/acs-plan.txt 2>&1
  sed 's/^/P2P-OUT /' /tmp/acs-plan.txt
  check "acs: plan clears ACS on $ra" grep -q "pcie.acs  $ra" /tmp/acs-plan.txt
  apply_json /tmp/acs.json /tmp/acs.yaml
  show "ACS control after: $ra=$(printf 0x%04x $(acs_ctl $ra)) $rb=$(printf 0x%04x $(acs_ctl $rb))"
  check "acs: apply exits 0" eq "$(cat /tmp/acs.json.rc)" 0
  check "acs: redirect and egress bits clear on $ra (read back)" sh -c "[ $(( $(acs_ctl $ra) & 60 )) -eq 0 ]"
  check "acs: redirect and egress bits clear on $rb (read back)" sh -c "[ $(( $(acs_ctl $rb) & 60 )) -eq 0 ]"
  check "acs: source validation left as it was" sh -c "[ $(( $(acs_ctl $ra) & 1 )) -eq 1 ]"
  check "acs: the drives stay on nvme" eq "$(driver $a) $(driver $b)" "nvme nvme"
  $P2P check --profile /tmp/acs.yaml >/tmp/acs-check2.txt 2>&1
  check "acs: check no longer reports ACS" sh -c "! grep -q 'ERROR *pcie.acs' /tmp/acs-check2.txt"
  apply_json /tmp/acs2.json /tmp/acs.yaml
  check "acs: second apply performs no write" grep -q '"writes": 0' /tmp/acs2.json
}

scenario_bench() {
  load_nvme 1
  modprobe vfio-pci
  local b rounds t0 t1 i
  b=$(bdf_of_serial P2PVM-A)
  rounds=$(sed -n 's/.*p2p\.rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
  for i in $(seq 1 ${rounds:-5}); do
    t0=$(nsclock)
    $P2P apply --once --profile $PROFILES/iommu.yaml >/tmp/bench.out 2>&1
    wait_for 10 on_vfio_d0 $b
    t1=$(nsclock)
    check "bench round $i: p2pnode reached vfio-pci/D0" on_vfio_d0 $b
    echo "P2P-BENCH p2pnode $(( t1 - t0 ))"
    t0=$(nsclock)
    $P2P apply --once --profile $PROFILES/iommu.yaml >/tmp/bench.out 2>&1
    t1=$(nsclock)
    echo "P2P-BENCH p2pnode_noop $(( t1 - t0 ))"
    t0=$(nsclock)
    $P2P --version >/dev/null 2>&1
    t1=$(nsclock)
    echo "P2P-BENCH p2pnode_start $(( t1 - t0 ))"
    to_nvme $b
    t0=$(nsclock)
    seed_procedure $b >/tmp/seed.out 2>&1
    wait_for 10 on_vfio_d0 $b
    t1=$(nsclock)
    check "bench round $i: shell procedure reached vfio-pci/D0" on_vfio_d0 $b
    echo "P2P-BENCH shell $(( t1 - t0 ))"
    to_nvme $b
  done
}

# The driver scenario, sourced by /init after scenarios.sh. The host built the miniature
# open-gpu-kernel-modules tree (tests/vm/nvidia-mini) through real DKMS with `p2pnode apply` and
# copied the result in: /usr/src, /var/lib/dkms, p2pnode's stamp, the .ko files under
# /lib/modules/<kernel>/updates/dkms, the profiles in /guest/drv/, and a "stock" build of another
# version in /stock. kmod and DKMS (bash) are in /sbin, ahead of busybox.
DRV=/guest/drv
step_of() {  # step_of JSON ACTION FIELD: one field of the first step of that action
  jq -r --arg a "$2" --arg f "$3" '[.steps[] | select(.action == $a)][0][$f] // "none"' "$1"
}
loaded() { [ -d /sys/module/$1 ]; }
contains() { case "$1" in *"$2"*) return 0 ;; esac; echo "  ('$1' lacks '$2')" >&2; return 1; }

scenario_driver() {
  export PATH=/sbin:/bin
  local want stock
  want=$(cat $DRV/want-version)
  stock=$(cat $DRV/stock-version)
  show "dkms status: $(dkms status 2>&1 | tr '\n' ' ')"
  check "dkms status in the guest: installed, no warning" sh -c "dkms status 2>&1 | grep -q ': installed$'"
  check "modinfo -n nvidia is the DKMS copy" sh -c "modinfo -n nvidia | grep -q /updates/dkms/nvidia.ko"

  # The box as the stock driver left it: another version loaded, nvidia-uvm on top.
  insmod /stock/nvidia.ko && insmod /stock/nvidia-uvm.ko
  check "stock $stock loaded" eq "$(cat /sys/module/nvidia/version)" "$stock"

  # A profile that does not allow a reload: plan and apply say reboot required, nothing unloaded.
  $P2P plan --json --profile $DRV/noreload.yaml >/tmp/nr-plan.json 2>/tmp/nr-plan.err
  sed 's/^/P2P-OUT /' /tmp/nr-plan.json
  check "plan without reload.allow: driver.module has no step (DKMS copy in place)" \
    eq "$(jq '[.steps[] | select(.action == "driver.module")] | length' /tmp/nr-plan.json)" 0
  check "plan without reload.allow: driver.reload says reboot required" \
    eq "$(jq '[.steps[] | select(.action == "driver.reload")][0].reboot_required' /tmp/nr-plan.json)" true
  apply_json /tmp/nr.json $DRV/noreload.yaml
  check "apply without reload.allow: driver.reload reboot_required" eq "$(step_of /tmp/nr.json driver.reload outcome)" reboot_required
  check "apply without reload.allow: stock still loaded" eq "$(cat /sys/module/nvidia/version)" "$stock"

  # A process holds /dev/nvidiactl: refused, with its pid and name; nothing unloaded.
  sleep 600 </dev/nvidiactl &
  local holder=$!
  wait_for 5 sh -c "ls -l /proc/$holder/fd | grep -q nvidiactl"
  apply_json /tmp/held.json $DRV/reload.yaml
  check "held: driver.reload refused" eq "$(step_of /tmp/held.json driver.reload outcome)" refused
  check "held: the message names the holder's pid" contains "$(step_of /tmp/held.json driver.reload message)" "$holder (sleep)"
  check "held: apply exits 1" eq "$(cat /tmp/held.json.rc)" 1
  check "held: stock still loaded" eq "$(cat /sys/module/nvidia/version)" "$stock"
  check "held: nvidia_uvm still loaded" loaded nvidia_uvm
  kill $holder
  wait $holder 2>/dev/null

  # Nobody holds it: p2pnode unloads uvm then nvidia (the kernel refuses the other order: uvm
  # uses nvidia's symbol), loads the DKMS copy and verifies it.
  $P2P plan --json --profile $DRV/reload.yaml >/tmp/plan.json 2>&1
  check "plan: reload, unloading nvidia_uvm then nvidia" \
    eq "$(jq -c '[.steps[] | select(.action == "driver.reload")][0].details | [.decision, .unload]' /tmp/plan.json)" \
    '["reload",["nvidia_uvm","nvidia"]]'
  apply_json /tmp/reload.json $DRV/reload.yaml
  show "dmesg: $(dmesg | grep -E 'NVRM|nvidia' | tail -4 | tr '\n' '|')"
  check "reload: apply exits 0" eq "$(cat /tmp/reload.json.rc)" 0
  check "reload: driver.reload changed" eq "$(step_of /tmp/reload.json driver.reload outcome)" changed
  check "reload: /sys/module/nvidia/version is the profile's" eq "$(cat /sys/module/nvidia/version)" "$want"
  check "reload: /proc/driver/nvidia/version says so" grep -q "Kernel Module for x86_64  $want " /proc/driver/nvidia/version
  check "reload: loaded srcversion is the DKMS copy's" \
    eq "$(cat /sys/module/nvidia/srcversion)" "$(modinfo -F srcversion "$(ls /lib/modules/$(uname -r)/updates/dkms/nvidia.ko* | head -1)")"
  check "reload: nvidia_uvm loaded again" loaded nvidia_uvm
  check "reload: nvidia_uvm is the DKMS copy too" eq "$(cat /sys/module/nvidia_uvm/version)" "$want"
  check "reload: verified (no problem reported)" contains "$(step_of /tmp/reload.json driver.reload message)" "loaded from the DKMS copy and verified"

  # Everything in place: a second apply runs no dkms build, unloads nothing, writes nothing.
  apply_json /tmp/again.json $DRV/reload.yaml
  check "again: apply exits 0" eq "$(cat /tmp/again.json.rc)" 0
  check "again: no write" eq "$(jq .writes /tmp/again.json)" 0
  check "again: no step (driver.module and driver.reload have nothing to do)" eq "$(jq '.steps | length' /tmp/again.json)" 0
  check "again: the same module stays loaded" eq "$(cat /sys/module/nvidia/version)" "$want"

  # gdrcopy: gdrdrv (built on the host by DKMS against this tree's nv-p2p.h) loaded after nvidia,
  # /dev/gdrdrv made from its major with the profile's mode 0640 root:root; then nothing to do.
  check "gdrcopy: gdrdrv not loaded yet" sh -c "! [ -d /sys/module/gdrdrv ]"
  apply_json /tmp/gdr.json $DRV/gdr.yaml
  show "dmesg: $(dmesg | grep -i gdrdrv | tail -2 | tr '\n' '|')"
  check "gdrcopy: apply exits 0" eq "$(cat /tmp/gdr.json.rc)" 0
  check "gdrcopy: gdrcopy.module has nothing to do (built on the host)" eq "$(jq '[.steps[] | select(.action == "gdrcopy.module")] | length' /tmp/gdr.json)" 0
  check "gdrcopy: gdrcopy.library has nothing to do (libgdrapi built on the host from the same source)" eq "$(jq '[.steps[] | select(.action == "gdrcopy.library")] | length' /tmp/gdr.json)" 0
  check "gdrcopy: gdrcopy.device changed" eq "$(step_of /tmp/gdr.json gdrcopy.device outcome)" changed
  check "gdrcopy: gdrdrv loaded" loaded gdrdrv
  check "gdrcopy: gdrdrv uses nvidia (nvidia's holders)" test -e /sys/module/nvidia/holders/gdrdrv
  check "gdrcopy: the kernel log says the open flavour" sh -c "dmesg | grep -q 'gdrdrv version 2.6 built for opensource NVIDIA driver'"
  local major
  major=$(awk '$2 == "gdrdrv" {print $1}' /proc/devices)
  show "/dev/gdrdrv: $(ls -l /dev/gdrdrv 2>&1); gdrdrv major $major"
  check "gdrcopy: /dev/gdrdrv is a character device, mode 0640, root root" sh -c "ls -l /dev/gdrdrv | grep -q '^crw-r----- .* root *root '"
  check "gdrcopy: /dev/gdrdrv is gdrdrv's major $major, minor 0" sh -c "ls -l /dev/gdrdrv | grep -q ' $major, *0 '"
  check "gdrcopy: the step's message names it" contains "$(step_of /tmp/gdr.json gdrcopy.device message)" "/dev/gdrdrv c $major 0, 0640 root:root"
  apply_json /tmp/gdr2.json $DRV/gdr.yaml
  check "gdrcopy again: apply exits 0" eq "$(cat /tmp/gdr2.json.rc)" 0
  check "gdrcopy again: no step" eq "$(jq '.steps | length' /tmp/gdr2.json)" 0
}

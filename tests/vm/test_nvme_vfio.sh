#!/bin/bash
# NVMe to vfio-pci in a real kernel: QEMU (TCG) boots Debian's kernel with a busybox initramfs
# carrying p2pnode and emulated NVMe drives; each scenario boots once and asserts in the guest
# (tests/vm/guest/scenarios.sh). Usage: bash tests/vm/test_nvme_vfio.sh path/to/p2pnode
# Exit 0 all passed, 1 a check failed, 77 skipped (QEMU or the kernel cannot be had; the reason is printed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
vm_prepare "${1:-build/daemon/p2pnode}"
vm_pack
echo "vm: kernel $VM_KV, initramfs $(du -h "$VM_INITRD" | cut -f1), work dir $VM_TMP"

iommu="-device intel-iommu,intremap=off"
start=$(date +%s)
# One boot per scenario; the IOMMU-on boot carries scenarios 1, 4 and 5 in order; `acs` has its own boot.
vm_boot iommu "intel_iommu=on" $iommu $(vm_drive a P2PVM-A)
vm_boot refuse "intel_iommu=on" $iommu $(vm_drive d P2PVM-DATA) $(vm_drive f P2PVM-FREE)
vm_boot noiommu "" $(vm_drive a P2PVM-A)
# Two drives behind two PCIe root ports (ACS capability at 0x148) for the ACS fix.
truncate -s 64M $VM_TMP/ra.img $VM_TMP/rb.img
vm_boot acs "intel_iommu=on" $iommu \
  -device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1,addr=0x10 \
  -device pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2,addr=0x11 \
  -drive file=$VM_TMP/ra.img,if=none,id=ra,format=raw -device nvme,serial=P2PVM-A,drive=ra,bus=rp1 \
  -drive file=$VM_TMP/rb.img,if=none,id=rb,format=raw -device nvme,serial=P2PVM-B,drive=rb,bus=rp2
echo "vm: four boots in $(( $(date +%s) - start )) s"

vm_report iommu refuse noiommu acs

#!/bin/bash
# In a real kernel: the nvme_doorbell case's host writer (p2pnode-nvme-doorbell, the
# agent's VFIO + admin-queue code built without CUDA) on an emulated NVMe that p2pnode bound to
# vfio-pci, under a virtual IOMMU (q35 + intel-iommu, VFIO type1, VFIO_IOMMU_MAP_DMA): controller
# reset, admin queues in host memory, Identify, serial and model as QEMU's serial= and sysfs
# recorded, CC/CSTS left as found, a second run the same; a drive on nvme and a drive whose VFIO
# group another process holds are never touched. One boot; guest half: tests/vm/guest/doorbell.sh.
# Usage: bash tests/vm/test_nvme_doorbell.sh path/to/p2pnode (p2pnode-nvme-doorbell is taken from
# ../agent/ beside it). Exit 0 passed, 1 failed, 77 skipped (reason printed).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
P2PNODE=$(readlink -f "${1:-build/daemon/p2pnode}")
DOORBELL=$(readlink -f "$(dirname "$P2PNODE")/../agent/p2pnode-nvme-doorbell")
[ -x "$DOORBELL" ] || { echo "FAIL: $DOORBELL is missing (build the p2pnode-nvme-doorbell target)"; exit 1; }
require jq

vm_prepare "$P2PNODE"
vm_add_program "$DOORBELL" /bin/p2pnode-nvme-doorbell
vm_add_program "$(command -v jq)" /bin/jq
vm_pack
echo "vm: kernel $VM_KV, initramfs $(du -h "$VM_INITRD" | cut -f1), work dir $VM_TMP"
start=$(date +%s)
vm_boot doorbell "intel_iommu=on" -device intel-iommu,intremap=on \
  $(vm_drive db P2PVM-DB) $(vm_drive keep P2PVM-KEEP)
echo "vm: one boot in $(( $(date +%s) - start )) s"
vm_report doorbell

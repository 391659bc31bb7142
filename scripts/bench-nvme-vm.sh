#!/bin/bash
# Benchmark in the VM: time to bring one emulated NVMe drive from nvme to vfio-pci/D0 with
# `p2pnode apply --once`, beside seed 002's shell procedure (setpci from pciutils), alternating on
# the same drive in the same boot (QEMU TCG, intel-iommu). Prints each round, the medians and the ratio.
# Usage: scripts/bench-nvme-vm.sh [path/to/p2pnode] [rounds]
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/build/daemon/p2pnode}
rounds=${2:-7}
. "$repo/tests/vm/lib.sh"
if ! command -v setpci >/dev/null; then
  [ "$(id -u)" -eq 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pciutils >/dev/null
  command -v setpci >/dev/null || vm_skip "setpci (pciutils) is not installed and could not be"
fi
command -v gcc >/dev/null || vm_skip "gcc is needed to build the guest's nanosecond clock"
vm_prepare "$bin"
printf '#include <stdio.h>\n#include <time.h>\nint main(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);printf("%%lld\\n",(long long)t.tv_sec*1000000000LL+t.tv_nsec);return 0;}\n' >$VM_TMP/nsclock.c
gcc -O2 -static -o $VM_TMP/nsclock $VM_TMP/nsclock.c || vm_skip "cannot link a static program (libc6-dev)"
cp $VM_TMP/nsclock $VM_TMP/root/bin/nsclock
vm_add_program "$(command -v setpci)" /bin/setpci
vm_pack
VM_TIMEOUT=600 vm_boot bench "intel_iommu=on p2p.rounds=$rounds" -device intel-iommu,intremap=off $(vm_drive a P2PVM-A)
log=$VM_TMP/bench.log
grep -E '^P2P-(CHECK|BENCH)' "$log" | tr -d '\r'
if grep -q '^P2P-CHECK FAIL' "$log" || ! grep -q '^P2P-END bench' "$log"; then
  echo "bench: a round did not reach vfio-pci/D0; console tail:"
  tail -30 "$log"
  exit 1
fi
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
p=$(grep '^P2P-BENCH p2pnode ' "$log" | tr -d '\r' | awk '{print $3}' | median)
s=$(grep '^P2P-BENCH shell' "$log" | tr -d '\r' | awk '{print $3}' | median)
z=$(grep '^P2P-BENCH p2pnode_noop' "$log" | tr -d '\r' | awk '{print $3}' | median)
v=$(grep '^P2P-BENCH p2pnode_start' "$log" | tr -d '\r' | awk '{print $3}' | median)
awk -v p="$p" -v s="$s" -v z="$z" -v v="$v" -v n="$rounds" -v kv="$VM_KV" 'BEGIN {
  printf "bench (QEMU TCG, kernel %s, %d rounds, medians): p2pnode %.1f ms, seed shell procedure %.1f ms, ratio p2pnode/shell %.2f\n",
         kv, n, p / 1e6, s / 1e6, p / s
  printf "  p2pnode apply with nothing to do (process start + probing the box): %.1f ms; p2pnode --version alone: %.1f ms\n", z / 1e6, v / 1e6 }'

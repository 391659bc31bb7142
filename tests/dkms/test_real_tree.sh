#!/bin/bash
# In `make test`: the real 550.90.07-p2p tree from shared/trees through `p2pnode apply` and
# this machine's real DKMS for the kernel the VM harness boots, with the builtin patches: the core
# built once by p2pnode and linked from kernel-open/*/*.o_binary, DKMS's build the kernel layer only,
# the nvidia.ko it built loaded in the VM to `NVRM: No NVIDIA GPU found.`, a second apply that builds
# nothing, and the host's DKMS, /usr/src, /lib/modules, p2pnode's state and cache as they were.
# The second kernel with the cached core is the benchmark's (scripts/bench-dkms.sh, full mode): in
# make test every-kernel builds are tests/dkms/test_every_kernel.sh's, with a small module.
# This is scripts/bench-dkms.sh without its steps 0 and 4 (the by-hand `dkms build` and the second
# kernel; README, Benchmarks): BENCH_DKMS_TEST=1. Costs about 5 min of `make test` on 2 cores (3.2
# min of builds, one VM boot), more when the other tests share the cores.
# What it asserts is bench-dkms.sh's own checks (each a `fail` that makes it exit 1): the first apply
# succeeds and says it built the core; dkms.conf builds kernel-open/ only and DKMS's make.log for the
# kernel compiles no core file; both builtin patches are placed, applied by DKMS and matched to the
# kernel as their PATCH_MATCH says; nvidia.ko's vermagic is the kernel's; the second apply exits 0,
# runs no dkms build, says nothing changed and leaves make.log alone; plan has no driver.module step;
# the VM loads the module and passes its three checks; DKMS, /usr/src and /lib/modules as they were.
# Usage: bash tests/dkms/test_real_tree.sh path/to/p2pnode
repo=$(cd "$(dirname "$0")/../.." && pwd)
BENCH_DKMS_TEST=1 exec bash "$repo/scripts/bench-dkms.sh" "$@"

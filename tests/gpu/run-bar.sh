#!/usr/bin/env bash
# The bar_copy case on a lent GPU machine (any kind). Run from the repository root after
# `bash tests/gpu/pack-expect.sh build` and `bash tests/gpu/pack-gdrapi.sh` here (build-expect/,
# carried):
#   run(carry=["build-expect"], command="bash tests/gpu/run-bar.sh")
# The lent boxes run a CUDA 13.0 driver (580) with no gdrdrv, and gdrdrv cannot be loaded there
# (nothing may be loaded into their kernels), so gdrcopy has no backend: what this shows is the
# case's decision on a real box, recorded: waived (exit 0), the reason naming both missing halves
# (no /dev/gdrdrv; the driver's CUDA version below the dma-buf backend's 13.3), with and without
# libgdrapi; and that the real libgdrapi 2.6, built from gdrcopy's release here, reaches the same
# verdict through its own gdr_open. Where a box does offer a backend the same script measures and
# checks (status passed, write faster than read, no bad byte). Writes JSON and a log under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
AGENT=${AGENT:-build-expect/p2pnode-agent}
LIB=${LIB:-$PWD/build-expect/gdrcopy/libgdrapi.so.2}
LOG=$OUT/bar-log.txt
fail=0
{
  date -u; uname -r; nvidia-smi -L
  echo "driver: $(cat /sys/module/nvidia/version 2>/dev/null || echo none)"
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv
  nvidia-smi -q -d MEMORY | grep -A3 -i "BAR1" | head -8
  echo "/dev/gdrdrv: $(ls -l /dev/gdrdrv 2>&1)"
  echo "gdrdrv in /proc/devices: $(grep -c gdrdrv /proc/devices)"
  echo "libgdrapi on the linker's path: $(ldconfig -p | grep -c libgdrapi)"
} >"$LOG" 2>&1

run() {
  local name=$1; shift
  timeout 300 "$AGENT" "$@" >"$OUT/$name.json" 2>>"$LOG"; rc=$?
  echo "RUN $name rc=$rc args: $*" | tee -a "$LOG"
}
expect() {  # name, what, python expression over d (document) and c (the bar_copy case)
  local name=$1 what=$2 expr=$3
  if python3 - "$OUT/$name.json" "$expr" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = next((c for c in d["cases"] if c["key"] == "bar_copy"), None)
try:
    ok = eval(sys.argv[2])
except Exception as e:
    print("  (%s: %r)" % (type(e).__name__, e))
    ok = False
sys.exit(0 if ok else 1)
PY
  then echo "PASS $name: $what" | tee -a "$LOG"; else echo "FAIL $name: $what" | tee -a "$LOG"; fail=1; fi
}
backend=no
[ -e /dev/gdrdrv ] && backend=yes

# 1: the library from the linker's path (none on these boxes).
run bar-default --cases bar_copy
expect bar-default "exit 0" 'd["exit_code"] == 0'
if [ $backend = no ]; then
  expect bar-default "waived" 'c["status"] == "waived"'
  expect bar-default "the reason names the missing gdrdrv node" '"neither gdrdrv (/dev/gdrdrv: No such file or directory" in c["reason"]'
  expect bar-default "the reason names the driver's CUDA version" '"the driver is CUDA " in c["reason"] and "needs 13.3 or later" in c["reason"]'
  expect bar-default "the reason names the missing library" '"libgdrapi not found" in c["reason"]'
fi
# 2: the real libgdrapi 2.6 built from gdrcopy's release (tests/gpu/pack-gdrapi.sh).
run bar-lib --cases bar_copy --gdrapi "$LIB" --format json
expect bar-lib "exit 0" 'd["exit_code"] == 0'
if [ $backend = no ]; then
  expect bar-lib "waived, and the real library agrees" 'c["status"] == "waived" and "libgdrapi 2.6 (" in c["reason"] and "agrees: its gdr_open found no backend" in c["reason"]'
else
  expect bar-lib "passed on every GPU" 'c["status"] == "passed" and all(x["status"] == "passed" for x in c["cells"])'
  expect bar-lib "no bad byte" 'all(i["bad_bytes"] == 0 for x in c["cells"] for i in x["integrity"])'
  expect bar-lib "stores faster than loads" 'all(x["bar_write_bandwidth_gbps"]["median"] > x["bar_read_bandwidth_gbps"]["median"] for x in c["cells"])'
fi
# 3: the library's own answer, with its log on: gdr_open with no gdrdrv and this driver.
GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 python3 - "$LIB" >>"$LOG" 2>&1 <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.gdr_open.restype = ctypes.c_void_p
g = lib.gdr_open()
print("real libgdrapi gdr_open:", "a handle" if g else "NULL")
PY
"$AGENT" --format table --cases bar_copy --gdrapi "$LIB" >>"$LOG" 2>&1
echo "bar: $([ $fail -eq 0 ] && echo all passed || echo FAILED)" | tee -a "$LOG"
exit $fail

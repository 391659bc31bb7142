#!/bin/bash
# What the passive health pass costs the daemon: `p2pnode serve` on the 8x RTX 4090 fixture
# (tests/fixtures/epyc-8x4090-4nvme: 8 GPUs, 4 NVMe drives, the bridges above them, each given the
# kernel's three AER files) with a recorded /dev/kmsg, a pass every second (health.nvlink off: the
# agent's NVML cost is measured on the GPU boxes by tests/gpu/run-health.sh), for BENCH_SECONDS
# (30). Reports the passes, the daemon's CPU time per pass (utime+stime from /proc/PID/stat) and
# the pass duration the daemon measured itself. usage: scripts/bench-health.sh [PATH-TO-p2pnode]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(readlink -f "${1:-$SRC/build/daemon/p2pnode}")
SECS=${BENCH_SECONDS:-30}
WORK=$(mktemp -d /tmp/p2pnode-bench-health.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$WORK"' EXIT
R=$WORK/root
cp -a "$SRC/tests/fixtures/epyc-8x4090-4nvme" "$R"
mkdir -p "$R/etc/p2pnode/profiles" "$R/var/lib/p2pnode" "$R/dev"
cp "$SRC/profiles/epyc-8x4090.yaml" "$R/etc/p2pnode/profiles/"
cp "$SRC/tests/serve/data/kmsg-xid.txt" "$R/dev/kmsg"
echo "86400.00 0.00" > "$R/proc/uptime"
for d in "$R"/sys/bus/pci/devices/*; do
  printf 'RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n' > "$d/aer_dev_correctable"
  printf 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nTOTAL_ERR_NONFATAL 0\n' > "$d/aer_dev_nonfatal"
  printf 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nTOTAL_ERR_FATAL 0\n' > "$d/aer_dev_fatal"
done
printf 'listen: 127.0.0.1:0\nselftest:\n  on_start: false\napply: false\nhealth:\n  interval: 1s\n  nvlink: false\n' > "$WORK/p2pnode.yaml"
"$BIN" serve --root "$R" --config "$WORK/p2pnode.yaml" --port-file "$WORK/port" > "$WORK/daemon.log" 2>&1 &
PID=$!
for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")"
health() { curl -sf "$URL/v1/health"; }
for _ in $(seq 600); do health | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)["devices"]) == 0)' 2>/dev/null && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
p0=$(health | python3 -c 'import json,sys; print(json.load(sys.stdin)["passes"])'); c0=$(cpu)
sleep "$SECS"
h=$(health); c1=$(cpu)
python3 - "$p0" "$c0" "$c1" "$(getconf CLK_TCK)" "$SECS" <<PY
import json, sys
h = json.loads('''$h''')
p0, c0, c1, hz, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
n = h["passes"] - p0
kinds = {}
for d in h["devices"]: kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
print(f"node: epyc-8x4090-4nvme fixture, devices watched {len(h['devices'])} {kinds}, Xid records {sum(c['count'] for c in h['xid']['counts'])}")
print(f"{n} passes in {secs} s; daemon CPU {(c1 - c0) / hz:.2f} s = {1000.0 * (c1 - c0) / hz / max(n, 1):.2f} ms per pass (all threads, /proc/PID/stat at {hz} Hz)")
print(f"last pass measured by the daemon: {1000.0 * h['pass_duration_s']:.2f} ms; at the default 10 s interval: {100.0 * (c1 - c0) / hz / max(n, 1) / 10:.3f} % of one core")
PY

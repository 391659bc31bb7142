#!/bin/bash
# Captures the scrapes the simulated fleet (tests/fleet/fleet.py) is made of: a real `p2pnode serve`
# on each recorded machine, holding a self-test result synthesised from a recorded one, four at once.
#   h8: 8x RTX 4090 (epyc-8x4090-4nvme), h4: 4x H200 (h200-4gpu, the recorded 4x H200 result),
#   b2: 2x RTX 4090 with a link at x8 (gpu-link-x8: blocked), f6: tinybox 6x RTX 4090 as its BIOS
#   left it (failed, a kernel without the module).
# usage: capture.sh path/to/p2pnode OUTDIR [CONFIG_EXTRA]   (OUTDIR gets h8.prom h4.prom b2.prom f6.prom)
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode OUTDIR}")
OUT=${2:?usage: $0 path/to/p2pnode OUTDIR}
EXTRA=${3:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$SRC/tests/serve/eight_gpu_node.sh"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/p2pnode-capture.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
capture() {  # KIND FIXTURE PROFILE
  local w="$WORK/$1" rc=0
  mkdir -p "$w"
  start_fixture_node "$BIN" "$SRC" "$w" "$2" "$3" "" "$EXTRA" || rc=1
  # What a node exports once its health pass read the driver's state (the GPUs' replay counters).
  [ $rc -eq 0 ] && { wait_health_read || rc=1; }
  [ $rc -eq 0 ] && curl -sf "http://$NODE_ADDR/metrics" > "$OUT/$1.prom.tmp" && mv "$OUT/$1.prom.tmp" "$OUT/$1.prom" || rc=1
  kill "$NODE_PID" 2>/dev/null; wait "$NODE_PID" 2>/dev/null
  [ $rc -eq 0 ] || { echo "capture.sh: the $1 node ($2) gave no scrape:" >&2; tail -20 "$w/daemon.log" >&2; }
  return $rc
}
capture h8 epyc-8x4090-4nvme epyc-8x4090.yaml & p1=$!
capture h4 h200-4gpu h200-nvlink.yaml & p2=$!
capture b2 gpu-link-x8 "$SRC/tests/fleet/profiles/rtx4090-pair.yaml" & p3=$!
capture f6 tinybox-6x4090-bios-default tinybox-6x4090.yaml & p4=$!
fail=0
for p in $p1 $p2 $p3 $p4; do wait $p || fail=1; done
exit $fail

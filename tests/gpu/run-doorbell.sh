#!/usr/bin/env bash
# On a lent GPU machine (any kind; no NVMe drive may be bound to vfio-pci there). Run from
# the repository root with the agent and the host-writer program built here and carried in
# build-agent/ (p2pnode-agent, p2pnode-nvme-doorbell):
#   run(kind=nvidia-h100-x1, carry=["build-agent"], command="bash tests/gpu/run-doorbell.sh")
# What it proves there: the nvme_doorbell case is built for this GPU, starts, finds no drive on
# vfio-pci and says so: the case WAIVED with the reason, exit 0, within seconds (no failure, no
# hang); a drive named on the command line that is not on vfio-pci is waived, not touched; the
# GPU writer's kernel is loadable for this architecture (--list and a case run on the device).
# What it cannot prove: a GPU writing a real drive's doorbell (see README, "The doorbell proof").
# Writes JSON documents and a log under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
AGENT=${AGENT:-build-agent/p2pnode-agent}
HOSTDB=${HOSTDB:-build-agent/p2pnode-nvme-doorbell}
LOG=$OUT/doorbell-log.txt
fail=0
{
  date -u; uname -r; cat /proc/version; nvidia-smi -L
  cat /sys/module/nvidia/version 2>/dev/null || echo "no /sys/module/nvidia/version"
  echo "IOMMU units: $(ls /sys/class/iommu 2>/dev/null | tr '\n' ' ')"
  echo "NVMe functions and their drivers:"
  for d in /sys/bus/pci/devices/*; do
    case "$(cat $d/class)" in 0x0108*) echo "  $(basename $d) $(basename "$(readlink $d/driver 2>/dev/null)" 2>/dev/null)";; esac
  done
  echo "vfio groups: $(ls /dev/vfio 2>/dev/null | tr '\n' ' ')"
} >"$LOG" 2>&1

run() {  # name, limit_s, program, args...: exit status and wall time in the log
  local name=$1 limit=$2 prog=$3; shift 3
  local t0 t1
  t0=$(date +%s.%N)
  timeout "$limit" "$prog" "$@" >"$OUT/$name.json" 2>>"$LOG"; rc=$?
  t1=$(date +%s.%N)
  echo "RUN $name rc=$rc wall_s=$(python3 -c "print(f'{$t1-$t0:.3f}')") args: $*" | tee -a "$LOG"
}
expect() {  # what, python expression over d (the document of $name)
  local name=$1 what=$2 expr=$3
  if python3 - "$OUT/$name.json" "$expr" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = next((c for c in d["cases"] if c["key"] == "nvme_doorbell"), None)
try:
    ok = eval(sys.argv[2])
except Exception as e:  # a missing key is a failed expectation, said plainly
    print("  (%s: %r)" % (type(e).__name__, e))
    ok = False
sys.exit(0 if ok else 1)
PY
  then echo "PASS $name: $what" | tee -a "$LOG"; else echo "FAIL $name: $what" | tee -a "$LOG"; fail=1; fi
}

"$AGENT" --list >>"$LOG" 2>&1
# 1: the agent, both writers, drives discovered: none on vfio-pci -> waived with the reason.
run agent-discover 60 "$AGENT" --cases nvme_doorbell --writer both --size 4MiB --host-size 4MiB --integrity-size 1MiB
expect agent-discover "exit 0 and status passed" 'd["exit_code"] == 0 and d["status"] == "passed"'
expect agent-discover "nvme_doorbell waived" 'c is not None and c["status"] == "waived"'
expect agent-discover "the reason says no drive is on vfio-pci" '"no NVMe drive is bound to vfio-pci" in c.get("reason", "")'
expect agent-discover "a GPU was found" 'len(d["devices"]) >= 1'
# 2: a drive named that is not on vfio-pci (a made-up address): waived, never opened.
run agent-named 60 "$AGENT" --cases nvme_doorbell --writer gpu --nvme bdf=0000:ff:1f.7,serial=NOSUCHDRIVE \
  --size 4MiB --host-size 4MiB --integrity-size 1MiB
expect agent-named "exit 0, case waived" 'd["exit_code"] == 0 and c["status"] == "waived"'
expect agent-named "cell names the address" 'c["cells"][0]["nvme"] == "0000:ff:1f.7" and "missing" in c["cells"][0]["reason"]'
# 3: the host-writer program (no CUDA in it) on the same box: waived the same way.
run host-discover 60 "$HOSTDB"
expect host-discover "exit 0, nvme_doorbell waived" 'd["exit_code"] == 0 and c["status"] == "waived"'
# 4: the default suite does not run the opt-in case.
run agent-default 120 "$AGENT" --cases peer_access --size 4MiB --host-size 4MiB --integrity-size 1MiB
expect agent-default "no nvme_doorbell without --cases naming it (peer_access ran)" 'c is None and any(k["key"] == "peer_access" for k in d["cases"])'
"$AGENT" --format table --cases nvme_doorbell --size 4MiB --host-size 4MiB --integrity-size 1MiB >>"$LOG" 2>&1
echo "table rc=$?" >>"$LOG"
echo "doorbell: $([ $fail -eq 0 ] && echo all passed || echo FAILED)" | tee -a "$LOG"
exit $fail

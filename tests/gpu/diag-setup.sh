#!/usr/bin/env bash
# Where start-up time and host memory go, by GPU count and driver settings (read-only env knobs).
#   run(kind=nvidia-h200-x4, carry=["build-agent"], command="bash tests/gpu/diag-setup.sh")
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
AGENT=${AGENT:-build-agent/p2pnode-agent}
show() {  # label, json file
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
ph = " ".join(f"{p['name']}={p['at_s']:.3f}s/{p['rss_bytes']/1e6:.0f}MB" for p in d["host"]["phases"])
print(f"{sys.argv[1]:<34} exit={d['exit_code']} dur={d['duration_s']:.3f} peak={d['host']['peak_rss_bytes']/1e6:.0f}MB | {ph}")
PY
}
n=$(nvidia-smi -L | wc -l)
for k in $(seq 1 "$n"); do
  vis=$(seq -s, 0 $((k - 1)))
  CUDA_VISIBLE_DEVICES=$vis $AGENT --cases peer_access >"$OUT/d.json"; show "gpus=$k setup-only" "$OUT/d.json"
done
CUDA_DEVICE_MAX_CONNECTIONS=1 $AGENT --cases peer_access >"$OUT/d.json"; show "gpus=$n MAX_CONNECTIONS=1" "$OUT/d.json"
CUDA_MODULE_LOADING=EAGER $AGENT --cases peer_access >"$OUT/d.json"; show "gpus=$n MODULE_LOADING=EAGER" "$OUT/d.json"
$AGENT --cases peer_access --host-size 4KiB >"$OUT/d.json"; show "gpus=$n host-size 4KiB" "$OUT/d.json"
$AGENT --cases peer_access --size 64MiB >"$OUT/d.json"; show "gpus=$n size 64MiB" "$OUT/d.json"
/usr/bin/time -f "%e s %M KB" $AGENT >"$OUT/full.json"; show "gpus=$n full serial" "$OUT/full.json"
/usr/bin/time -f "%e s %M KB" $AGENT --mode rounds >"$OUT/full-rounds.json"; show "gpus=$n full rounds" "$OUT/full-rounds.json"
CUDA_DEVICE_MAX_CONNECTIONS=1 /usr/bin/time -f "%e s %M KB" $AGENT --mode rounds >"$OUT/full-rounds-mc1.json"; show "gpus=$n full rounds MAX_CONN=1" "$OUT/full-rounds-mc1.json"
python3 tests/gpu/summarize.py "$OUT/full-rounds.json" "$OUT/full-rounds-mc1.json" | grep -E "largest|==|latency "
rm -f "$OUT/d.json"

#!/usr/bin/env bash
# The driver's own word on a lent GPU box, read-only, compared with nvidia-smi at the same time:
# `p2pnode-agent --health` (NVML only, no CUDA context) reads per GPU the recovery action
# (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), the PCIe replay counter and its rollovers, the link
# generation and width with their maxima, row remapping and volatile uncorrected ECC; per ordered
# pair the P2P status of read, write, NVLink, atomics and PCI. The same moment's `nvidia-smi -q`
# and `nvidia-smi topo -p2p r|w|n|a|p` must say the same: the script compares every value and
# fails on a difference. Then `agent --health` is timed (HEALTH_RUNS, 10 by default) and
# `p2pnode serve` (apply off, no self-test, a health pass every 2 s, 12 s) shows what the daemon
# makes of it: /v1/health's gpus and p2p_status, /readyz, the new metrics.
# Run from the repository root after `bash tests/gpu/pack-expect.sh` here, carrying build-expect/:
#   run(kind=nvidia-h200-x2, carry=["build-expect"], command="bash tests/gpu/run-driver-health.sh")
# Into $OUT: driver-health-log.txt
# (the comparison, the timings), agent-health.json, nvidia-smi-q.txt, topo-p2p.txt,
# health-api.json, readyz-api.json, health-metrics.txt. Changes nothing on the box.
set -u
. "$(dirname "$0")/lib.sh"
gpu_setup driver-health
{ date -u; uname -r; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1; } >>"$LOG" 2>&1

# The same moment: the agent, then nvidia-smi's views right after it.
say "p2pnode-agent --health --json and nvidia-smi -q / topo -p2p at the same time"
"$AGENT" --health --json >"$OUT/agent-health.json" 2>>"$LOG"; say "agent --health rc=$?"
nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>>"$LOG"; say "nvidia-smi -q rc=$?"
nvidia-smi nvlink -e >"$OUT/nvlink-e.txt" 2>>"$LOG"
for c in r w n a p; do nvidia-smi topo -p2p "$c" >"$OUT/topo-p2p-$c.txt" 2>>"$LOG"; done
python3 - "$OUT" >>"$LOG" 2>&1 <<'PY'
import json, re, sys
out = sys.argv[1]
a = json.load(open(f"{out}/agent-health.json"))
fails = 0
def check(ok, what):
    global fails
    print(("match   " if ok else "MISMATCH ") + what)
    fails += not ok
# nvidia-smi -q: one block per GPU ("GPU 00000000:18:00.0"); the values inside by their labels.
q = open(f"{out}/nvidia-smi-q.txt").read()
blocks = re.split(r"^GPU ([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9])\s*$", q, flags=re.M)
smi = {}
for i in range(1, len(blocks), 2):
    bdf = blocks[i][4:].lower()
    smi[bdf] = blocks[i + 1]
def value(text, label, after=None):
    t = text
    if after:
        j = t.find(after)
        if j < 0: return None
        t = t[j:]
    m = re.search(r"^\s*" + re.escape(label) + r"\s*:\s*(.+?)\s*$", t, flags=re.M)
    return m.group(1) if m else None
words = {"none": "None", "gpu_reset": "GPU Reset", "node_reboot": "Node Reboot", "drain_p2p": "Drain P2P",
         "drain_and_reset": "Drain P2P and Reset", "recover_imex_domain": "Recover IMEX Domain"}
for g in a["gpus"]:
    bdf = g["pci_bus_id"]
    t = smi.get(bdf)
    if t is None:
        check(False, f"{bdf}: nvidia-smi -q has no block for it"); continue
    ra = value(t, "GPU Recovery Action")
    check(g["recovery_action"] is not None and ra is not None and words.get(g["recovery_action"], "?").lower() == ra.lower(),
          f'{bdf} recovery action: agent {g["recovery_action"]}, nvidia-smi "{ra}"')
    rep = value(t, "Replays Since Reset")
    check(str(g["pcie"]["replay"]) == rep, f'{bdf} PCIe replays: agent {g["pcie"]["replay"]}, nvidia-smi {rep}')
    roll = value(t, "Replay Number Rollovers")
    check(str(g["pcie"]["replay_rollover"]) == roll, f'{bdf} replay rollovers: agent {g["pcie"]["replay_rollover"]}, nvidia-smi {roll}')
    gen_cur = value(t, "Current", "PCIe Generation"); gen_max = value(t, "Max", "PCIe Generation")
    check(str(g["pcie"]["gen"]) == gen_cur and str(g["pcie"]["max_gen"]) == gen_max,
          f'{bdf} link generation: agent {g["pcie"]["gen"]} of {g["pcie"]["max_gen"]}, nvidia-smi {gen_cur} of {gen_max}')
    w_cur = value(t, "Current", "Link Width"); w_max = value(t, "Max", "Link Width")
    check(f'{g["pcie"]["width"]}x' == w_cur and f'{g["pcie"]["max_width"]}x' == w_max,
          f'{bdf} link width: agent x{g["pcie"]["width"]} of x{g["pcie"]["max_width"]}, nvidia-smi {w_cur} of {w_max}')
    m = g["memory"]
    pend = value(t, "Pending", "Remapped Rows"); fail = value(t, "Remapping Failure Occurred", "Remapped Rows")
    yes = lambda v: None if v is None else v.strip().lower() == "yes"
    check(m["remap_pending"] == yes(pend) and m["remap_failure"] == yes(fail),
          f'{bdf} remapped rows: agent pending {m["remap_pending"]} failure {m["remap_failure"]}, nvidia-smi pending {pend} failure {fail}')
    corr = value(t, "Correctable Error", "Remapped Rows"); unc = value(t, "Uncorrectable Error", "Remapped Rows")
    check(str(m["remapped_correctable"]) == corr and str(m["remapped_uncorrectable"]) == unc,
          f'{bdf} rows remapped: agent {m["remapped_correctable"]}/{m["remapped_uncorrectable"]}, nvidia-smi {corr}/{unc}')
    # Volatile uncorrected ECC: NVML's total is the sum of nvidia-smi's volatile uncorrectable lines.
    vol = t[t.find("Volatile"):t.find("Aggregate")] if "Volatile" in t else ""
    nums = [int(x) for x in re.findall(r"Uncorrectable[^:\n]*:\s*(\d+)", vol)]
    check(m["volatile_uncorrected_ecc"] == (sum(nums) if nums else None),
          f'{bdf} volatile uncorrected ECC: agent {m["volatile_uncorrected_ecc"]}, nvidia-smi {sum(nums) if nums else None} ({len(nums)} lines)')
# nvidia-smi nvlink -e, read after the agent: per GPU and link its Replay, Recovery and CRC errors; a
# counter may only have risen in between (the CRC counters of the lent H200s tick).
cur, links_smi = None, {}
for line in open(f"{out}/nvlink-e.txt"):
    m = re.match(r"GPU (\d+):", line)
    if m: cur = int(m.group(1)); continue
    m = re.match(r"\s*Link (\d+): (Replay|Recovery|CRC) Errors: (\d+)", line)
    if m and cur is not None: links_smi[(cur, int(m.group(1)), m.group(2))] = int(m.group(3))
if links_smi:
    same = rose = 0
    for g in a["gpus"]:
        for l in g["links"]:
            for name, key in (("Replay", "replay"), ("Recovery", "recovery"), ("CRC", "crc_flit")):
                v, w = l["errors"][key], links_smi.get((g["index"], l["link"], name))
                if v is None or w is None: continue
                if v == w: same += 1
                elif w > v: rose += 1
                else: check(False, f'{g["pci_bus_id"]} link {l["link"]} {key}: agent {v}, nvidia-smi {w} (lower)')
    check(same + rose > 0, f"NVLink counters (replay, recovery, CRC per link): {same} equal, {rose} rose between the reads, none lower")
# topo -p2p: matrix of GPU indices; the agent's pairs by bus id, its GPUs in NVML index order.
abbrev = {"ok": "OK", "chipset_not_supported": "CNS", "gpu_not_supported": "GNS", "ioh_topology_not_supported": "TNS",
          "not_supported": "NS", "unknown": "U"}
idx = {g["pci_bus_id"]: g["index"] for g in a["gpus"]}
for c, cap in zip("rwnap", ("read", "write", "nvlink", "atomics", "pci")):
    rows = {}
    for line in open(f"{out}/topo-p2p-{c}.txt"):
        cells = line.split()
        if cells and re.fullmatch(r"GPU\d+", cells[0]) and len(cells) > 1 and not line.startswith(" \t"):
            if all(re.fullmatch(r"GPU\d+", x) for x in cells): continue  # the header row
            rows[int(cells[0][3:])] = cells[1:]
    same = 0
    for p in a["p2p_status"]:
        i, j = idx[p["gpu"]], idx[p["peer_gpu"]]
        smi_cell = rows.get(i, [None] * 64)[j] if i in rows and j < len(rows[i]) else None
        ok = abbrev.get(p[cap], p[cap]) == smi_cell
        same += ok
        if not ok: check(False, f"topo -p2p {c} GPU{i}->GPU{j}: agent {p[cap]}, nvidia-smi {smi_cell}")
    check(same == len(a["p2p_status"]) and same > 0 or len(a["gpus"]) < 2,
          f"topo -p2p {c} ({cap}): {same} of {len(a['p2p_status'])} ordered pairs the same"
          f" ({sorted({p[cap] for p in a['p2p_status']})})")
print("comparison:", "ALL MATCH" if not fails else f"{fails} MISMATCH(ES)")
sys.exit(1 if fails else 0)
PY
cmp_rc=$?
say "comparison with nvidia-smi: rc=$cmp_rc (details above in this log)"
{ for c in r w n a p; do echo "-- nvidia-smi topo -p2p $c"; cat "$OUT/topo-p2p-$c.txt"; done
  echo "-- nvidia-smi nvlink -e"; cat "$OUT/nvlink-e.txt"; } >"$OUT/topo-p2p.txt"
rm -f "$OUT"/topo-p2p-?.txt "$OUT/nvlink-e.txt"  # (eight files come back from a run)

# The cost: agent --health, a few times.
runs=${HEALTH_RUNS:-10}
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$OUT/time-$i" "$AGENT" --health --json >/dev/null 2>>"$LOG"
done
cat "$OUT"/time-* | awk '{ s += $1; if ($1 > m) m = $1; if ($2 > r) r = $2; n++ } END { printf "agent --health over %d runs: mean %.3f s, max %.3f s, peak RSS %d KiB\n", n, s / n, m, r }' | tee -a "$LOG"
rm -f "$OUT"/time-*

# The daemon on the same box: what it makes of the driver's word.
gpu_daemon_config "selftest:" "  on_start: false" "health:" "  interval: 2s" "  window: 10m" "  nvlink_interval: 2s"
"$BIN/p2pnode" serve --root / --config "$WORK/p2pnode.yaml" --port-file "$WORK/port" >"$OUT/serve-log.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.2; done
URL="http://127.0.0.1:$(cat "$WORK/port" 2>/dev/null)"
sleep 12
get() { python3 -c 'import sys, urllib.request
try: sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except urllib.error.HTTPError as e: sys.stdout.write(e.read().decode())' "$URL$1"; }
get /v1/health >"$OUT/health-api.json"
get /readyz >"$OUT/readyz-api.json"
get /metrics | grep -E '^(# (HELP|TYPE) )?p2pnode_(gpu_pcie_replays|gpu_recovery_action|gpu_memory_untrusted|health_finding)' >"$OUT/health-metrics.txt"
kill -TERM "$pid"; wait "$pid"
python3 - "$OUT/health-api.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print("daemon: passes", h["passes"], "problem", h["problem"], "agent read:", h["nvlink"]["read"] if h["nvlink"] else None)
for g in h["gpus"]:
    print(" ", g["gpu"], "recovery", g["recovery_action"], "replays", g["pcie"]["replay"], "memory", g["memory"])
print("  p2p_status pairs:", len(h["p2p_status"]))
for f in h["findings"]: print("  finding:", f["severity"], f["check"], f["subject"], f["summary"])
PY
cat "$OUT/health-metrics.txt" >>"$LOG"
rm -rf "$WORK"
exit $cmp_rc

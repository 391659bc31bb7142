#!/bin/bash
# The series budget: the default scrape of a real `p2pnode serve` on the 8x RTX 4090 fixture holding
# a full 8-GPU self-test and a health pass that read the driver's state through the agent (the GPUs'
# replay counters) is at most 600 series and keeps the whole P2P matrix (bandwidth per pair
# and case, each joined to its path class's expected and threshold figures; latency, access and
# link per pair; the pairs checked for integrity); `metrics: {detail: full}` adds the per-pair
# figures. Usage: bash tests/prometheus/test_series_budget.sh path/to/p2pnode   (~6 s)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -uo pipefail
BIN=$(readlink -f "${1:?usage: $0 path/to/p2pnode}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUDGET=600
require curl
source "$SRC/tests/serve/eight_gpu_node.sh"
WORK=$(mktemp -d /tmp/p2pnode-budget.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
node() {  # NAME CONFIG_EXTRA: the 8-GPU node's scrape in $WORK/NAME.prom
  mkdir -p "$WORK/$1"
  start_eight_gpu_node "$BIN" "$SRC" "$WORK/$1" "$2" || return 1
  # A health pass that read the driver's state through the agent (its per-GPU series count too).
  wait_health_read || return 1
  curl -sf "http://$NODE_ADDR/metrics" > "$WORK/$1.prom"
  kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null
}
node compact "" & a=$!
node full $'metrics:\n  detail: full\n' & b=$!
wait $a && wait $b || { echo "FAIL: the 8-GPU node did not come up"; exit 1; }
python3 - "$WORK/compact.prom" "$WORK/full.prom" "$BUDGET" <<'PY'
import re, sys
from collections import Counter
def load(f):
    out = []
    for line in open(f):
        if line.startswith("#") or not line.strip(): continue
        m = re.match(r'([a-z_:0-9]+)(?:\{(.*)\})? (\S+)$', line.strip())
        out.append((m[1], dict(re.findall(r'(\w+)="([^"]*)"', m[2] or "")), float(m[3])))
    return out
compact, full, budget = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
n = Counter(name for name, _, _ in compact)
check(len(compact) <= budget, "default scrape of the 8-GPU node: %d series (budget %d; metrics.detail full: %d)" % (len(compact), budget, len(full)))
bw = [(l, v) for name, l, v in compact if name == "p2pnode_p2p_bandwidth_bytes_per_second"]
check(len(bw) == 56 * 5, "bandwidth for every ordered pair and case: %d of %d" % (len(bw), 56 * 5))
for fam in ("p2pnode_p2p_latency_seconds", "p2pnode_p2p_access", "p2pnode_p2p_link_info"):
    check(n[fam] == 56, "%s for every ordered pair: %d of 56" % (fam, n[fam]))
checked = [v for name, _, v in compact if name == "p2pnode_p2p_integrity_checked_pairs"]
check(checked == [56.0], "integrity: 56 pairs checked (%s), %d with corrupted bytes" % (checked, n["p2pnode_p2p_integrity_error_bytes"]))
check("p2pnode_p2p_regressed_cells" in n, "regressed cells counted (%d exported)" % n["p2pnode_p2p_regressed"])
consts = {(name, l["path"], l["engine"], l["direction"]) for name, l, _ in compact if name.startswith("p2pnode_p2p_path_")}
unjoined = [l for l, _ in bw if ("p2pnode_p2p_path_expected_bandwidth_bytes_per_second", l.get("path"), l["engine"], l["direction"]) not in consts
            or ("p2pnode_p2p_path_threshold_bytes_per_second", l.get("path"), l["engine"], l["direction"]) not in consts]
paths = sorted({l["path"] for l, _ in bw if "path" in l})
check(not unjoined, "every bandwidth series joins its path class's expected and threshold (%d classes: %s; %d constants)" % (len(paths), ", ".join(paths), len(consts)))
for fam in ("p2pnode_p2p_expected_bandwidth_bytes_per_second", "p2pnode_p2p_threshold_bytes_per_second", "p2pnode_p2p_bandwidth_ratio"):
    check(n[fam] == 0, "%s not in the default scrape" % fam)
nf = Counter(name for name, _, _ in full)
for fam, want in (("p2pnode_p2p_expected_bandwidth_bytes_per_second", 280), ("p2pnode_p2p_threshold_bytes_per_second", 280),
                  ("p2pnode_p2p_bandwidth_ratio", 280), ("p2pnode_p2p_regressed", 280), ("p2pnode_p2p_integrity_error_bytes", 56)):
    check(nf[fam] == want, "metrics.detail full: %s %d of %d" % (fam, nf[fam], want))
# The node's own judgement of each cell against its path class's threshold, and its worst ratio, are
# what the alert and the fleet's rules read in place of a join over every pair: they must say what
# the join says.
check("p2pnode_p2p_below_threshold_cells" in n, "cells below their threshold counted (%d exported)" % n["p2pnode_p2p_below_threshold"])
threshold = {(l["path"], l["engine"], l["direction"]): v for name, l, v in compact if name == "p2pnode_p2p_path_threshold_bytes_per_second"}
key = lambda l: (l["gpu"], l["peer_gpu"], l["engine"], l["direction"])
below = {key(l): v for name, l, v in full if name == "p2pnode_p2p_below_threshold"}
joined = {key(l): float(v < threshold[(l["path"], l["engine"], l["direction"])]) for l, v in bw}
check(len(below) == 280 and below == joined, "metrics.detail full: p2pnode_p2p_below_threshold for %d of 280 cells, each as the join with the path class's threshold says (%d below)" % (len(below), sum(joined.values())))
ratios = [v for name, _, v in full if name == "p2pnode_p2p_bandwidth_ratio"]
worst = [v for name, _, v in compact if name == "p2pnode_p2p_bandwidth_ratio_min"]
check(len(worst) == 1 and ratios and worst[0] == min(ratios), "p2pnode_p2p_bandwidth_ratio_min %s: the lowest of the %d cells' ratios (%s)" % (worst, len(ratios), min(ratios) if ratios else None))
sys.exit(1 if fails else 0)
PY

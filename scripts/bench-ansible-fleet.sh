#!/bin/bash
# The roll-out at fleet scale, on this machine: the real ansible-playbook runs ansible/site.yml
# against NODES fresh Debian 12 nodes (copies of the debootstrap root tests/lib/debian_root.sh
# caches, plus python3) through Ansible's chroot connection, as tests/ansible/test_ansible.sh does:
# each node holds a recorded machine (the 4x H200 or the 8x RTX 4090, alternately), its daemon runs
# without systemd on its own 127.0.2.N, a stand-in agent replays a passing self-test. Every line of
# the play is timestamped: the time of each serial batch (the canary, then p2pnode_serial's next
# batches), per node in the canary batch, and a second run over the same nodes (nothing to change).
# From those, what 1,000 nodes take with the same batches and forks.
# usage: scripts/bench-ansible-fleet.sh path/to/p2pnode [NODES]
#        env: FORKS (default 5, Ansible's default), SERIAL (default '[1, 5, "100%"]', the playbook's)
set -uo pipefail
bin=$(readlink -f "${1:?usage: $0 path/to/p2pnode [NODES]}")
NODES=${2:-20}
FORKS=${FORKS:-5}
SERIAL=${SERIAL:-'[1, 5, "100%"]'}
cd "$(dirname "$0")/.." || exit 1
source tests/lib/debian_root.sh
command -v ansible-playbook >/dev/null || { echo "ansible-playbook is not installed (scripts/install-deps.sh test)"; exit 1; }
why=$(debian_root_skip_reason); [ -z "$why" ] || { echo "cannot make nodes: $why"; exit 1; }
build=$(cd "$(dirname "$bin")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/p2pnode-bench-ansible.XXXXXX")
nodes=()
for i in $(seq 1 "$NODES"); do nodes+=("node$(printf %02d "$i")"); done
cleanup() {
  local n p
  for n in "${nodes[@]}"; do
    p=$(cat "$work/$n/run/p2pnode.pid" 2>/dev/null) && kill "$p" 2>/dev/null
    mountpoint -q "$work/$n/.hostproc" && umount "$work/$n/.hostproc"
  done
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

t0=$SECONDS
deb=$(scripts/build-deb.sh "$work/debs" "$build") || { echo "scripts/build-deb.sh failed"; exit 1; }
log "package: $((SECONDS - t0)) s"
t0=$SECONDS
i=0
for n in "${nodes[@]}"; do
  i=$((i + 1))
  r=$work/$n
  f=tests/fixtures/$([ $((i % 2)) -eq 1 ] && echo h200-4gpu || echo epyc-8x4090-4nvme)
  debian_root "$r" python || { echo "making node $n failed"; exit 1; }
  cp -a "$f/sys" "$r/"
  [ -d "$f/dev" ] && cp -a "$f/dev/." "$r/dev/"
  [ -d "$f/lib" ] && cp -a "$f/lib/." "$r/usr/lib/"
  for e in hostname default modprobe.d; do [ -e "$f/etc/$e" ] && cp -a "$f/etc/$e" "$r/etc/"; done
  rm -rf "${r:?}/proc"; cp -a "$f/proc" "$r/proc"
  mkdir "$r/.hostproc" && mount -t proc proc "$r/.hostproc" && ln -s /.hostproc/self "$r/proc/self"
  mkdir -p "$r/usr/local/lib/p2pnode-test"
  cp tests/serve/agents/replay.sh "$r/usr/local/lib/p2pnode-test/"
  gpus=$("$bin" check --root "$f" --profiles profiles --json | python3 -c 'import json,sys; print(" ".join(g["bdf"] for g in json.load(sys.stdin)["node"]["gpus"]))')
  # shellcheck disable=SC2086
  python3 tests/serve/synth_agent_result.py tests/fixtures/gpu-runs/h200x4-rounds.json $gpus > "$r/usr/local/lib/p2pnode-test/result.json"
done
log "$NODES nodes made: $((SECONDS - t0)) s"
{
  echo "gpu_nodes:"
  echo "  vars:"
  echo "    ansible_connection: community.general.chroot"
  echo "    ansible_python_interpreter: /usr/bin/python3"
  echo "    ansible_become: false"
  echo "    p2pnode_service_manager: direct"
  echo "    p2pnode_agent_path: /usr/local/lib/p2pnode-test/replay.sh"
  echo "    p2pnode_agent_args: [/usr/local/lib/p2pnode-test/result.json]"
  echo "    p2pnode_ready_timeout: 120"
  echo "    p2pnode_ready_delay: 1"
  echo "  hosts:"
  i=0
  for n in "${nodes[@]}"; do
    i=$((i + 1))
    echo "    $n: {ansible_host: $work/$n, p2pnode_listen: \"127.0.2.$((10 + i)):9470\", p2pnode_profiles: [$([ $((i % 2)) -eq 1 ] && echo h200-nvlink.yaml || echo epyc-8x4090.yaml)]}"
  done
} > "$work/inventory.yml"
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_PIPELINING=1
play() {  # NAME: ansible-playbook site.yml, every output line prefixed with its time
  ansible-playbook -i "$work/inventory.yml" ansible/site.yml -f "$FORKS" -e "{\"p2pnode_serial\": $SERIAL}" -e "p2pnode_deb=$deb" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$work/$1.log"
  return "${PIPESTATUS[0]}"
}
report() {  # NAME: the batches' times from the timestamped log
  python3 - "$work/$1.log" "$1" "$NODES" "$FORKS" "$SERIAL" <<'PY'
import json, math, re, sys
lines = [l.rstrip("\n").split(" ", 1) for l in open(sys.argv[1])]
name, nodes, forks, serial = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
starts = [float(t) for t, l in lines if l.startswith("PLAY [p2pnode on GPU nodes]")]
end = next((float(t) for t, l in lines if l.startswith("PLAY RECAP")), float(lines[-1][0]))
batches = [(b - a) for a, b in zip(starts, starts[1:] + [end])]
sizes, left = [], nodes
for s in serial + [serial[-1]] * 100:
    if left <= 0: break
    k = min(left, math.ceil(nodes * int(s[:-1]) / 100) if isinstance(s, str) else s)
    sizes.append(k); left -= k
total = end - float(lines[0][0])
print("%s: %d nodes, forks %d, serial %s: %.0f s in all; batches: %s" % (name, nodes, forks, serial, total,
      ", ".join("%d node(s) %.0f s" % (k, b) for k, b in zip(sizes, batches))))
if len(batches) >= 2 and sizes[-1] > 1:
    per_round = batches[-1] / math.ceil(sizes[-1] / forks)
    # 1,000 nodes, the same batches: the canary and the fixed ones as measured, the rest in rounds of `forks`.
    fixed = [k for k in sizes[:-1]]
    est = sum(batches[:-1]) + math.ceil((1000 - sum(fixed)) / forks) * per_round
    print("  per node: %.0f s alone (the canary); %.0f s per round of %d forks in the last batch; 1,000 nodes with these batches and forks: ~%.0f min"
          % (batches[0], per_round, forks, est / 60))
    ok = [l for _, l in lines if re.match(r"^\S+\s+: ok=", l)]
    print("  recap: %d hosts, %d with failed=0" % (len(ok), sum(1 for l in ok if "failed=0" in l)))
PY
}
log "roll-out 1 (fresh nodes)"
play first; rc=$?
report first
[ $rc -eq 0 ] || { echo "the roll-out failed (exit $rc):"; grep -E "FAILED|fatal" "$work/first.log" | head -20; exit 1; }
log "roll-out 2 (the same nodes: nothing to change)"
play second; rc=$?
report second
[ $rc -eq 0 ] || { echo "the second roll-out failed (exit $rc)"; exit 1; }

# Sourced by scripts/bench-serve.sh, scripts/bench-fleet.sh and tests/grafana/test_dashboard.sh:
# `p2pnode serve` on a recorded machine (tests/fixtures) holding a self-test result synthesised for
# its GPUs from a recorded one (tests/fixtures/gpu-runs).
# start_fixture_node BIN SRC WORK FIXTURE PROFILE [TEMPLATE [CONFIG_EXTRA]]: starts it under WORK
# (an empty directory) and waits for its first reconcile. PROFILE: a file under profiles/, an absolute path, or "".
# Sets NODE_ADDR (127.0.0.1:port) and NODE_PID; returns 1 (after saying why on stderr) when the
# daemon does not listen within 20 s or decide within 60 s.
start_fixture_node() {
  local bin=$1 src=$2 work=$3 fixture=$4 profile=$5 template=${6:-$2/tests/fixtures/gpu-runs/h200x4-rounds.json} extra=${7:-}
  local root=$work/root gpus i
  cp -a "$src/tests/fixtures/$fixture" "$root"
  mkdir -p "$root/etc/p2pnode/profiles" "$root/var/lib/p2pnode"
  case $profile in "") ;; /*) cp "$profile" "$root/etc/p2pnode/profiles/" ;; *) cp "$src/profiles/$profile" "$root/etc/p2pnode/profiles/" ;; esac
  gpus=$("$bin" check --root "$root" --json | python3 -c 'import json,sys; print(" ".join(g["bdf"] for g in json.load(sys.stdin)["node"]["gpus"]))')
  python3 "$src/tests/serve/synth_agent_result.py" "$template" $gpus > "$work/result.json"
  # agent.path is inside the root, like every configured path
  mkdir -p "$root/usr/libexec/p2pnode"
  ln -sfn "$src/tests/serve/agents/replay.sh" "$root/usr/libexec/p2pnode/p2pnode-agent"
  # Its --health answer: a healthy box's driver state for these GPUs (tests/serve/synth_health.py).
  python3 "$src/tests/serve/synth_health.py" $gpus > "$root/usr/libexec/p2pnode/p2pnode-agent.health.json"
  printf 'listen: 127.0.0.1:0\nagent:\n  args: ["%s"]\n%s' "$work/result.json" "$extra" > "$work/p2pnode.yaml"
  "$bin" serve --root "$root" --config "$work/p2pnode.yaml" --port-file "$work/port" > "$work/daemon.log" 2>&1 &
  NODE_PID=$!
  for i in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.1; done
  [ -s "$work/port" ] || { echo "the daemon did not listen within 20 s:" >&2; cat "$work/daemon.log" >&2; return 1; }
  NODE_ADDR="127.0.0.1:$(cat "$work/port")"
  for i in $(seq 600); do
    curl -sf "http://$NODE_ADDR/v1/status" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(s["state"] == "starting" or s["reconcile"]["running"] or s["reconcile"]["queued"])' \
      2>/dev/null && return 0
    sleep 0.1
  done
  echo "the daemon's first reconcile did not finish in 60 s" >&2
  return 1
}

# wait_health_read: until NODE_ADDR's health pass has read the driver's state through the agent
# (the pass after the first reconcile, up to health.interval later; 30 s at most).
wait_health_read() {
  local i
  for i in $(seq 300); do
    curl -sf "http://$NODE_ADDR/v1/health" | python3 -c 'import json,sys; sys.exit(not json.load(sys.stdin)["gpus"])' 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the daemon's health pass did not read the agent within 30 s" >&2
  return 1
}

# The 8x RTX 4090 fixture (tests/fixtures/epyc-8x4090-4nvme) holding a synthesised 8-GPU self-test.
# start_eight_gpu_node BIN SRC WORK [CONFIG_EXTRA]
start_eight_gpu_node() {
  start_fixture_node "$1" "$2" "$3" epyc-8x4090-4nvme epyc-8x4090.yaml "" "${4:-}"
}

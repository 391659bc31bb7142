# Sourced by tests/gpu/run-*.sh, which run on a lent GPU machine from the repository root with
# build-expect/ carried (tests/gpu/pack-expect.sh). After `gpu_setup NAME`:
#   OUT      the folder that comes back ($OUT, else /tmp/out)
#   BIN      build-expect/ (p2pnode, p2pnode-serve, p2pnode-agent; its libraries in lib/, on
#            LD_LIBRARY_PATH since the GPU machine is bare)
#   AGENT    the agent (AGENT=… to run another), P2PNODE the daemon
#   LOG      $OUT/NAME-log.txt; pass, fail and finish (tests/lib/check.sh) write there too
#   WORK     a new folder under /tmp for the daemon's files
#   say WHAT a timed line in the log and on stderr (never stdout: some scripts time what it prints)
#   gpu_daemon_config [LINE...]  $WORK/p2pnode.yaml for `p2pnode serve --root /` on this box: apply
#            and the device monitor off, the box's agent, profiles from profiles/ (copied to
#            $WORK/profiles), the token in $WORK/token; each LINE is appended (YAML at top level)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"

gpu_setup() {
  OUT=${OUT:-/tmp/out}
  mkdir -p "$OUT"
  BIN=$(readlink -f "${BIN:-build-expect}")
  AGENT=${AGENT:-$BIN/p2pnode-agent}
  P2PNODE=$BIN/p2pnode
  export LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  LOG=$OUT/$1-log.txt
  CHECK_LOG=$LOG
  WORK=$(temp_dir "gpu-$1")
}

say() { echo "== $(date -u +%T) $*" | tee -a "$LOG" >&2; }

gpu_daemon_config() {
  mkdir -p "$WORK/profiles" "$WORK/state"
  cp profiles/*.yaml "$WORK/profiles/"
  (umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token")
  {
    cat <<YAML
apiVersion: p2pnode/v1
kind: DaemonConfig
listen: 127.0.0.1:0
token_file: $WORK/token
profiles_dir: $WORK/profiles
state_dir: $WORK/state
apply: false
device_monitor: false
agent:
  path: $AGENT
YAML
    local line
    for line in "$@"; do echo "$line"; done
  } >"$WORK/p2pnode.yaml"
}

# agent_timed NAME ARG...: one run of the agent, its document in $OUT/NAME.json, a line in the log
# with its exit status, wall seconds and peak memory (/usr/bin/time where the box has it; its
# output in $OUT/time-NAME.txt)
agent_timed() {
  local name=$1 t0 t1 rc rss
  shift
  t0=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$OUT/time-$name.txt" "$AGENT" "$@" >"$OUT/$name.json" 2>>"$LOG"; rc=$?
  else
    "$AGENT" "$@" >"$OUT/$name.json" 2>>"$LOG"; rc=$?
  fi
  t1=$(date +%s.%N)
  rss=$(grep -s "Maximum resident" "$OUT/time-$name.txt" | awk '{print $NF}')
  echo "RUN $name rc=$rc wall_s=$(python3 -c "print(f'{$t1-$t0:.3f}')") maxrss_kb=${rss:-n/a} args: $*" | tee -a "$LOG"
}

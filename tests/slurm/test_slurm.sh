#!/bin/bash
# The Slurm side (slurm/, docs/slurm.md) against Debian's real slurmctld, slurmd and munged on
# loopback, all in the foreground under this script, with a private slurm.conf, munge key and
# socket; p2pnode serve on the recorded 4x H200 node. The node drains when p2pnode finds a fault
# (a GPU link trained at x8) and resumes when it is repaired; a job is refused by the prolog on a
# node at fault; other jobs on the GPUs, a person's drain, a dead slurmctld and a dead p2pnode
# never drain it or undo a person's drain; slurmd's own run of the HealthCheckProgram drains it.
# About a minute (9 s of it sinfo retrying a stopped slurmctld). Needs root: slurmd runs the
# health check and the prolog as root, and scontrol update is for SlurmUser or root.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_slurm.sh PATH-TO-p2pnode}
source "$(dirname "$0")/../serve/lib.sh"
require curl jq python3 logger munged slurmctld slurmd sinfo scontrol srun
[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs the health check and the prolog as root"
T0=$(date +%s)
NODE=p2pnode-test
HOST=$(hostname -s)
S=$WORK/slurm
mkdir -p "$S/state" "$S/spool" "$S/munge-key" "$S/munge"
export SLURM_CONF=$S/slurm.conf

# --- munge with its own key and socket ---
dd if=/dev/urandom of="$S/munge-key/key" bs=1024 count=1 status=none
chmod 0400 "$S/munge-key/key"
munged -F --force --socket="$S/munge/socket" --key-file="$S/munge-key/key" --pid-file="$S/munge/pid" \
  --seed-file="$S/munge/seed" --log-file="$S/munge/log" > "$S/munge/out" 2>&1 &
MUNGED=$!
wait_until 10 test -S "$S/munge/socket" || { cat "$S/munge/out"; fail "munged did not create its socket"; exit 1; }

# --- slurm.conf: the node on 127.0.0.1 under its own name, free ports ---
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
# What slurmd runs has no environment (no PATH, no SLURM_CONF): a site's slurm.conf is where
# scontrol looks by default, this test's is not, so these wrappers name the settings file.
printf '#!/bin/sh\nP2PNODE_SLURM_DEFAULTS=%s/defaults\nexport P2PNODE_SLURM_DEFAULTS\nexec %s "$@"\n' "$WORK" "$SRC/slurm/p2pnode-slurm-health" > "$WORK/health"
printf '#!/bin/sh\nP2PNODE_SLURM_DEFAULTS=%s/defaults\nexport P2PNODE_SLURM_DEFAULTS\nexec %s "$@"\n' "$WORK" "$SRC/slurm/p2pnode-slurm-prolog" > "$WORK/prolog"
chmod +x "$WORK/health" "$WORK/prolog"
cat > "$SLURM_CONF" <<EOF
ClusterName=test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/socket
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=1
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
HealthCheckProgram=$WORK/health
HealthCheckInterval=3600
Prolog=$WORK/prolog
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$HOST CPUs=1 State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
start_slurmctld() { slurmctld -D -f "$SLURM_CONF" >> "$S/slurmctld.out" 2>&1 & CTLD=$!; }
start_slurmd() { slurmd -D -f "$SLURM_CONF" -N "$NODE" >> "$S/slurmd.out" 2>&1 & SLURMD=$!; }
# stop PID: SIGTERM, and SIGKILL after 20 s (slurmd waits for its job steps, which wait for slurmctld).
stop() {
  [ -n "${1:-}" ] || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  (sleep 20; kill -KILL "$1" 2>/dev/null) & local killer=$!
  wait "$1" 2>/dev/null
  kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null
}
# On exit: the jobs done first, then slurmd, slurmctld and munged in that order (a slurmd stopped
# after slurmctld or munge hangs on its last step's completion), then lib.sh's cleanup.
slurm_cleanup() {
  [ "$BASHPID" = "$$" ] || return 0  # the main shell's only (lib.sh's cleanup says why)
  [ -z "${CTLD:-}" ] || wait_until 30 bash -c '[ -z "$(squeue -h 2>/dev/null)" ]'
  stop "${SLURMD:-}"; stop "${CTLD:-}"; stop "${MUNGED:-}"
  cleanup
}
trap slurm_cleanup EXIT
slurm_node() { sinfo -h -N -n "$NODE" -o '%T|%E' 2>/dev/null | head -n 1; }
node_is() { case $(slurm_node) in $1) return 0 ;; esac; return 1; }  # node_is 'GLOB'
updates() { grep -c "update_node: node $NODE" "$S/slurmctld.log"; }  # scontrol updates slurmctld took

# --- syslog: a datagram socket logger writes to (P2PNODE_SYSLOG_SOCKET) ---
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    while True: f.write(s.recv(65536) + b"\n")' "$WORK/syslog.sock" "$WORK/syslog" &
PIDS+=($!)
: > "$WORK/syslog"
wait_until 10 test -S "$WORK/syslog.sock" || { fail "the syslog stand-in did not start"; exit 1; }

# --- p2pnode on the recorded 4x H200, ready; its profile asks the scheduler's busy file ---
make_node h200 h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
sed "s|^selftest:|selftest:\n  scheduler: {busy_file: /run/p2pnode-busy}|" "$SRC/profiles/h200-nvlink.yaml" \
  > "$WORK/h200/root/etc/p2pnode/profiles/h200-nvlink.yaml"
write_config h200 "$SRC/tests/serve/agents/replay.sh" "[\"$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json\"]"
start_daemon h200 || exit 1
cat > "$WORK/defaults" <<EOF
P2PNODE_URL=$URL
SLURM_CONF=$SLURM_CONF
P2PNODE_SYSLOG_SOCKET=$WORK/syslog.sock
EOF
AUTH=(-H "Authorization: Bearer $TOKEN")
LINK=$WORK/h200/root/sys/devices/pci0000:00/0000:00:06.0/current_link_width
# reconcile: POST /v1/reconcile and wait until that pass is over.
reconcile() {
  local runs; runs=$(curl -s "$URL/v1/status" | jq '.reconcile.runs | add')
  curl -sf -o /dev/null -X POST "${AUTH[@]}" "$URL/${1:-v1/reconcile}" || { fail "POST /${1:-v1/reconcile}"; return 1; }
  wait_until 30 bash -c "curl -s '$URL/v1/status' | jq -e '(.reconcile.runs | add) > $runs and .reconcile.running == false and .reconcile.queued == false' >/dev/null"
}
readyz() { curl -s -o /dev/null -w '%{http_code}' "$URL/readyz"; }
# health / prolog: as slurmd runs them, with an empty environment; HC_RC, HC_OUT, HC_ERR.
health() { run_as_slurmd "$SRC/slurm/p2pnode-slurm-health"; }
prolog() { run_as_slurmd "$SRC/slurm/p2pnode-slurm-prolog" SLURM_JOB_ID=4711; }
run_as_slurmd() {
  local prog=$1; shift
  env -i SLURMD_NODENAME="$NODE" P2PNODE_SLURM_DEFAULTS="$WORK/defaults" "$@" "$prog" > "$WORK/out" 2> "$WORK/err"
  HC_RC=$? HC_OUT=$(cat "$WORK/out") HC_ERR=$(cat "$WORK/err")
}
# nhc: check_p2pnode as LBNL NHC runs it (NHC is not in Debian: its loader sources each .nhc into
# bash and evals the check; log() and die() here keep NHC's contract: die ends the run and offlines).
nhc() {
  : > "$WORK/nhc.log"
  env -i SLURMD_NODENAME="$NODE" P2PNODE_SLURM_HEALTH="$WORK/health" NHC_LOG="$WORK/nhc.log" bash -c '
    log() { echo "$*" >> "$NHC_LOG"; }
    die() { echo "DIE $*" >> "$NHC_LOG"; exit "$1"; }
    . "$1" && check_p2pnode' _ "$SRC/slurm/p2pnode.nhc"
  HC_RC=$?
}

start_slurmctld
wait_until 30 scontrol ping > /dev/null || { cat "$S/slurmctld.out"; fail "slurmctld did not answer within 30 s"; exit 1; }
start_slurmd
if ! wait_until 30 node_is 'idle|none'; then
  tail -20 "$S/slurmctld.log" "$S/slurmd.log"; fail "the node did not come up idle: $(slurm_node)"; exit 1
fi
pass "munged, slurmctld and slurmd up on 127.0.0.1 (ports $CTLD_PORT, $SLURMD_PORT); $NODE idle"
check "slurmd ran the health check at its start (no error in its log)" bash -c "! grep -q 'health_check failed' '$S/slurmd.log'"

# --- ready: nothing to do; a job starts (the prolog passes) ---
check "p2pnode is ready" test "$(readyz)" = 200
health
check "ready: the health check exits 0" test "$HC_RC" = 0
check "ready: the node stays idle, no reason" node_is 'idle|none'
timeout 30 srun -N1 -w "$NODE" -t 1 true > "$WORK/srun" 2>&1
check "ready: a job runs (the prolog exits 0 under slurmd)" test $? = 0
prolog
check "ready: the prolog exits 0" test "$HC_RC" = 0

# --- starting (no verdict yet: its first pass waits on a hung self-test): never a drain ---
make_node fresh h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config fresh "$SRC/tests/serve/agents/hang.sh" "[]" $'selftest:\n  time_limit: 30s'
"$BIN" serve --root "$WORK/fresh/root" --config "$WORK/fresh/p2pnode.yaml" --listen 127.0.0.1:0 \
  --port-file "$WORK/fresh/port" >> "$WORK/fresh/log" 2>&1 &
FRESH=$!
PIDS+=("$FRESH")
wait_until 20 test -s "$WORK/fresh/port" || fail "the second daemon did not listen"
sed "s|^P2PNODE_URL=.*|P2PNODE_URL=http://127.0.0.1:$(cat "$WORK/fresh/port")|" "$WORK/defaults" > "$WORK/defaults.fresh"
check "a daemon in its first pass says starting" \
  bash -c "curl -s 'http://127.0.0.1:$(cat "$WORK/fresh/port")/readyz' | jq -e '.state == \"starting\"' >/dev/null"
n=$(updates)
run_as_slurmd "$SRC/slurm/p2pnode-slurm-health" P2PNODE_SLURM_DEFAULTS="$WORK/defaults.fresh"
check "starting: the health check exits 0 and changes nothing" \
  bash -c "test $HC_RC = 0 && test $(updates) = $n && [[ '$(slurm_node)' == idle*'|none' ]]"
run_as_slurmd "$SRC/slurm/p2pnode-slurm-prolog" P2PNODE_SLURM_DEFAULTS="$WORK/defaults.fresh"
check "starting: the prolog lets the job start" test "$HC_RC" = 0
kill -TERM "$FRESH"; wait "$FRESH" 2>/dev/null

# --- another job's processes on the GPUs: the self-test is skipped, not a fault ---
mkdir -p "$WORK/h200/root/run" && touch "$WORK/h200/root/run/p2pnode-busy"
reconcile v1/selftest
check "busy GPUs: the self-test is skipped as busy" jq -e '.skipped.busy == true' <(curl -s "$URL/v1/selftest")
check "busy GPUs: /readyz stays 200" test "$(readyz)" = 200
health
check "busy GPUs: the health check exits 0 and the node stays idle" bash -c "test $HC_RC = 0 && [[ '$(slurm_node)' == idle*'|none' ]]"
rm -f "$WORK/h200/root/run/p2pnode-busy"

# --- a fault: one GPU link at x8 of x16 ---
echo 8 > "$LINK"
reconcile
check "a link at x8: /readyz 503" test "$(readyz)" = 503
timeout 30 srun -N1 -w "$NODE" -t 1 true > "$WORK/srun" 2>&1
rc=$?
check "a fault: the job is refused by the prolog (srun exit $rc)" bash -c "test $rc != 0 && grep -qi 'prolog failed' '$WORK/srun'"
REASON=$(slurm_node)
check "and the node is drained with p2pnode's reason, which Slurm kept: $REASON" \
  bash -c "[[ '$REASON' == drain*'|p2pnode: blocked: pcie.link 0000:00:06.0: trained at x8 of x16'* ]]"
check "the refusal is logged to syslog" grep -q 'p2pnode-slurm.*refusing job' "$WORK/syslog"
prolog
check "a fault: the prolog exits 1" test "$HC_RC" = 1
n=$(updates)
health; health
check "a drained node with the same reason: the health check exits 0" test "$HC_RC" = 0
check "and issues no drain again (slurmctld took no update: $n before, $(updates) after)" test "$(updates)" = "$n"

# slurmd runs the HealthCheckProgram itself at its start: a person resumes the node, slurmd restarts.
: > "$WORK/syslog"
scontrol update nodename="$NODE" state=resume
wait_until 10 node_is 'idle|none' || fail "resume by hand"
stop "$SLURMD"
start_slurmd
# (drained, not drained*: slurmd registers after its start health check, and is answering again)
check "slurmd's own run of the health check drains the node again" \
  wait_until 30 node_is 'drained|p2pnode: blocked: pcie.link 0000:00:06.0*'
check "the drain is logged to syslog" grep -q 'p2pnode-slurm.*drained p2pnode-test: p2pnode: blocked: pcie.link' "$WORK/syslog"

# --- repaired: ready again, the node resumes ---
echo 16 > "$LINK"
reconcile
check "repaired: /readyz 200" test "$(readyz)" = 200
health
check "repaired: the health check resumes the node p2pnode drained ($(slurm_node))" bash -c "test $HC_RC = 0 && [[ '$(slurm_node)' == idle*'|none' ]]"
check "the resume is logged to syslog" grep -q 'p2pnode-slurm.*resumed p2pnode-test: p2pnode is ready again' "$WORK/syslog"

# --- a person's drain stays, ready or not ---
scontrol update nodename="$NODE" state=drain reason="hands off"
health
check "a person's drain stays while p2pnode is ready" node_is 'drain*|hands off'
echo 8 > "$LINK"; reconcile
n=$(updates)
health
check "and a fault does not overwrite it (exit $HC_RC, no update)" \
  bash -c "test $HC_RC = 0 && test $(updates) = $n && [[ '$(slurm_node)' == 'drain'*'|hands off' ]]"
check "the health check says whose drain it left" grep -q "someone else's reason, left as it is: hands off" "$WORK/err"
# NHC runs the same program: it drains once the person resumes the node, and never calls die.
scontrol update nodename="$NODE" state=resume
wait_until 10 node_is 'idle|none' || fail "resume by hand"
nhc
check "NHC's check_p2pnode drains the node at fault and passes (exit $HC_RC, no die)" \
  bash -c "test $HC_RC = 0 && ! grep -q DIE '$WORK/nhc.log' && [[ '$(slurm_node)' == drain*'|p2pnode: blocked: pcie.link'* ]]"
check "and NHC's log has what it did" grep -q '^check_p2pnode: p2pnode-slurm: drained p2pnode-test' "$WORK/nhc.log"

# --- slurmctld down: an error, logged; nothing else; back up: it works ---
echo 16 > "$LINK"; reconcile
stop "$CTLD"
: > "$WORK/syslog"
t=$(date +%s)
health
echo "     the health check with slurmctld stopped took $(( $(date +%s) - t )) s (sinfo retries)"
check "slurmctld stopped: the health check exits 1" test "$HC_RC" = 1
check "and says Slurm does not answer on stderr" grep -q 'Slurm does not answer' "$WORK/err"
check "and on stdout, which slurmd copies into its log" grep -q 'Slurm does not answer' "$WORK/out"
check "and to syslog" grep -q 'p2pnode-slurm.*Slurm does not answer' "$WORK/syslog"
start_slurmctld
wait_until 30 scontrol ping > /dev/null || fail "slurmctld did not come back within 30 s"
check "slurmctld back: the node is still drained by p2pnode" node_is 'drained|p2pnode: *'
# sinfo says "drained" before slurmd has registered again (UNKNOWN+DRAIN), and until then slurmctld
# 22.05 refuses a resume ("Invalid node state specified"): the health check would log it and try
# again at the next interval; here, wait for the registration.
wait_until 30 bash -c "scontrol -o show node '$NODE' | grep -q ' State=IDLE+DRAIN '" || fail "slurmd did not register again"
health
check "and the next run resumes it, p2pnode being ready ($(slurm_node))" bash -c "test $HC_RC = 0 && [[ '$(slurm_node)' == idle*'|none' ]]"
[ "$HC_RC" = 0 ] || cat "$WORK/err"

# --- p2pnode down: an error, logged; never a drain; jobs still start ---
stop_daemon h200
: > "$WORK/syslog"
n=$(updates)
health
check "p2pnode stopped: the health check exits 1" test "$HC_RC" = 1
check "and logs that p2pnode does not answer (stderr, syslog)" \
  bash -c "grep -q 'p2pnode does not answer at $URL/readyz' '$WORK/err' && grep -q 'p2pnode-slurm.*p2pnode does not answer' '$WORK/syslog'"
check "and does not drain: the node stays idle, slurmctld took no update ($(slurm_node))" \
  bash -c "[[ '$(slurm_node)' == idle*'|none' ]] && test $(updates) = $n"
prolog
check "p2pnode stopped: the prolog lets the job start (exit 0)" test "$HC_RC" = 0
nhc
check "p2pnode stopped: NHC's check passes, logging the error (no die)" \
  bash -c "test $HC_RC = 0 && ! grep -q DIE '$WORK/nhc.log' && grep -q 'p2pnode does not answer' '$WORK/nhc.log'"
timeout 30 srun -N1 -w "$NODE" -t 1 true > "$WORK/srun" 2>&1
check "p2pnode stopped: a job runs" test $? = 0

echo "     $(( $(date +%s) - T0 )) s"
[ "$FAILS" -eq 0 ] || tail -n 5 "$S/slurmctld.log" "$S/slurmd.log"
finish

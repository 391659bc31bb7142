# What the Slurm side of p2pnode shares: sourced by p2pnode-slurm-health (HealthCheckProgram),
# p2pnode-slurm-prolog (Prolog) and p2pnode.nhc (NHC). POSIX sh; needs curl, jq and logger, and
# Slurm's sinfo and scontrol (slurm-client). docs/slurm.md says how each is installed and why.
# shellcheck shell=sh disable=SC1090,SC2034  # the settings file is the site's; the callers read the variables

# slurmd runs the health check and the prolog with almost no environment: no PATH, and for the
# health check no SLURM_CONF either (seen with slurmd 22.05: SLURMD_NODENAME and PWD only).
PATH=/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
export PATH

# Settings: shell assignments in /etc/default/p2pnode-slurm (P2PNODE_SLURM_DEFAULTS names another
# file), then these defaults. Slurm passes no environment worth reading, so the file is the one place.
P2PNODE_SLURM_DEFAULTS=${P2PNODE_SLURM_DEFAULTS:-/etc/default/p2pnode-slurm}
if [ -r "$P2PNODE_SLURM_DEFAULTS" ]; then . "$P2PNODE_SLURM_DEFAULTS"; fi
P2PNODE_URL=${P2PNODE_URL:-http://127.0.0.1:9470}   # the daemon's listen: address
P2PNODE_CACERT=${P2PNODE_CACERT:-}                  # its certificate, when it speaks HTTPS
P2PNODE_TIMEOUT=${P2PNODE_TIMEOUT:-10}              # seconds for one request to the daemon
P2PNODE_SLURM_TIMEOUT=${P2PNODE_SLURM_TIMEOUT:-20}  # seconds for one sinfo or scontrol
P2PNODE_SYSLOG_SOCKET=${P2PNODE_SYSLOG_SOCKET:-}    # logger's socket; empty: the system's /dev/log
# slurmd names the node it runs for; by hand, the short host name (NodeName= in slurm.conf).
P2PNODE_SLURM_NODE=${P2PNODE_SLURM_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}
[ -z "${SLURM_CONF:-}" ] || export SLURM_CONF
# Every reason p2pnode sets starts so; it resumes only a node whose reason does.
P2PNODE_REASON_PREFIX="p2pnode:"
# Slurm keeps a longer reason (22.05 took 3,000 characters), but a person reads it on one line.
P2PNODE_REASON_MAX=200

# p2pnode_log PRIORITY MESSAGE: stderr, and syslog (daemon facility, tag p2pnode-slurm) unless
# PRIORITY is info (what repeats at every run); an error also on stdout, which slurmd copies into
# its own log beside the exit status.
p2pnode_log() {
  echo "p2pnode-slurm: $2" >&2
  [ "$1" = info ] && return 0
  logger -t p2pnode-slurm -p "daemon.$1" ${P2PNODE_SYSLOG_SOCKET:+-u "$P2PNODE_SYSLOG_SOCKET"} -- "$2" 2>/dev/null
  if [ "$1" = err ]; then echo "p2pnode-slurm: $2"; fi
}

p2pnode_need() {  # p2pnode_need PROGRAM...: each on PATH, or an error naming the missing one
  for _p in "$@"; do
    command -v "$_p" >/dev/null 2>&1 && continue
    p2pnode_log err "$_p is not installed (apt install curl jq slurm-client); nothing was checked"
    return 1
  done
}

# p2pnode_ask: what the daemon says, from one GET /readyz (its 503 body carries the state and the
# reasons, the driver's drain-P2P hold among them, which /v1/status does not list). Sets
# P2PNODE_VERDICT to ready, starting, fault or unknown, and P2PNODE_WHY: for a fault the reason
# Slurm gets ("p2pnode: <state>: <first reason>", one line, at most P2PNODE_REASON_MAX characters),
# else what could not be told.
p2pnode_ask() {
  P2PNODE_VERDICT=unknown
  P2PNODE_WHY=
  _resp=$(curl -sS -m "$P2PNODE_TIMEOUT" ${P2PNODE_CACERT:+--cacert "$P2PNODE_CACERT"} \
    -w '\n%{http_code}' "$P2PNODE_URL/readyz" 2>&1)
  _rc=$?
  _code=${_resp##*
}
  _body=${_resp%
*}
  if [ "$_rc" -ne 0 ]; then
    P2PNODE_WHY="p2pnode does not answer at $P2PNODE_URL/readyz ($(printf '%s\n' "$_body" | grep -m1 '^curl:' || echo "curl exit $_rc"))"
    return
  fi
  case $_code in
    200) P2PNODE_VERDICT=ready; return ;;
    503) ;;
    *) P2PNODE_WHY="p2pnode answered HTTP $_code to $P2PNODE_URL/readyz, neither 200 nor 503"; return ;;
  esac
  _state=$(printf '%s' "$_body" | jq -r '.state // empty' 2>/dev/null)
  case $_state in
    "") P2PNODE_WHY="p2pnode answered 503 without a state at $P2PNODE_URL/readyz"; return ;;
    # No decision yet since the daemon started on a box without a state file: not a fault.
    starting) P2PNODE_VERDICT=starting; P2PNODE_WHY="p2pnode is starting: no verdict yet"; return ;;
  esac
  # degraded, failed, blocked, reboot_required, or ready with the driver asking to drain P2P on a
  # GPU. Other jobs on the GPUs are never among them: a busy or contended self-test leaves /readyz
  # as it was (docs/selftest.md).
  P2PNODE_VERDICT=fault
  P2PNODE_WHY=$(printf '%s' "$_body" | jq -r --arg p "$P2PNODE_REASON_PREFIX" --argjson max "$P2PNODE_REASON_MAX" '
    "\($p) \(.state): \((.reasons // [])[0] // .detail // "no reason given")"
    | gsub("[[:cntrl:]]+"; " ")
    | if length > $max then .[0:$max - 3] + "..." else . end')
}

# p2pnode_slurm_look: the node's state and reason in Slurm (sinfo: "drained", "idle", "mixed",
# ...; the reason is "none" when there is none). Returns 1 with P2PNODE_SLURM_WHY when Slurm does
# not answer or does not know the node.
p2pnode_slurm_look() {
  _out=$(timeout "$P2PNODE_SLURM_TIMEOUT" sinfo -h -N -n "$P2PNODE_SLURM_NODE" -o '%T|%E' 2>&1)
  _rc=$?
  _line=$(printf '%s\n' "$_out" | head -n 1)
  if [ "$_rc" -ne 0 ]; then
    P2PNODE_SLURM_WHY="Slurm does not answer (sinfo exit $_rc: $_line)"
    return 1
  fi
  case $_line in
    *"|"*) ;;
    *) P2PNODE_SLURM_WHY="Slurm does not know the node $P2PNODE_SLURM_NODE (set P2PNODE_SLURM_NODE to its NodeName)"; return 1 ;;
  esac
  P2PNODE_SLURM_STATE=${_line%%|*}
  P2PNODE_SLURM_REASON=${_line#*|}
}

p2pnode_slurm_update() {  # p2pnode_slurm_update ARG...: scontrol update nodename=NODE ARG...
  _out=$(timeout "$P2PNODE_SLURM_TIMEOUT" scontrol update nodename="$P2PNODE_SLURM_NODE" "$@" 2>&1) && return 0
  P2PNODE_SLURM_WHY="scontrol update nodename=$P2PNODE_SLURM_NODE $* failed: $(printf '%s\n' "$_out" | head -n 1)"
  return 1
}

# p2pnode_drain REASON: drains the node with REASON unless it is drained with it already, or a
# person (any reason not p2pnode's) took it out: theirs stays. Returns 1 when Slurm failed.
p2pnode_drain() {
  p2pnode_slurm_look || return 1
  case $P2PNODE_SLURM_REASON in
    "$1") return 0 ;;
    none | "") _what="drained" ;;
    "$P2PNODE_REASON_PREFIX"*) _what="drain reason now" ;;
    *)
      p2pnode_log info "$P2PNODE_SLURM_NODE is $P2PNODE_SLURM_STATE with someone else's reason, left as it is: $P2PNODE_SLURM_REASON ($1)"
      return 0 ;;
  esac
  p2pnode_slurm_update state=drain reason="$1" || return 1
  p2pnode_log warning "$_what $P2PNODE_SLURM_NODE: $1"
}

# p2pnode_resume: resumes the node only when p2pnode drained it (its reason starts "p2pnode:").
p2pnode_resume() {
  p2pnode_slurm_look || return 1
  case $P2PNODE_SLURM_REASON in
    "$P2PNODE_REASON_PREFIX"*) ;;
    *) return 0 ;;
  esac
  p2pnode_slurm_update state=resume || return 1
  p2pnode_log notice "resumed $P2PNODE_SLURM_NODE: p2pnode is ready again (it was $P2PNODE_SLURM_STATE: $P2PNODE_SLURM_REASON)"
}

# Shared helpers for tests/serve/test_*.sh: start `p2pnode serve` on an ephemeral port against a
# copy of a fixture root, poll with deadlines (never sleep-to-wait), record responses for the
# OpenAPI validator. Source it after setting BIN (the p2pnode binary).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(temp_dir serve)
RESP="$WORK/responses"
mkdir -p "$RESP"
TOKEN=0123456789abcdef0123456789abcdef
PIDS=()
# HTTPS (test_tls.sh): SCHEME=https and CURL_TLS=(--cacert CERT) before start_daemon.
SCHEME=http
CURL_TLS=()

# The EXIT trap is the main shell's: a subshell killed before it has reset its traps (a
# background helper stopped at once) would otherwise run it and delete the work dir under the test.
cleanup() {
  [ "$BASHPID" = "$$" ] || return 0
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "$FAILS" -eq 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "work dir kept: $WORK"; fi
}
trap cleanup EXIT


# make_node NAME FIXTURE PROFILE...: a root at $WORK/NAME/root with the profiles installed.
make_node() {
  local name=$1 fixture=$2; shift 2
  local root="$WORK/$name/root"
  mkdir -p "$WORK/$name"
  cp -a "$SRC/tests/fixtures/$fixture" "$root"
  mkdir -p "$root/etc/p2pnode/profiles" "$root/var/lib/p2pnode"
  local p
  for p in "$@"; do cp "$p" "$root/etc/p2pnode/profiles/"; done
  (umask 077; printf '%s\n' "$TOKEN" > "$root/etc/p2pnode/token")
}

# write_config NAME AGENT_PATH ARGS_YAML [EXTRA_YAML]: the daemon config for node NAME. Every path
# in the config is inside the root (--root), agent.path too: the agent (AGENT_PATH on this host) is
# linked into the root at /usr/libexec/p2pnode-test/<its name>, a path this host does not have, so a
# daemon that ran agent.path without the root would fail the test.
write_config() {
  local name=$1 agent=/usr/libexec/p2pnode-test/$(basename "$2") args=$3 extra=${4:-}
  [ ! -e "$agent" ] || { echo "write_config: $agent exists on this host: the test could not tell the root's agent from it" >&2; return 1; }
  mkdir -p "$WORK/$name/root$(dirname "$agent")"
  ln -sfn "$(readlink -f "$2")" "$WORK/$name/root$agent"
  cat > "$WORK/$name/p2pnode.yaml" <<YAML
apiVersion: p2pnode/v1
kind: DaemonConfig
listen: 127.0.0.1:0
token_file: /etc/p2pnode/token
profiles_dir: /etc/p2pnode/profiles
state_dir: /var/lib/p2pnode
agent:
  path: $agent
  args: $args
http:
  threads: 4
  max_body: 4KiB
$extra
YAML
}

# start_daemon NAME: starts it, waits for the port and for the first reconcile to decide.
start_daemon() {
  local name=$1
  rm -f "$WORK/$name/port"
  "$BIN" serve --root "$WORK/$name/root" --config "$WORK/$name/p2pnode.yaml" --listen 127.0.0.1:0 \
    --port-file "$WORK/$name/port" >>"$WORK/$name/log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  echo "$pid" > "$WORK/$name/pid"
  if ! wait_until 20 test -s "$WORK/$name/port"; then
    fail "$name: the daemon did not listen within 20 s"; cat "$WORK/$name/log"; return 1
  fi
  PORT=$(cat "$WORK/$name/port")
  URL="$SCHEME://127.0.0.1:$PORT"
  eval "URL_$name=\$URL"
  if ! wait_until 60 decided "$URL"; then
    fail "$name: no reconcile decided within 60 s"; cat "$WORK/$name/log"; return 1
  fi
}
decided() { curl -sf "${CURL_TLS[@]}" "$1/v1/status" | jq -e '.state != "starting" and .reconcile.running == false and .reconcile.queued == false' >/dev/null; }
stop_daemon() {
  local pid; pid=$(cat "$WORK/$1/pid")
  kill -TERM "$pid"
  wait_until 20 bash -c "! kill -0 $pid" || { fail "$1: did not stop on SIGTERM"; return 1; }
}

# record NAME METHOD PATH [curl args...]: performs the request and keeps it for validate.cjs.
# Sets STATUS and BODY.
record() {
  local name=$1 method=$2 path=$3; shift 3
  local out="$RESP/$name"
  local meta
  meta=$(curl -s "${CURL_TLS[@]}" -o "$out.body" -w '%{http_code} %{content_type}' -X "$method" "$@" "$URL$path")
  echo "$method $path $meta" > "$out.meta"
  STATUS=${meta%% *}
  BODY=$(cat "$out.body" 2>/dev/null)
}

# node_modules for the validator, in a cache outside the tree (never committed), installed once
# under the lock every npm cache shares (tests/lib/npm.sh).
source "$SRC/tests/lib/npm.sh"
ensure_validator() {
  NODE_CACHE=${P2PNODE_NODE_CACHE:-$P2PNODE_TEST_CACHE/npm-validator}
  command -v node >/dev/null || { echo "node is not installed" >&2; return 1; }
  npm_packages "$NODE_CACHE" openapi-response-validator @apidevtools/swagger-parser -- \
    openapi-response-validator@12 @apidevtools/swagger-parser@10
}
# validate_responses [--recorded-only]: without it, every operation of the spec must have been recorded.
# `command`: a test may define a shell function named node (test_doorbell.sh does).
validate_responses() {
  NODE_PATH="$NODE_CACHE/node_modules" command node "$SRC/tests/serve/validate.cjs" "$SRC/api/openapi.yaml" "$RESP" "$@"
}

#!/bin/sh
# The daemon without systemd (p2pnode_service_manager: direct), for a node that has none (a chroot,
# a container): started in its own session with a pid file, stopped with TERM then KILL, reloaded
# with HUP, as p2pnode.service would. Prints "changed" when it started, restarted or signalled it.
# Usage: p2pnode-direct.sh started|restarted|reloaded|stopped
set -eu
pidfile=/run/p2pnode.pid
log=/var/log/p2pnode.log
pid() { cat "$pidfile" 2>/dev/null || true; }
running() { p=$(pid); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
start() {
  mkdir -p /run/p2pnode /var/lib/p2pnode
  setsid /usr/bin/p2pnode serve --config /etc/p2pnode/p2pnode.yaml >>"$log" 2>&1 </dev/null &
  echo $! > "$pidfile"
  echo changed
}
stop() {
  running || return 0
  p=$(pid); kill -TERM "$p"
  i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; fi
  rm -f "$pidfile"
}
case "${1:?usage: p2pnode-direct.sh started|restarted|reloaded|stopped}" in
  started) running || start ;;
  restarted) stop; start ;;
  reloaded) if running; then kill -HUP "$(pid)"; echo changed; else start; fi ;;
  stopped) if running; then stop; echo changed; fi ;;
  *) echo "p2pnode-direct.sh: unknown action '$1' (started, restarted, reloaded, stopped)" >&2; exit 2 ;;
esac

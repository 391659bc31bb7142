#!/bin/bash
# systemd units: `systemd-analyze verify` (offline) on p2pnode.service and p2pnode-apply.service,
# with ExecStart pointed at the built binary (verify checks that the program exists).
BIN=${1:?usage: test_units.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
BIN=$(readlink -f "$BIN")
for u in p2pnode.service p2pnode-apply.service; do
  sed "s|/usr/bin/p2pnode|$BIN|g" "$SRC/systemd/$u" > "$WORK/$u"
done
OUT=$(systemd-analyze verify --recursive-errors=no "$WORK/p2pnode.service" "$WORK/p2pnode-apply.service" 2>&1); RC=$?
if [ $RC -ne 0 ] && grep -qiE 'Failed to (connect|initialize)|No such file or directory.*(bus|manager)|not been booted with systemd' <<<"$OUT"; then
  skip "systemd-analyze cannot run in this container: $OUT"
fi
echo "$OUT"
check "systemd-analyze verify passes" test $RC -eq 0 -a -z "$OUT"
for key in "Type=notify" "WatchdogSec=" "Restart=on-failure" "ExecReload=" "StateDirectory=p2pnode" "ProtectSystem=strict"; do
  check "p2pnode.service has $key" grep -q "^$key" "$SRC/systemd/p2pnode.service"
done
for bad in ProtectKernelTunables ProtectKernelModules PrivateDevices; do
  check "p2pnode.service does not set $bad (FACTS.md)" bash -c "! grep -q '^$bad' '$SRC/systemd/p2pnode.service'"
done
# Under ProtectSystem=strict only what a unit names is writable: the NVIDIA core's cache is
# /var/cache/p2pnode (daemon/lifecycle/nvidia_core.hpp), written by apply and by the daemon.
for u in p2pnode.service p2pnode-apply.service; do
  check "$u has CacheDirectory=p2pnode" grep -q '^CacheDirectory=p2pnode$' "$SRC/systemd/$u"
  check "$u has StateDirectory=p2pnode" grep -q '^StateDirectory=p2pnode$' "$SRC/systemd/$u"
done
grep -q '"/var/cache/p2pnode/nvidia-core"' "$SRC/daemon/lifecycle/nvidia_core.hpp"
check "the cache the units open is the one the code writes" test $? -eq 0
check "the apply unit runs before the daemon" grep -q '^Before=p2pnode.service' "$SRC/systemd/p2pnode-apply.service"
echo "$FAILS failure(s)"
[ "$FAILS" -eq 0 ]

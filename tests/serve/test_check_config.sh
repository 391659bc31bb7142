#!/bin/bash
# `p2pnode serve --check-config` judges the token file as the daemon will use it: a file that
# exists but is empty, too short or readable by others fails (exit 2, the reason named); a missing
# one is a warning (POSTs disabled; a read-only API is a choice), an error with --strict, which is
# how Ansible validates a config after it made the token.
BIN=${1:?usage: test_check_config.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
make_node cc h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config cc /usr/bin/true "[]"
root=$WORK/cc/root token=$root/etc/p2pnode/token
cc() { "$BIN" serve --root "$root" --config "$WORK/cc/p2pnode.yaml" --check-config "$@" > "$WORK/out" 2>&1; echo $?; }
expect() {  # expect WHAT STATUS PATTERN [ARGS]
  local what=$1 want=$2 pattern=$3; shift 3
  local rc; rc=$(cc "$@")
  if [ "$rc" = "$want" ] && grep -q -- "$pattern" "$WORK/out"; then pass "$what: exit $rc"
  else fail "$what: exit $rc (wanted $want, '$pattern')"; cat "$WORK/out"; fi
}
expect "a good token (0600, 32 characters)" 0 "is valid"
chmod 0644 "$token"
expect "a token readable by others" 2 "readable by group or others (mode 644)"
rm -f "$token"; (umask 077; : > "$token")
expect "an empty token" 2 "fewer than 16 characters"
rm -f "$token"; (umask 077; printf "abc\n" > "$token")
expect "a 3-character token" 2 "fewer than 16 characters"
rm -f "$token"
expect "a missing token: a warning" 0 "warning: the token file .* does not exist"
expect "a missing token with --strict" 2 "does not exist: POST" --strict
# The file it judged is the one it names (it said "(built-in defaults)" after reading the default path).
(umask 077; printf '0123456789abcdef0123\n' > "$token")
mkdir -p "$root/etc/p2pnode" && cp "$WORK/cc/p2pnode.yaml" "$root/etc/p2pnode/p2pnode.yaml"
rc=$("$BIN" serve --root "$root" --check-config > "$WORK/out" 2>&1; echo $?)
if [ "$rc" = 0 ] && grep -q "the configuration $root/etc/p2pnode/p2pnode.yaml is valid" "$WORK/out"; then
  pass "the default configuration file is named when it was read"
else fail "the default configuration file is named when it was read: exit $rc"; cat "$WORK/out"; fi
rm -f "$root/etc/p2pnode/p2pnode.yaml"
rc=$("$BIN" serve --root "$root" --check-config > "$WORK/out" 2>&1; echo $?)
grep -q "(built-in defaults: no configuration file) is valid" "$WORK/out" \
  && pass "no configuration file: the built-in defaults, said so" || { fail "no configuration file: exit $rc"; cat "$WORK/out"; }
finish

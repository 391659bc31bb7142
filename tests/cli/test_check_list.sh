#!/bin/bash
# `p2pnode check --list` names every check; docs/checks.md's table has a row for each of them and
# none besides; --only with an unknown id points at --list; --only on a check with nothing to
# judge on the box says so. Reads only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_check_list.sh PATH-TO-p2pnode}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
require jq
FAILS=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
listed=$("$BIN" check --list | awk '{print $1}' | sort)
[ "$(echo "$listed" | wc -l)" -ge 20 ] && ok "check --list names $(echo "$listed" | wc -l) checks" || bad "check --list: $listed"
[ "$("$BIN" check --list --json | jq -r '.[].id' | sort)" = "$listed" ] && ok "check --list --json names the same" || bad "--json differs"
documented=$(sed -n '/^| id | what it catches |$/,/^$/p' "$SRC/docs/checks.md" | grep -o '^| `[a-z0-9_.]*`' | tr -d '|` ' | sort)
missing=$(comm -23 <(echo "$listed") <(echo "$documented"))
extra=$(comm -13 <(echo "$listed") <(echo "$documented"))
[ -z "$missing" ] && ok "docs/checks.md has a row for every check" || bad "docs/checks.md lacks: $missing"
[ -z "$extra" ] && ok "docs/checks.md names no check that does not exist" || bad "docs/checks.md names: $extra"
err=$("$BIN" check --root "$SRC/tests/fixtures/tinybox-6x4090" --profiles "$SRC/profiles" --only no.such 2>&1 >/dev/null)
[ $? -ne 0 ] || true
echo "$err" | grep -q 'no such check (p2pnode check --list lists the ids)' && ok "an unknown --only points at --list" || bad "unknown --only: $err"
out=$("$BIN" check --root "$SRC/tests/fixtures/tinybox-6x4090" --profiles "$SRC/profiles" --only driver.boot_guard)
echo "$out" | grep -q '^driver.boot_guard: not applicable here' && ok "a check with nothing to judge says not applicable here" || bad "no word: $out"
[ "$FAILS" -eq 0 ] || exit 1

#!/bin/bash
# `p2pnode check --list` names every check; docs/checks.md's table has a row for each of them and
# none besides; --only with an unknown id points at --list; --only on a check with nothing to
# judge on the box says so. Reads only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
BIN=${1:?usage: test_check_list.sh PATH-TO-p2pnode}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
require jq
listed=$("$BIN" check --list | awk '{print $1}' | sort)
[ "$(echo "$listed" | wc -l)" -ge 20 ] && pass "check --list names $(echo "$listed" | wc -l) checks" || fail "check --list: $listed"
[ "$("$BIN" check --list --json | jq -r '.[].id' | sort)" = "$listed" ] && pass "check --list --json names the same" || fail "--json differs"
documented=$(sed -n '/^| id | what it catches |$/,/^$/p' "$SRC/docs/checks.md" | grep -o '^| `[a-z0-9_.]*`' | tr -d '|` ' | sort)
missing=$(comm -23 <(echo "$listed") <(echo "$documented"))
extra=$(comm -13 <(echo "$listed") <(echo "$documented"))
[ -z "$missing" ] && pass "docs/checks.md has a row for every check" || fail "docs/checks.md lacks: $missing"
[ -z "$extra" ] && pass "docs/checks.md names no check that does not exist" || fail "docs/checks.md names: $extra"
err=$("$BIN" check --root "$SRC/tests/fixtures/tinybox-6x4090" --profiles "$SRC/profiles" --only no.such 2>&1 >/dev/null)
[ $? -ne 0 ] || true
echo "$err" | grep -q 'no such check (p2pnode check --list lists the ids)' && pass "an unknown --only points at --list" || fail "unknown --only: $err"
out=$("$BIN" check --root "$SRC/tests/fixtures/tinybox-6x4090" --profiles "$SRC/profiles" --only driver.boot_guard)
echo "$out" | grep -q '^driver.boot_guard: not applicable here' && pass "a check with nothing to judge says not applicable here" || fail "no word: $out"
finish

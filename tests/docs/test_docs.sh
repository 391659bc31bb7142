#!/bin/bash
# The user documentation (README.md, docs/) against the repository: local links and their
# anchors resolve, the make targets named exist, every alert has its runbook section and a
# runbook_url that resolves to it, the alert table matches the rules file, no internal words
# (tests/docs/check_docs.py says each rule). Then the same check on a temporary copy with one link
# broken, one anchor broken, one alert's runbook section removed and a make target that does not
# exist, each of which must fail it: a check that cannot fail proves nothing. Costs well under 1 s.
# Argument (unused): the p2pnode binary, as every script test gets it.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python3 -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml is missing (scripts/install-deps.sh test installs it)"; exit 1; }

if out=$(python3 "$here/check_docs.py" "$repo" 2>&1); then pass "README.md and docs/ pass the docs check"
else echo "$out"; fail "README.md and docs/ fail the docs check"; fi

tmp=$(temp_dir docs)
trap 'rm -rf "$tmp"' EXIT
# copy: the files the check reads, copied (the cases change them); every other top-level entry of
# the repository linked, so that links into tests/, api/, … resolve as they do in the repository
copy() {
  rm -rf "$tmp/r" && mkdir -p "$tmp/r"
  cp -r "$repo/README.md" "$repo/docs" "$repo/Makefile" "$repo/prometheus" "$tmp/r/"
  for e in "$repo"/*; do
    [ -e "$tmp/r/$(basename "$e")" ] || ln -s "$e" "$tmp/r/$(basename "$e")"
  done
}
# must_fail WHAT EXPECTED: the check on the copy fails and names EXPECTED
must_fail() {
  if out=$(python3 "$here/check_docs.py" "$tmp/r" 2>&1); then fail "$1: the docs check passed"
  elif grep -qF -- "$2" <<<"$out"; then pass "$1: the docs check fails ($(grep -F -- "$2" <<<"$out" | head -1))"
  else echo "$out"; fail "$1: the docs check failed without naming $2"; fi
}

copy
python3 "$here/check_docs.py" "$tmp/r" >/dev/null 2>&1 && pass "the copy passes" || fail "the unmodified copy fails"

copy
echo "See [the install guide](docs/instal.md)." >> "$tmp/r/README.md"
must_fail "a link to a missing file" "broken link docs/instal.md"

copy
echo "See [alerts](monitoring.md#alert-rule)." >> "$tmp/r/docs/install.md"
must_fail "a link to a missing anchor" "no heading with the anchor #alert-rule"

copy
python3 - "$tmp/r/docs/runbook.md" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
open(p, "w").write(re.sub(r"^## P2pnodeDown$", "## The daemon is down", s, flags=re.M))
PY
must_fail "an alert without its runbook section" "no section '## P2pnodeDown'"

copy
echo 'Run `make install`.' >> "$tmp/r/docs/install.md"
must_fail "a make target that does not exist" "the Makefile has no target 'install'"

copy
sed -i 's/^| \[`P2pnodeDown`\](runbook.md#p2pnodedown) | critical |/| [`P2pnodeDown`](runbook.md#p2pnodedown) | warning |/' "$tmp/r/docs/monitoring.md"
must_fail "a severity in the alert table that differs from the rules" "severity warning, the rules critical"

copy
echo "Measured on seed 004's box." >> "$tmp/r/docs/benchmarks.md"
must_fail "an internal word" "internal word 'seed'"

finish

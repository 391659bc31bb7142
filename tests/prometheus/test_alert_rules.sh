#!/bin/bash
# The alert and recording rules (prometheus/p2pnode-alerts.yml, p2pnode-rules.yml): promtool check
# rules, then promtool test rules on every file in prometheus/tests/ (each alert with cases that
# fire and that stay silent, each recording rule evaluated), and every p2pnode_* metric a rule
# reads exists in the daemon's source, or is one of the names agreed with a branch that is still to
# land (listed by name, so a typo cannot hide). Costs ~1 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -uo pipefail
require promtool
rules=prometheus/p2pnode-alerts.yml
recording=prometheus/p2pnode-rules.yml
fail=0
promtool check rules "$rules" "$recording" || fail=1
for t in prometheus/tests/*.yml; do (cd prometheus/tests && promtool test rules "$(basename "$t")") || fail=1; done
# Every alert has at least one test case, every recording rule at least one expression test.
for a in $(sed -n 's/^ *- alert: *//p' "$rules"); do
  grep -q "alertname: $a\b" prometheus/tests/*.yml || { echo "FAIL: alert $a has no promtool test case"; fail=1; }
done
for r in $(sed -n 's/^ *- record: *//p' "$recording"); do
  grep -qE "expr: '?$r'?\$" prometheus/tests/*.yml || { echo "FAIL: recording rule $r has no promtool expression test"; fail=1; }
done
for m in $(cat "$rules" "$recording" | grep -o 'p2pnode_[a-z0-9_]*' | sort -u); do
  # A family name in quotes (prometheus-cpp), or a TYPE line the daemon writes itself (the HTTP guard).
  if grep -rqE "\"$m\"|# TYPE $m " daemon/; then continue; fi
  echo "FAIL: $rules or $recording reads $m, which the daemon does not export (daemon/engine/*metrics*.cpp)"; fail=1
done
[ "$fail" -eq 0 ] && echo "alert and recording rules: ok"
exit "$fail"

#!/bin/bash
# The alert rules (prometheus/p2pnode-alerts.yml): promtool check rules, then promtool test rules
# on every file in prometheus/tests/ (each rule with cases that fire and that stay silent), and
# every p2pnode_* metric a rule reads exists in the daemon's source, or is one of the names agreed
# with a branch that is still to land (listed by name, so a typo cannot hide). Costs ~1 s.
set -uo pipefail
command -v promtool >/dev/null || { echo "SKIP: promtool is not installed (apt-get install prometheus)"; exit 77; }
rules=prometheus/p2pnode-alerts.yml
fail=0
promtool check rules "$rules" || fail=1
for t in prometheus/tests/*.yml; do promtool test rules "$t" || fail=1; done
# Every alert has at least one test case.
for a in $(sed -n 's/^ *- alert: *//p' "$rules"); do
  grep -q "alertname: $a\b" prometheus/tests/*.yml || { echo "FAIL: alert $a has no promtool test case"; fail=1; }
done
for m in $(grep -o 'p2pnode_[a-z0-9_]*' "$rules" | sort -u); do
  # A family name in quotes (prometheus-cpp), or a TYPE line the daemon writes itself (the HTTP guard).
  if grep -rqE "\"$m\"|# TYPE $m " daemon/; then continue; fi
  echo "FAIL: $rules reads $m, which the daemon does not export (daemon/engine/metrics.cpp)"; fail=1
done
[ "$fail" -eq 0 ] && echo "alert rules: ok"
exit "$fail"

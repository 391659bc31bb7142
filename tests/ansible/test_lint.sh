#!/bin/bash
# The Ansible files as a site gets them, without a node: ansible-lint (Debian's) finds nothing in
# ansible/ (.ansible-lint-ignore holds the one finding kept, with why), and a task name in lower
# case added to a copy is found, so the lint can fail; every playbook passes --syntax-check; the
# example inventory (ansible/inventory.example.yml) parses, puts the canary first and passes the
# role's variable checks (site.yml --tags p2pnode_checks, which contacts no node), and a group
# without its profiles fails them, naming its hosts; ansible/prometheus.yml writes targets from it
# that promtool accepts, and refuses an inventory whose nodes share one target, naming them.
# About 30 s. Usage: bash tests/ansible/test_lint.sh [ignored]
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
exec </dev/null  # ansible-playbook refuses a non-blocking stdin
require ansible-lint ansible-playbook ansible-inventory promtool jq
src=$(cd "$(dirname "$0")/../.." && pwd)
cd "$src" || exit 1
work=$(temp_dir ansible-lint)
trap 'rm -rf "$work"' EXIT
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 NO_COLOR=1
example=ansible/inventory.example.yml

# 1. ansible-lint: clean here, and a finding in a copy fails it.
if ansible-lint --nocolor -p ansible/ > "$work/lint.out" 2>&1; then
  pass "ansible-lint: $(grep -E '^(Passed|Failed)' "$work/lint.out")"
else fail "ansible-lint finds:"; cat "$work/lint.out"; fi
mkdir "$work/copy" && cp -r ansible .ansible-lint-ignore "$work/copy/"
sed -i 's/^- name: The package to roll out$/- name: the package to roll out/' "$work/copy/ansible/roles/p2pnode/tasks/checks.yml"
grep -q '^- name: the package to roll out$' "$work/copy/ansible/roles/p2pnode/tasks/checks.yml" || fail "the negative case could not edit its copy"
if (cd "$work/copy" && ansible-lint --nocolor -p ansible/) > "$work/lint-bad.out" 2>&1; then
  fail "ansible-lint passes a task name in lower case"; cat "$work/lint-bad.out"
elif grep -q 'ansible/roles/p2pnode/tasks/checks.yml:[0-9]*: name\[casing\]' "$work/lint-bad.out"; then
  pass "ansible-lint fails on a task name in lower case, naming the file and rule"
else fail "ansible-lint failed on the copy, but not with name[casing]:"; cat "$work/lint-bad.out"; fi

# 2. Every playbook (a YAML list at the top of ansible/*.yml) passes --syntax-check.
n=0
for p in ansible/*.yml; do
  [ "$(head -c 1 <(grep -v '^#' "$p"))" = - ] || continue
  n=$((n+1))
  ansible-playbook -i "$example" --syntax-check "$p" > "$work/syntax.out" 2>&1 && pass "syntax: $p" || { fail "syntax: $p"; cat "$work/syntax.out"; }
done
[ "$n" -ge 3 ] || fail "only $n playbooks found in ansible/ (site, prometheus, kernel-upgrade at least)"

# 3. The example inventory: it parses, its canary comes first, every host passes the role's checks.
ansible-inventory -i "$example" --list > "$work/inventory.json" 2>"$work/inventory.err" || { fail "ansible-inventory --list"; cat "$work/inventory.err"; }
canary=$(jq -r '.canary.hosts[0]' "$work/inventory.json")
hosts=$(jq -r '[.gpu_nodes.children[] as $g | .[$g].hosts // [] | .[]] | unique | length' "$work/inventory.json")
[ "$canary" != null ] && [ "$hosts" -gt 1 ] && pass "ansible-inventory --list: $hosts hosts in gpu_nodes, canary $canary" || fail "inventory: canary '$canary', $hosts hosts"
mkdir "$work/debs" && touch "$work/debs/p2pnode_0.1.0_amd64.deb"
checks() {  # INVENTORY LOG: the role's variable checks over every host; contacts none
  ansible-playbook -i "$1" ansible/site.yml --tags p2pnode_checks -e p2pnode_deb="$work/debs/p2pnode_0.1.0_amd64.deb" > "$work/$2" 2>&1
}
if checks "$example" checks.log && [ "$(grep -Ec '^[^ ]+ +: ok=2 +changed=0 +unreachable=0 +failed=0' "$work/checks.log")" = "$hosts" ]; then
  pass "the role's variable checks pass on all $hosts hosts of the example"
else fail "the role's checks on the example"; tail -20 "$work/checks.log"; fi
[ "$(grep -m1 -o '^ok: \[[^]]*\]' "$work/checks.log")" = "ok: [$canary]" ] && pass "the canary ($canary) is checked first" || fail "the canary is not first: $(grep -m1 '^ok: ' "$work/checks.log")"
# Without a group's p2pnode_profiles, its hosts fail the checks, saying what to set.
grep -v 'p2pnode_profiles: \[tinybox-6x4090.yaml\]' "$example" > "$work/no-profiles.yml"
if checks "$work/no-profiles.yml" no-profiles.log; then fail "a group without p2pnode_profiles passes the checks"
elif grep -q 'fatal: \[tiny-01\].*tiny-01: set p2pnode_profiles in its host group' "$work/no-profiles.log"; then
  pass "a group without p2pnode_profiles fails the checks, naming the host and the variable"
else fail "a group without p2pnode_profiles fails, but not saying so"; grep fatal "$work/no-profiles.log"; fi

# 4. ansible/prometheus.yml: targets from the example that promtool accepts; colliding ones refused.
if ansible-playbook -i "$example" ansible/prometheus.yml -e p2pnode_prometheus_dir="$work/prom" > "$work/prom.log" 2>&1 &&
   promtool check config "$work/prom/prometheus.yml" > "$work/promtool.log" 2>&1; then
  pass "prometheus.yml from the example passes promtool check config"
else fail "prometheus.yml from the example"; tail -20 "$work/prom.log" "$work/promtool.log"; fi
distinct=$(jq '[.[].targets[]] | unique | length' "$work/prom/p2pnode-targets.json" 2>/dev/null)
[ "$distinct" = "$hosts" ] && pass "file_sd: $hosts distinct targets" || fail "file_sd: $distinct distinct targets for $hosts hosts"
sed -E 's/\{p2pnode_listen: "[^"]*"\}//; /^ *p2pnode_listen:/d' "$example" > "$work/no-listen.yml"  # every host, none with an address
if ansible-playbook -i "$work/no-listen.yml" ansible/prometheus.yml -e p2pnode_prometheus_dir="$work/prom-bad" > "$work/prom-bad.log" 2>&1; then
  fail "prometheus.yml accepts $hosts nodes on one target"
elif grep -q "Scrape targets collide: 127.0.0.1:9470 ($hosts nodes: $canary, " "$work/prom-bad.log" && [ ! -e "$work/prom-bad" ]; then
  pass "prometheus.yml refuses $hosts nodes on 127.0.0.1:9470, naming them, and writes nothing"
else fail "prometheus.yml's refusal"; grep -E 'fatal|msg' "$work/prom-bad.log"; ls "$work/prom-bad" 2>&1; fi

finish

# Sourced by tests/node/test_node.sh (uses its check, in_node, readyz, node_* and NODE_DIR): a kernel
# arrives through apt on the running node.
#  1. The profile gains a driver section (tests/vm/nvidia-mini through DKMS, loaded by p2pnode);
#     `p2pnode apply` builds it for the running kernel OLD and loads it.
#  2. Kernel NEW (image, headers, headers-common, kbuild from Debian's archive) is installed with
#     apt-get, its headers carrying a planted compile error: DKMS's and p2pnode's hooks fail, the
#     hook says so in apt's output and the journal, `p2pnode check` has the error, the daemon's
#     /metrics fires P2pnodeKernelWithoutModule (promtool), and GRUB is held on OLD: the reboot
#     comes back in OLD with the module loaded.
#  3. The fixed headers arrive (apt-get install --reinstall): the headers' hook builds the module for
#     NEW, the hold is lifted, GRUB's default becomes NEW, and the node reboots into NEW with the
#     module loaded by p2pnode-apply.service.

case_kernel_profile() {  # the node's profile plus a driver section for the miniature tree
  local sha=$1
  cat "$here/profiles/node-vm.yaml"
  cat <<Y
driver:
  version: "550.90.07"
  kernel_module:
    name: nvidia
    source:
      path: /opt/p2pnode-test/nvidia-mini
      sha256: $sha
  reload:
    allow: true
Y
}

case_kernel_metric() {  # the node's p2pnode_kernel_module_installed lines
  in_node "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:9470/metrics\", timeout=10).read().decode())'" |
    grep '^p2pnode_kernel_module_installed{'
}

# case_kernel_alert_fires LINE KERNEL: promtool evaluates prometheus/p2pnode-alerts.yml over the
# node's exported series LINE (as scraped) and P2pnodeKernelWithoutModule fires for KERNEL.
case_kernel_alert_fires() {
  command -v promtool >/dev/null || { echo "promtool is not installed"; return 1; }
  python3 - "$1" "$2" "$repo/prometheus/p2pnode-alerts.yml" "$NODE_DIR/alert-test.yml" <<'PY'
import re, sys, yaml
line, kernel, rules, out = sys.argv[1:]
m = re.match(r'(\w+)\{(.*)\}\s+(\S+)', line)
labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
labels.update(instance="node-vm", job="p2pnode")
series = m.group(1) + "{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}"
exp = dict(labels, severity="critical")
assert labels.get("kernel") == kernel, labels
# The annotations as Prometheus expands them: the operator reads this node and this kernel.
rule = [r for g in yaml.safe_load(open(rules))["groups"] for r in g["rules"] if r.get("alert") == "P2pnodeKernelWithoutModule"][0]
ann = {k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda x: exp[x.group(1)], v) for k, v in rule["annotations"].items()}
assert kernel in ann["summary"] and "node-vm" in ann["summary"], ann
doc = {"rule_files": [rules], "evaluation_interval": "1m",
       "tests": [{"interval": "1m", "input_series": [{"series": series, "values": "%sx5" % m.group(3)}],
                  "alert_rule_test": [{"eval_time": "2m", "alertname": "P2pnodeKernelWithoutModule",
                                       "exp_alerts": [{"exp_labels": exp, "exp_annotations": ann}]}]}]}
yaml.safe_dump(doc, open(out, "w"))
PY
  promtool test rules "$NODE_DIR/alert-test.yml"
}

# stamp: each line of its input with the seconds since it started (where apt's time goes under TCG).
stamp() { local s=$SECONDS l; while IFS= read -r l; do printf '%4d %s\n' $((SECONDS - s)) "$l"; done; }

case_kernel() {
  local old new kdir sha hdr t=$SECONDS
  old=$(in_node uname -r)
  kdir=$(node_kernel_debs "$NODE_DIR/root" "$old") || { fail "case 4 (a kernel through apt) cannot run: see above"; return 0; }
  new=$(cat "$kdir/release")
  echo "node: case 4: running $old; kernel $new arrives through apt"
  # The initramfs of every kernel is made in the VM from here on: only the drivers this VM needs
  # (the image's own was made in a chroot with MODULES=most), which saves minutes under TCG.
  in_node "echo MODULES=dep > /etc/initramfs-tools/conf.d/p2pnode-node-test"

  # 1. The driver section: the module built through DKMS for the running kernel, and loaded.
  sha=$(cd "$repo/tests/vm/nvidia-mini" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  tar -C "$repo/tests/vm" -cf - nvidia-mini | in_node "mkdir -p /opt/p2pnode-test && tar -C /opt/p2pnode-test -xf -"
  case_kernel_profile "$sha" | in_node "cat > /etc/p2pnode/profiles/node-vm.yaml"
  in_node p2pnode apply --once --json > "$NODE_DIR/apply-driver.json" 2> "$NODE_DIR/apply-driver.err"
  check "case 4: apply built nvidia/550.90.07 for $old through DKMS" in_node "dkms status -m nvidia -v 550.90.07 -k $old | grep -q installed"
  check "case 4: apply loaded it ($(in_node cat /proc/driver/nvidia/version 2>/dev/null | head -1 | cut -c1-60))" \
    in_node "grep -q 550.90.07 /proc/driver/nvidia/version"
  check "case 4: the package's hook is in both kernel hook directories" in_node \
    "cmp /etc/kernel/postinst.d/z50-p2pnode /etc/kernel/header_postinst.d/z50-p2pnode"
  echo "node: case 4: module built and loaded for $old at $((SECONDS - t)) s"

  # 2. NEW arrives with broken headers.
  hdr=$(ls "$kdir"/linux-headers-"$new"_*.deb)
  mkdir -p "$NODE_DIR/broken"
  node_break_headers "$hdr" "$NODE_DIR/broken/$(basename "$hdr")" || { fail "planting the breakage"; return; }
  in_node "mkdir -p /var/cache/p2pnode-test/debs /var/cache/p2pnode-test/fixed"
  local f
  for f in "$kdir"/*.deb; do
    [ "$f" = "$hdr" ] && continue
    in_node "cat > /var/cache/p2pnode-test/debs/$(basename "$f")" < "$f"
  done
  in_node "cat > /var/cache/p2pnode-test/debs/$(basename "$hdr")" < "$NODE_DIR/broken/$(basename "$hdr")"
  in_node "cat > /var/cache/p2pnode-test/fixed/$(basename "$hdr")" < "$hdr"
  echo "node: case 4: packages copied in at $((SECONDS - t)) s"
  in_node "cd /var/cache/p2pnode-test/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./*.deb 2>&1" \
    | stamp > "$NODE_DIR/apt-broken.log"
  local rc=${PIPESTATUS[0]}
  echo "node: case 4: apt-get install of $new (broken headers) exited $rc at $((SECONDS - t)) s"
  grep -e "p2pnode kernel hook" -e "driver.boot_guard" -e "planted breakage" -e "driver.kernels .*$new" "$NODE_DIR/apt-broken.log" | head -12 | sed 's/^/  apt: /'
  check "case 4: apt installed $new (the hook never fails a kernel's installation)" test $rc = 0
  check "case 4: apt's output: the hook names the compiler's error" grep -q "planted breakage" "$NODE_DIR/apt-broken.log"
  check "case 4: apt's output: do not reboot into $new" grep -q "do not reboot into $new" "$NODE_DIR/apt-broken.log"
  check "case 4: apt's output: GRUB held on $old (driver.boot_guard)" grep -q "driver.boot_guard.*$old" "$NODE_DIR/apt-broken.log"
  check "case 4: the journal has the hook's error" in_node "journalctl -t p2pnode-kernel-hook -p err | grep -q 'kernel $new: the module is NOT installed'"
  in_node p2pnode check --json > "$NODE_DIR/check-broken.json" 2>/dev/null
  local find='import json,sys; d=json.load(open(sys.argv[1])); fs=[f for f in d["findings"] if f["check"]==sys.argv[2] and f["severity"]==sys.argv[3] and sys.argv[4] in f["subject"]+f["summary"]]; print("  finding:", fs[0]["severity"], fs[0]["check"], fs[0]["subject"], fs[0]["summary"][:150]) if fs else None; sys.exit(not fs)'
  check "case 4: p2pnode check: driver.kernels error for $new" python3 -c "$find" "$NODE_DIR/check-broken.json" driver.kernels error "$new"
  check "case 4: p2pnode check: driver.boot_guard says GRUB is held on $old" python3 -c "$find" "$NODE_DIR/check-broken.json" driver.boot_guard warning "$old"
  python3 -c "$find" "$NODE_DIR/check-broken.json" driver.kernels error "$new"
  python3 -c "$find" "$NODE_DIR/check-broken.json" driver.boot_guard warning "$old"
  local line
  line=$(case_kernel_metric | grep "kernel=\"$new\"")
  echo "  metric: $line"
  check "case 4: /metrics: p2pnode_kernel_module_installed 0 for $new" sh -c "echo '$line' | grep -q ' 0\$'"
  check "case 4: the alert P2pnodeKernelWithoutModule fires for $new (promtool over the scraped series)" case_kernel_alert_fires "$line" "$new"
  check "case 4: GRUB's saved default is $old" in_node "grub-editenv list | grep -q 'saved_entry=.*$old'"
  node_reboot && node_wait_ssh || { fail "reboot with $new installed and broken"; return; }
  in_node systemctl is-system-running --wait >/dev/null
  [ -n "${free:-}" ] && drive_ok
  check "case 4: held: the node came back in $old, not in $new" test "$(in_node uname -r)" = "$old"
  check "case 4: held: the module is loaded in $old" in_node "grep -q 550.90.07 /proc/driver/nvidia/version"
  # The boot-time apply still fails (a kernel lacks the module), quickly: the build that failed with
  # these headers is not tried again on every boot.
  local failed_units
  failed_units=$(node_failed_units)
  echo "  failed units: ${failed_units:-none}"
  in_node "journalctl -b -u p2pnode-apply.service --no-pager | grep -e 'not retried' -e 'Finished\|Failed' | cut -c1-220 | tail -3" | sed 's/^/  /'
  check "case 4: held: no unit failed but p2pnode-apply, which reports the kernel without its module" \
    test "$(echo $failed_units | sed 's/p2pnode-apply.service//' | tr -d ' ')" = ""
  check "case 4: held: the boot-time apply did not try the failed build again" in_node \
    "journalctl -b -u p2pnode-apply.service | grep -q 'build for $new not retried: it failed with the same source'"
  # Not ready while an installed kernel lacks the module (an apply step fails): /readyz says why.
  in_node "python3 -c 'import urllib.request
try: print(urllib.request.urlopen(\"http://127.0.0.1:9470/readyz\", timeout=10).read().decode())
except urllib.error.HTTPError as e: print(e.code, e.read().decode())'" > "$NODE_DIR/readyz-held.txt"
  echo "  readyz: $(cut -c1-300 "$NODE_DIR/readyz-held.txt")"
  check "case 4: held: /readyz 503 names $new's missing module" grep -q "^503 .*driver.kernels $new" "$NODE_DIR/readyz-held.txt"
  echo "node: case 4: held on $old at $((SECONDS - t)) s"

  # 3. The fixed headers arrive: the headers' hook builds for NEW, the hold is lifted.
  in_node "cd /var/cache/p2pnode-test/fixed && DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall ./*.deb 2>&1" \
    | stamp > "$NODE_DIR/apt-fixed.log"
  rc=${PIPESTATUS[0]}
  echo "node: case 4: apt-get install --reinstall of the fixed headers exited $rc at $((SECONDS - t)) s"
  grep -e "p2pnode kernel hook" -e "driver.boot_guard" -e "driver.kernels .*$new" "$NODE_DIR/apt-fixed.log" | head -8 | sed 's/^/  apt: /'
  check "case 4: fixed: apt succeeded" test $rc = 0
  check "case 4: fixed: DKMS has nvidia/550.90.07 for $new" in_node "dkms status -m nvidia -v 550.90.07 -k $new | grep -q installed"
  check "case 4: fixed: the hold is lifted (no drop-in in /etc/default/grub.d)" in_node "! test -e /etc/default/grub.d/p2pnode-boot-guard.cfg"
  in_node p2pnode check --only driver.boot_guard --json > "$NODE_DIR/check-fixed.json" 2>/dev/null
  check "case 4: fixed: GRUB boots $new next (driver.boot_guard reads it back)" python3 -c \
    'import json,sys; d=json.load(open(sys.argv[1])); f=d["findings"][0]; print(f); sys.exit(f["observed"]["next_boot"] != sys.argv[2] or f["severity"] != "ok")' "$NODE_DIR/check-fixed.json" "$new"
  node_reboot && node_wait_ssh || { fail "reboot into $new"; return; }
  in_node systemctl is-system-running --wait >/dev/null
  [ -n "${free:-}" ] && drive_ok
  check "case 4: the node booted $new through GRUB" test "$(in_node uname -r)" = "$new"
  check "case 4: in $new the module is there and loaded (/proc/driver/nvidia/version)" in_node \
    "modinfo -F version nvidia | grep -q 550.90.07 && grep -q 550.90.07 /proc/driver/nvidia/version"
  failed_units=$(node_failed_units)
  echo "  failed units in $new: ${failed_units:-none}"
  for u in $failed_units; do in_node "systemctl status --no-pager -n 15 $u" | sed 's/^/    /'; done
  check "case 4: in $new no unit failed" test -z "$failed_units"
  check "case 4: in $new /readyz 200" test "$(readyz)" = 200
  check "case 4: in $new p2pnode_kernel_module_installed is 1 for both kernels" sh -c \
    "[ \$(echo '$(case_kernel_metric)' | grep -c ' 1\$') -ge 2 ]"
  echo "node: case 4 done in $((SECONDS - t)) s"
}

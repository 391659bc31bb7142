#!/bin/bash
# The roll-out playbook, for real: ansible-playbook --syntax-check, then a run with -c local into
# a scratch prefix (no systemd), and a second run that must change nothing.
set -uo pipefail
bin=${1:?usage: test_ansible.sh path/to/p2pnode}
command -v ansible-playbook >/dev/null || { echo "SKIP: ansible-playbook is not installed (apt-get install ansible-core)"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
serve_bin="$(dirname "$bin")/p2pnode-serve"
[ -x "$serve_bin" ] || { echo "FAIL: $serve_bin is missing (build the p2pnode-serve target)"; exit 1; }
mkdir -p "$work/build/daemon" && cp "$bin" "$work/build/daemon/p2pnode" && cp "$serve_bin" "$work/build/daemon/p2pnode-serve"
# The prefix is a copy of a recorded node, so `check` inside the play reads a real tree.
cp -a tests/fixtures/tinybox-6x4090 "$work/root"
printf '[gpu_nodes]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n' > "$work/inv.ini"
vars=(-e "p2pnode_bin_dir=$work/build" -e "p2pnode_prefix=$work/root" -e p2pnode_manage_service=false -e p2pnode_install_agent=false)
pass=0; fail=0
ok() { echo "ok: $1"; pass=$((pass+1)); }
bad() { echo "FAIL: $1"; fail=$((fail+1)); }
ansible-playbook -i "$work/inv.ini" ansible/site.yml --syntax-check >/dev/null && ok "syntax" || bad "syntax"
if ANSIBLE_NOCOLOR=1 ansible-playbook -i "$work/inv.ini" ansible/site.yml "${vars[@]}" > "$work/run1.log" 2>&1; then ok "first run"; else bad "first run"; tail -30 "$work/run1.log"; fi
[ -x "$work/root/usr/local/bin/p2pnode" ] && ok "binary installed" || bad "binary installed"
# p2pnode finds the daemon program in ../libexec/p2pnode: run the installed pair, not the build tree's.
"$work/root/usr/local/bin/p2pnode" status --help 2>&1 | grep -q -- '--url\|--config' && ok "p2pnode status reaches the installed p2pnode-serve" || bad "p2pnode status reaches the installed p2pnode-serve: $("$work/root/usr/local/bin/p2pnode" status --help 2>&1 | head -3)"
[ -f "$work/root/etc/p2pnode/profiles/tinybox-6x4090.yaml" ] && ok "profiles installed" || bad "profiles installed"
[ "$(stat -c %a "$work/root/etc/p2pnode/token" 2>/dev/null)" = 600 ] && ok "token is root-only" || bad "token is root-only"
grep -q 'listen: "127.0.0.1:9470"' "$work/root/etc/p2pnode/p2pnode.yaml" && ok "config rendered" || bad "config rendered"
if ANSIBLE_NOCOLOR=1 ansible-playbook -i "$work/inv.ini" ansible/site.yml "${vars[@]}" > "$work/run2.log" 2>&1 && grep -Eq 'changed=0 ' "$work/run2.log"; then ok "second run changes nothing"; else bad "second run changes nothing"; grep -E 'changed:|PLAY RECAP' -A2 "$work/run2.log" | tail -10; fi
cfg="$work/root/etc/p2pnode/p2pnode.yaml"
"$work/root/usr/local/bin/p2pnode" serve --check-config --root "$work/root" --config "$cfg" >/dev/null 2>"$work/check.err" \
  && ok "the rendered config is one the daemon accepts" || { bad "the rendered config is one the daemon accepts"; cat "$work/check.err"; }

# HTTPS: the template's tls block, validated by the daemon before it lands; a key readable by
# others is refused by that validation and the config in place stays as it was.
if command -v openssl >/dev/null; then
  mkdir -p "$work/root/etc/p2pnode/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$work/root/etc/p2pnode/tls/key.pem" \
    -out "$work/root/etc/p2pnode/tls/cert.pem" >/dev/null 2>&1
  chmod 600 "$work/root/etc/p2pnode/tls/key.pem"
  tls=(-e p2pnode_tls_cert_file=/etc/p2pnode/tls/cert.pem -e p2pnode_tls_key_file=/etc/p2pnode/tls/key.pem)
  if ANSIBLE_NOCOLOR=1 ansible-playbook -i "$work/inv.ini" ansible/site.yml "${vars[@]}" "${tls[@]}" > "$work/run3.log" 2>&1 &&
     grep -q 'cert_file: /etc/p2pnode/tls/cert.pem' "$cfg"; then ok "tls vars render a tls block the daemon accepts"
  else bad "tls vars render a tls block the daemon accepts"; tail -20 "$work/run3.log"; fi
  before=$(sha256sum "$cfg")
  chmod 644 "$work/root/etc/p2pnode/tls/key.pem"
  if ANSIBLE_NOCOLOR=1 ansible-playbook -i "$work/inv.ini" ansible/site.yml "${vars[@]}" "${tls[@]}" -e p2pnode_listen=127.0.0.1:9471 > "$work/run4.log" 2>&1; then
    bad "a group/other-readable key fails the play"
  else
    grep -q 'readable by group or others' "$work/run4.log" && ok "a group/other-readable key fails the play at validation, saying why" \
      || { bad "a group/other-readable key fails the play, saying why"; tail -20 "$work/run4.log"; }
  fi
  [ "$(sha256sum "$cfg")" = "$before" ] && ok "and the config in place is unchanged" || bad "and the config in place is unchanged"
else
  echo "SKIP tls variant: openssl is not installed (scripts/install-deps.sh test installs it)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

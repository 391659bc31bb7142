#!/bin/bash
# The userspace half of issue 5 with a fake .run installer (a shell script made here), in a temp
# root: p2pnode runs it with --silent --no-kernel-modules and the profile's flags only when
# libcuda.so.<version> is missing; a wrong-version installer fails; a corrupted sha256 refuses;
# the modprobe.d file is written once and a wrong RMForceP2PType is refused.
# Usage: bash tests/dkms/test_userspace_installer.sh <path-to-p2pnode>
set -euo pipefail
P2PNODE=$(readlink -f "${1:?usage: $0 <path-to-p2pnode>}")
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "== $*"; }
command -v jq >/dev/null || skip "jq is missing (scripts/install-deps.sh test installs it)"

TMP=$(mktemp -d /tmp/p2pnode-userspace.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
VER=550.90.07

# fake_run <file> <version it installs>: records its argv, insists on the two flags p2pnode must
# pass, and installs libcuda.so.<version> under --opengl-prefix (as the real installer's option).
fake_run() {
  cat > "$1" <<R
#!/bin/sh
echo "\$*" >> "$TMP/installer.calls"
prefix=/usr
silent=no; nokm=no
for a in "\$@"; do
  case "\$a" in
    --silent) silent=yes ;;
    --no-kernel-modules) nokm=yes ;;
    --opengl-prefix=*) prefix=\${a#--opengl-prefix=} ;;
  esac
done
[ \$silent = yes ] && [ \$nokm = yes ] || { echo "fake installer: missing --silent or --no-kernel-modules" >&2; exit 1; }
mkdir -p "\$prefix/lib/x86_64-linux-gnu" "\$prefix/../lib/firmware/nvidia/$2"
: > "\$prefix/lib/x86_64-linux-gnu/libcuda.so.$2"
echo "installed NVIDIA userspace $2"
R
}
fake_run "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$VER"
fake_run "$TMP/NVIDIA-Linux-x86_64-wrong.run" 550.54.15
GOOD_SHA=$(sha256sum "$TMP/NVIDIA-Linux-x86_64-$VER.run" | cut -d' ' -f1)
WRONG_SHA=$(sha256sum "$TMP/NVIDIA-Linux-x86_64-wrong.run" | cut -d' ' -f1)

# Artifact paths in a profile are paths on the box, i.e. inside --root: each root gets its copy in /srv.
profile() {  # profile <file> <installer> <sha256> <root> <RMForceP2PType>
  mkdir -p "$4/srv" && cp "$2" "$4/srv/"
  set -- "$1" "/srv/$(basename "$2")" "$3" "$4" "$5"
  cat > "$1" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: userspace-test
driver:
  version: "$VER"
  userspace:
    installer:
      path: $2
      sha256: $3
    flags: [--no-drm, "--opengl-prefix=$4/usr"]
  options:
    NVreg_EnableResizableBar: 1
    NVreg_RegistryDwords: "ForceP2P=17;RMForceP2PType=$5"
Y
}
touch "$TMP/installer.calls"
calls() { wc -l < "$TMP/installer.calls"; }
apply() {  # apply <root> <profile> <json>; prints the exit status
  local rc=0
  "$P2PNODE" apply --root "$1" --profile "$2" --json > "$3" 2> "$3.log" || rc=$?
  echo $rc
}
step() { jq -c --arg a "$2" '[.steps[] | select(.action == $a)][0]' "$1"; }

say "1. the installer runs once, with --silent --no-kernel-modules and the profile's flags"
mkdir -p "$TMP/root"
profile "$TMP/good.yaml" "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$GOOD_SHA" "$TMP/root" 2
rc=$(apply "$TMP/root" "$TMP/good.yaml" "$TMP/1.json")
[ "$rc" = 0 ] || fail "apply exited $rc: $(cat "$TMP/1.json" "$TMP/1.json.log")"
[ "$(step "$TMP/1.json" driver.userspace | jq -r .outcome)" = changed ] || fail "userspace not changed: $(cat "$TMP/1.json")"
[ -e "$TMP/root/usr/lib/x86_64-linux-gnu/libcuda.so.$VER" ] || fail "libcuda.so.$VER was not installed"
grep -q -- "--silent --no-kernel-modules --no-drm --opengl-prefix=$TMP/root/usr" "$TMP/installer.calls" || fail "installer argv: $(cat "$TMP/installer.calls")"
conf="$TMP/root/etc/modprobe.d/p2pnode-nvidia.conf"
grep -qx 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=17;RMForceP2PType=2"' "$conf" || fail "modprobe.d: $(cat "$conf")"

say "2. a second apply runs nothing"
n=$(calls)
rc=$(apply "$TMP/root" "$TMP/good.yaml" "$TMP/2.json")
[ "$rc" = 0 ] && [ "$(calls)" = "$n" ] && [ "$(jq .writes "$TMP/2.json")" = 0 ] || fail "second apply did something: $(cat "$TMP/2.json")"

say "3. an installer of another version fails the version check"
mkdir -p "$TMP/root2"
profile "$TMP/wrong.yaml" "$TMP/NVIDIA-Linux-x86_64-wrong.run" "$WRONG_SHA" "$TMP/root2" 2
rc=$(apply "$TMP/root2" "$TMP/wrong.yaml" "$TMP/3.json")
s=$(step "$TMP/3.json" driver.userspace)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = failed ] || fail "wrong-version installer not failed: $s"
jq -r .message <<<"$s" | grep -q "no libcuda.so.$VER appeared" || fail "wrong-version message: $s"

say "4. a corrupted sha256 refuses and runs nothing"
mkdir -p "$TMP/root3"
n=$(calls)
profile "$TMP/corrupt.yaml" "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$(echo "$GOOD_SHA" | tr '0-9a-f' '1-9a-f0')" "$TMP/root3" 2
rc=$(apply "$TMP/root3" "$TMP/corrupt.yaml" "$TMP/4.json")
s=$(step "$TMP/4.json" driver.userspace)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = refused ] && [ "$(calls)" = "$n" ] || fail "corrupted sha256: $s"
[ ! -e "$TMP/root3/usr/lib/x86_64-linux-gnu" ] || fail "corrupted sha256 installed something"

say "5. RMForceP2PType=1 on the 550 branch is refused (it would disable BAR1 P2P)"
mkdir -p "$TMP/root4"
profile "$TMP/p2ptype.yaml" "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$GOOD_SHA" "$TMP/root4" 1
rc=$(apply "$TMP/root4" "$TMP/p2ptype.yaml" "$TMP/5.json")
s=$(step "$TMP/5.json" driver.options)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = refused ] || fail "RMForceP2PType=1 not refused: $s"
[ ! -e "$TMP/root4/etc/modprobe.d/p2pnode-nvidia.conf" ] || fail "refused options were written"

echo "PASS: userspace installer and modprobe options"

#!/bin/bash
# The userspace half of the driver install with a fake .run installer (a shell script made here), in a temp
# root: p2pnode runs it with --silent --no-kernel-modules and the profile's flags only when
# libcuda.so.<version> is missing; a wrong-version installer fails; a corrupted sha256 refuses;
# the modprobe.d file is written once and a wrong RMForceP2PType is refused; an installer URL is
# downloaded by the real curl from a local HTTP server that cuts the first transfer half-way: the
# apply fails and keeps the part, the next one resumes it with a Range request, with progress lines.
# Usage: bash tests/dkms/test_userspace_installer.sh <path-to-p2pnode>
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -euo pipefail
P2PNODE=$(readlink -f "${1:?usage: $0 <path-to-p2pnode>}")
say() { echo "== $*"; }
require jq

TMP=$(temp_dir userspace)
trap 'rm -rf "$TMP"' EXIT
VER=550.90.07

# fake_run <file> <version it installs>: records its argv, insists on the two flags p2pnode must
# pass, and installs libcuda.so.<version> under the root p2pnode runs it from (its copy lies in
# <root>/var/lib/p2pnode/artifacts/; a flag naming a prefix, --opengl-prefix=, is refused by the
# profile's grammar).
fake_run() {
  cat > "$1" <<R
#!/bin/sh
echo "\$*" >> "$TMP/installer.calls"
prefix="\${0%%/var/lib/p2pnode/artifacts/*}/usr"
silent=no; nokm=no
for a in "\$@"; do
  case "\$a" in
    --silent) silent=yes ;;
    --no-kernel-modules) nokm=yes ;;
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
    flags: [--no-drm, --no-x-check]
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
[ "$rc" = 0 ] || die "apply exited $rc: $(cat "$TMP/1.json" "$TMP/1.json.log")"
[ "$(step "$TMP/1.json" driver.userspace | jq -r .outcome)" = changed ] || die "userspace not changed: $(cat "$TMP/1.json")"
[ -e "$TMP/root/usr/lib/x86_64-linux-gnu/libcuda.so.$VER" ] || die "libcuda.so.$VER was not installed"
grep -q -- "--silent --no-kernel-modules --no-drm --no-x-check" "$TMP/installer.calls" || die "installer argv: $(cat "$TMP/installer.calls")"
conf="$TMP/root/etc/modprobe.d/p2pnode-nvidia.conf"
grep -qx 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=17;RMForceP2PType=2"' "$conf" || die "modprobe.d: $(cat "$conf")"

say "2. a second apply runs nothing"
n=$(calls)
rc=$(apply "$TMP/root" "$TMP/good.yaml" "$TMP/2.json")
[ "$rc" = 0 ] && [ "$(calls)" = "$n" ] && [ "$(jq .writes "$TMP/2.json")" = 0 ] || die "second apply did something: $(cat "$TMP/2.json")"

say "3. an installer of another version fails the version check"
mkdir -p "$TMP/root2"
profile "$TMP/wrong.yaml" "$TMP/NVIDIA-Linux-x86_64-wrong.run" "$WRONG_SHA" "$TMP/root2" 2
rc=$(apply "$TMP/root2" "$TMP/wrong.yaml" "$TMP/3.json")
s=$(step "$TMP/3.json" driver.userspace)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = failed ] || die "wrong-version installer not failed: $s"
jq -r .message <<<"$s" | grep -q "no libcuda.so.$VER appeared" || die "wrong-version message: $s"

say "4. a corrupted sha256 refuses and runs nothing"
mkdir -p "$TMP/root3"
n=$(calls)
profile "$TMP/corrupt.yaml" "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$(echo "$GOOD_SHA" | tr '0-9a-f' '1-9a-f0')" "$TMP/root3" 2
rc=$(apply "$TMP/root3" "$TMP/corrupt.yaml" "$TMP/4.json")
s=$(step "$TMP/4.json" driver.userspace)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = refused ] && [ "$(calls)" = "$n" ] || die "corrupted sha256: $s"
[ ! -e "$TMP/root3/usr/lib/x86_64-linux-gnu" ] || die "corrupted sha256 installed something"

say "5. RMForceP2PType=1 on the 550 branch is refused (it would disable BAR1 P2P)"
mkdir -p "$TMP/root4"
profile "$TMP/p2ptype.yaml" "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$GOOD_SHA" "$TMP/root4" 1
rc=$(apply "$TMP/root4" "$TMP/p2ptype.yaml" "$TMP/5.json")
s=$(step "$TMP/5.json" driver.options)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = refused ] || die "RMForceP2PType=1 not refused: $s"
[ ! -e "$TMP/root4/etc/modprobe.d/p2pnode-nvidia.conf" ] || die "refused options were written"

say "6. a download cut half-way is kept, resumed with a Range request, verified, then installed"
require curl
BIG="$TMP/srv6/NVIDIA-Linux-x86_64-$VER.run"
mkdir -p "$TMP/srv6" "$TMP/root6"
cp "$TMP/NVIDIA-Linux-x86_64-$VER.run" "$BIG"
head -c 3000000 /dev/urandom | od -An -tx1 | sed 's/^/#/' >> "$BIG"  # ~9 MB of comments after the script
BIG_SHA=$(sha256sum "$BIG" | cut -d' ' -f1)
cat > "$TMP/server.py" <<'PY'
# Serves one directory; the first full GET of a file is cut after 1 MiB (a dropped connection);
# Range requests get 206 with the rest. Every request's path and Range go to requests.log.
import http.server, os, sys
root, portfile, log = sys.argv[1], sys.argv[2], sys.argv[3]
cut_done = set()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        rng = self.headers.get("Range", "")
        open(log, "a").write("%s %s\n" % (self.path, rng or "-"))
        path = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(path):
            self.send_error(404); return
        data = open(path, "rb").read()
        if rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
            self.send_header("Content-Length", str(len(data) - start)); self.end_headers()
            self.wfile.write(data[start:]); return
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers()
        if self.path not in cut_done:
            cut_done.add(self.path); self.wfile.write(data[:1 << 20]); self.wfile.flush()
            self.close_connection = True; return
        self.wfile.write(data)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
python3 "$TMP/server.py" "$TMP/srv6" "$TMP/port6" "$TMP/requests.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/port6" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$TMP/port6")/NVIDIA-Linux-x86_64-$VER.run"
url_profile() {  # url_profile <file> <url>
  cat > "$1" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: userspace-download
driver:
  version: "$VER"
  userspace:
    installer:
      url: $2
      sha256: $BIG_SHA
    flags: [--no-x-check]
Y
}
url_profile "$TMP/url.yaml" "$URL"
n=$(calls)
rc=0; "$P2PNODE" apply --root "$TMP/root6" --profile "$TMP/url.yaml" > "$TMP/6a.out" 2> "$TMP/6a.err" || rc=$?
PART="$TMP/root6/var/lib/p2pnode/artifacts/NVIDIA-Linux-x86_64-$VER.run.part"
[ "$rc" != 0 ] || die "a cut download did not fail the apply: $(cat "$TMP/6a.out")"
grep -q "refused  driver.userspace .*curl: (18)" "$TMP/6a.out" || die "the cut download's message lacks curl's own error: $(cat "$TMP/6a.out")"
grep -q "is kept for a resume" "$TMP/6a.out" || die "the message does not say the part is kept: $(cat "$TMP/6a.out")"
grep -q '#####' "$TMP/6a.out" && die "progress-bar redraws leaked into the message: $(cat "$TMP/6a.out")"
[ "$(stat -c %s "$PART")" = 1048576 ] || die "the part file is not the 1 MiB received: $(stat -c %s "$PART" 2>&1)"
[ "$(calls)" = "$n" ] || die "the installer ran after a failed download"
rc=0; "$P2PNODE" apply --root "$TMP/root6" --profile "$TMP/url.yaml" > "$TMP/6b.out" 2> "$TMP/6b.err" || rc=$?
[ "$rc" = 0 ] || die "the resumed apply exited $rc: $(cat "$TMP/6b.out" "$TMP/6b.err")"
grep -q "bytes=1048576-" "$TMP/requests.log" || die "no Range request for the rest: $(cat "$TMP/requests.log")"
grep -q "resuming at 1048576 bytes" "$TMP/6b.err" || die "the log does not say it resumed: $(cat "$TMP/6b.err")"
grep -q "NVIDIA-Linux-x86_64-$VER.run: 100.0 % (resumed)" "$TMP/6b.err" || die "no progress line: $(cat "$TMP/6b.err")"
[ "$(sha256sum "$TMP/root6/var/lib/p2pnode/artifacts/NVIDIA-Linux-x86_64-$VER.run" | cut -d' ' -f1)" = "$BIG_SHA" ] || die "the resumed file's digest"
[ ! -e "$PART" ] || die "the part file was left behind"
[ -e "$TMP/root6/usr/lib/x86_64-linux-gnu/libcuda.so.$VER" ] || die "the downloaded installer did not install"
echo "   $(grep -c . "$TMP/requests.log") requests: $(tr '\n' ' ' < "$TMP/requests.log")"
url_profile "$TMP/404.yaml" "${URL%/*}/NVIDIA-Linux-x86_64-999.99.99.run"
mkdir -p "$TMP/root7"  # a box without the userspace yet
rc=0; "$P2PNODE" apply --root "$TMP/root7" --profile "$TMP/404.yaml" > "$TMP/6c.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "curl: (22) The requested URL returned error: 404" "$TMP/6c.out" ||
  die "a 404 is not reported as such: $(cat "$TMP/6c.out")"

echo "PASS: userspace installer and modprobe options"

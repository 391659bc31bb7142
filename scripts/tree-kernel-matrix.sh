#!/bin/bash
# The trees × kernels matrix: for each NVIDIA P2P tree and each Debian kernel's real header packages,
# what `p2pnode check` forecasts (driver.kernels: the known breakages the build will hit) and what the
# real build of the tree's kernel-open/ does (`make -k`; each compiler error matched against the
# signatures of daemon/nvidia/breakages.yaml), without and then with the builtin patches p2pnode would
# add. Prints a markdown table (and writes it with the details to WORK/matrix-<run>.md). Not part of make test.
#
# Each Debian suite gets a root made with debootstrap (minbase) under WORK, reused on later runs; the
# kernel's headers are installed there with apt (linux-headers-<kernel>, which brings the compiler the
# kernel was built with: gcc-12 for 6.1, gcc-14 for trixie's, gcc-16 for sid's). The builds run in that
# root through chroot; p2pnode runs on the host with --root. The core (src/nvidia) is not built: every
# kernel-layer object is compiled and the link step, which needs the core, is not counted as an error.
# Breakages, signatures and builtin fixes are read from the table, so a changed table needs no change here
# (rebuild the p2pnode given with -p from the same checkout: the binary carries its own copy).
#
# Usage (as root; needs debootstrap, chroot, jq, python3-yaml and Debian's archive):
#   scripts/tree-kernel-matrix.sh [-t TREE]... [-k SUITE:KERNEL]... [-w WORK] [-p P2PNODE] [-j JOBS] [-r]
#     -r      only make the roots and install the headers (no build), e.g. ahead of a run
#     TREE    550.90.07-p2p, 565.57.01-p2p, 570.86.16-p2p: ../shared/trees/ogkm-<TREE>.tar.xz as it is;
#             595.45.04+port: NVIDIA's 595.45.04 with tests/fixtures/p2p-patches/595.45.04-p2p.patch
#     KERNEL  bookworm:6.1.0-56-amd64 trixie:6.12.117+deb13-amd64 sid:7.2.13+deb14-amd64
#             trixie-backports:7.3.4+deb13-amd64 (the defaults)
# Cost: each root 3-6 min and 0.7-1.2 GB; each build of kernel-open about 5 min of 2 idle cores (one
# per cell, two where builtins apply; NVIDIA's conftest is the first 2-4 min).
set -uo pipefail
main() {  # the whole script, read by bash before it runs (an edit during a run cannot change it)
REPO=$(cd "$(dirname "$0")/.." && pwd)
TREES=$(cd "${P2PNODE_TREES:-$REPO/../shared/trees}" 2>/dev/null && pwd) || { echo "tree-kernel-matrix: no trees directory" >&2; exit 1; }
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
WORK=/var/tmp/p2pnode-matrix P2PNODE=$REPO/build/daemon/p2pnode JOBS=$(nproc) ROOTS_ONLY=0
T=() K=()
while getopts "t:k:w:p:j:rh" o; do
  case $o in t) T+=("$OPTARG");; k) K+=("$OPTARG");; w) WORK=$OPTARG;; p) P2PNODE=$OPTARG;; j) JOBS=$OPTARG;; r) ROOTS_ONLY=1;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2;; esac
done
[ ${#T[@]} -gt 0 ] || T=(550.90.07-p2p 565.57.01-p2p 570.86.16-p2p 595.45.04+port)
[ ${#K[@]} -gt 0 ] || K=(bookworm:6.1.0-56-amd64 trixie:6.12.117+deb13-amd64 sid:7.2.13+deb14-amd64 trixie-backports:7.3.4+deb13-amd64)
die() { echo "tree-kernel-matrix: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
for c in debootstrap chroot jq python3 patch; do command -v $c >/dev/null || die "needs $c"; done
[ -x "$P2PNODE" ] || die "no p2pnode binary at $P2PNODE (build it, or -p PATH)"
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
BREAKAGES=$REPO/daemon/nvidia/breakages.yaml

# root_for SUITE KERNEL: the suite's root with the kernel's headers installed; prints its path.
root_for() {
  local suite=$1 kernel=$2 base=${1%-backports} r
  r=$WORK/root-$base
  if [ ! -e "$r/.ready" ]; then
    echo "   debootstrap $base into $r" >&2
    rm -rf "$r"
    nice -n 19 debootstrap --variant=minbase --include=make,patch,xz-utils "$base" "$r" "$MIRROR" > "$WORK/debootstrap-$base.log" 2>&1 ||
      die "debootstrap $base failed: $(tail -3 "$WORK/debootstrap-$base.log")"
    # sid's Release file expires within a week; a mirror or clock that lags behind would refuse it
    echo 'Acquire::Check-Valid-Until "false";' > "$r/etc/apt/apt.conf.d/99tree-kernel-matrix"
    touch "$r/.ready"
  fi
  if [ "$base" != sid ] && [ ! -e "$r/etc/apt/sources.list.d/updates.list" ]; then   # a stable's kernels move there
    printf 'deb %s %s-updates main\ndeb %s %s-security main\n' "$MIRROR" "$base" "$SECURITY" "$base" > "$r/etc/apt/sources.list.d/updates.list"
  fi
  if [ "$suite" != "$base" ] && [ ! -e "$r/etc/apt/sources.list.d/backports.list" ]; then
    echo "deb $MIRROR $suite main" > "$r/etc/apt/sources.list.d/backports.list"
  fi
  if [ ! -e "$r/lib/modules/$kernel/build/Makefile" ]; then
    echo "   apt: linux-headers-$kernel into $r" >&2
    { chroot "$r" apt-get update && DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get install -y --no-install-recommends \
        $([ "$suite" != "$base" ] && echo "-t $suite") "linux-headers-$kernel"; } > "$WORK/apt-$kernel.log" 2>&1 ||
      die "linux-headers-$kernel in $r: $(tail -3 "$WORK/apt-$kernel.log")"
  fi
  # DKMS depends on gcc, which brings /usr/bin/cc: trees before 570 build with CC ?= cc, where 570
  # and later take CONFIG_CC_VERSION_TEXT's compiler. A node with DKMS has both.
  if [ ! -e "$r/usr/bin/cc" ]; then
    DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get install -y --no-install-recommends gcc > "$WORK/apt-gcc-$base.log" 2>&1 ||
      die "gcc in $r: $(tail -3 "$WORK/apt-gcc-$base.log")"
  fi
  echo "$r"
}

# unpack TREE DIR: the tree's sources in DIR (patched where the tree is NVIDIA's release plus a port).
unpack() {
  local tree=$1 dir=$2 tag
  rm -rf "$dir" && mkdir -p "$dir"
  case $tree in
    *+port) tag=${tree%+port}
      tar -xJf "$TREES/ogkm-$tag.tar.xz" --strip-components=1 -C "$dir" &&
      (cd "$dir" && patch -p1 -s < "$REPO/tests/fixtures/p2p-patches/$tag-p2p.patch") ;;
    *) tar -xJf "$TREES/ogkm-$tree.tar.xz" --strip-components=1 -C "$dir" ;;
  esac
}
version_of() { local v=${1%+port}; echo "${v%-p2p}"; }

# profile TREE [BUILTIN...]: a profile for the tree (its sha256 pinned), with those builtin patches.
profile() {
  local tree=$1 ver f src; shift; ver=$(version_of "$tree")
  f=$WORK/profiles/$tree${1:+-builtins}.yaml; mkdir -p "$WORK/profiles"
  case $tree in *+port) src=$TREES/ogkm-$ver.tar.xz;; *) src=$TREES/ogkm-$tree.tar.xz;; esac
  {
    echo "apiVersion: p2pnode/v1"; echo "kind: NodeProfile"; echo "metadata: {name: matrix}"
    echo "match: {gpus: {vendor: 0x10de, devices: [0x2684]}}"
    echo "driver:"; echo "  version: \"$ver\""; echo "  kernel_module:"; echo "    name: nvidia-p2p"
    echo "    source: {path: $src, sha256: $(sha256sum "$src" | cut -d' ' -f1)}"
    if [[ $tree == *+port ]] || [ $# -gt 0 ]; then echo "    patches:"; fi
    if [[ $tree == *+port ]]; then
      local p=$REPO/tests/fixtures/p2p-patches/$ver-p2p.patch
      echo "      - {path: $p, sha256: $(sha256sum "$p" | cut -d' ' -f1)}"
    fi
    for b in "$@"; do echo "      - {builtin: $b}"; done
  } > "$f"
  echo "$f"
}

# forecast ROOT KERNEL PROFILE: the ids check predicts will stop the build on KERNEL (space-separated).
forecast() {
  local out rc
  out=$("$P2PNODE" check --root "$1" --profile "$3" --only driver.kernels --json 2>"$WORK/check.err"); rc=$?
  [ $rc -le 1 ] || die "p2pnode check exited $rc: $(head -c 400 "$WORK/check.err")"
  jq -r --arg k "$2" '[.findings[] | select(.subject == $k) | .observed.predicted_breakages[]?] | unique | join(" ")' <<< "$out"
}
of_stage() {  # of_stage build|runtime ID...: the ids of that stage (the table's `stage`, build by default)
  python3 - "$BREAKAGES" "$@" <<'EOF'
import sys, yaml
t = {b["id"]: b for b in yaml.safe_load(open(sys.argv[1]))["breakages"]}
print(" ".join(i for i in sys.argv[3:] if t.get(i, {}).get("stage", "build") == sys.argv[2]))
EOF
}
builtins_of() {  # the ids among $@ whose fix is a builtin patch
  python3 - "$BREAKAGES" "$@" <<'EOF'
import sys, yaml
t = {b["id"]: b for b in yaml.safe_load(open(sys.argv[1]))["breakages"]}
print(" ".join(i for i in sys.argv[2:] if isinstance(t.get(i, {}).get("fix"), dict) and "builtin" in t[i]["fix"]))
EOF
}
# classify LOG: "<ids matched> | <n errors> | <first error no signature matched>" for a make.log.
classify() {
  python3 - "$BREAKAGES" "$1" <<'EOF'
import re, sys, yaml
table = [(b["id"], re.compile(b["signature"])) for b in yaml.safe_load(open(sys.argv[1]))["breakages"] if b.get("signature")]
# An error in a file where an entry's signature matched follows from it (gcc goes on after the
# first: "returning 'int' from a function with return type 'char *'" where strncpy() was declared
# implicitly, the calls that pass the renamed drm_atomic_state on): not unmatched. What it might
# hide shows in the build with the builtins, where that file compiles or fails again.
# An error reported inside a kernel header (a macro's static assertion) belongs to the .c file
# gcc was compiling ("x.c: In function ...").
ids, n, unmatched, matched_in, cur = [], 0, [], set(), None
for line in open(sys.argv[2], errors="replace"):
    m = re.match(r"^(\S+\.c): In function", line)
    if m: cur = m.group(1)
    if " error: " not in line and "fatal error:" not in line:
        continue
    n += 1
    at = re.match(r"^\s*([^:\s]+):\d+:", line)
    f = at.group(1) if at else None
    if f and not f.endswith(".c") and cur: f = cur
    hit = [i for i, rx in table if rx.search(line)]
    for i in hit:
        if i not in ids: ids.append(i)
    if hit and f: matched_in.add(f)
    if not hit: unmatched.append((f, line))
other = next((re.sub(r"^.*/kernel-open/", "kernel-open/", l.strip())[:160] for f, l in unmatched if f not in matched_in), "")
print(" ".join(ids), "|", n, "|", other)
EOF
}
# agreement WANT GOT N OTHER: "yes" when the build hit only what was forecast (every error matched
# a forecast entry) and broke exactly when a stop was forecast; a forecast stop that the build did
# not reach (every file stopped earlier, on another forecast entry) is no disagreement.
agreement() {
  local want=" $1 " g
  [ -n "$4" ] && { echo "NO (an error no entry names)"; return; }
  for g in $2; do [[ "$want" == *" $g "* ]] || { echo "NO ($g not forecast)"; return; }; done
  if [ -n "$(echo $1)" ]; then [ "$3" -gt 0 ] && echo yes || echo "NO (forecast a stop, built)"
  else [ "$3" = 0 ] && echo yes || echo "NO (errors, none forecast)"; fi
}
# unreached WANT GOT: "; not reached: ..." for the forecast entries the build never got to.
unreached() {
  local g=" $2 " w out=
  for w in $1; do [[ "$g" == *" $w "* ]] || out="$out $w"; done
  [ -n "$out" ] && echo "; not reached:$out"
}
# build ROOT KERNEL TREE [BUILTIN...]: make -k of kernel-open in the root; prints "<classify> | seconds".
build() {
  local root=$1 kernel=$2 tree=$3 d log t0; shift 3
  d=$root/tmp/matrix/$tree; log=$WORK/logs/$tree-$kernel${1:+-builtins}.log; mkdir -p "$WORK/logs"; : > "$log"
  unpack "$tree" "$d" >> "$log" 2>&1 || { echo "| 0 | unpack or port patch failed | 0 | 0"; return; }
  for b in "$@"; do
    (cd "$d" && patch -p1 -s < "$REPO/daemon/nvidia/patches/$b.patch") >> "$log" 2>&1 ||
      { echo "| 0 | builtin $b does not apply to this tree | 0 | 0"; return; }
  done
  t0=$SECONDS
  nice -n 19 chroot "$root" make -k -j"$JOBS" -C "/tmp/matrix/$tree/kernel-open" SYSSRC="/lib/modules/$kernel/source" \
    SYSOUT="/lib/modules/$kernel/build" NV_SPECTRE_V2=0 modules >> "$log" 2>&1
  echo "$(classify "$log") | $((SECONDS - t0)) | $(grep -c '^ *CC \[M\]' "$log")"
  rm -rf "$d"
}

if [ "$ROOTS_ONLY" = 1 ]; then
  for ks in "${K[@]}"; do root_for "${ks%%:*}" "${ks#*:}" || exit 1; done
  exit 0
fi

declare -A CELL
RUN=$(date +%Y%m%d-%H%M%S)-$$   # runs may share WORK (its roots), each writes its own table
DETAILS=$WORK/details-$RUN.md; : > "$DETAILS"
for tree in "${T[@]}"; do
  for ks in "${K[@]}"; do
    suite=${ks%%:*} kernel=${ks#*:}
    echo "== $tree on $kernel ($suite)" >&2
    root=$(root_for "$suite" "$kernel") || exit 1
    ver=$(version_of "$tree")
    unpack "$tree" "$root/usr/src/nvidia-p2p-$ver" || die "cannot unpack $tree"   # staged: check reads its source
    all=$(forecast "$root" "$kernel" "$(profile "$tree")") || exit 1
    want=$(of_stage build $all) runtime=$(of_stage runtime $all)   # runtime ones build; reported apart
    # p2pnode adds builtins only where every forecast stop has one (else it refuses): so does this
    fix=$(builtins_of $want); [ "$(echo $fix)" = "$(echo $want)" ] || fix=
    IFS='|' read -r got n other secs objs <<< "$(build "$root" "$kernel" "$tree")"
    got=$(echo $got) other=$(echo $other) n=$(echo $n) secs=$(echo $secs) objs=$(echo $objs)
    [ "$n" = 0 ] && [ -z "$other" ] && [ "$objs" = 0 ] && other="no object compiled (see the log)"
    cell="forecast: ${want:-none}${runtime:+ (run time: $runtime)}; build: $([ "$n" = 0 ] && [ -z "$other" ] && echo "compiled ($objs objects)" || echo "$n errors${got:+ ($got)}${other:+, $other}")"
    cell="$cell$(unreached "$want" "$got")"
    agree=$(agreement "$want" "$got" "$n" "$other")
    echo "- **$tree on $kernel**: forecast \`${want:-none}\`${runtime:+ (run time: \`$runtime\`)}; build ${secs}s, $objs objects compiled: $n errors, matched \`${got:-none}\`${other:+, first unmatched: \`$other\`}" >> "$DETAILS"
    if [ -n "$fix" ]; then
      want2=$(forecast "$root" "$kernel" "$(profile "$tree" $fix)") || exit 1; want2=$(of_stage build $want2)
      IFS='|' read -r got2 n2 other2 secs2 objs2 <<< "$(build "$root" "$kernel" "$tree" $fix)"
      got2=$(echo $got2) n2=$(echo $n2) other2=$(echo $other2) secs2=$(echo $secs2) objs2=$(echo $objs2)
      [ "$n2" = 0 ] && [ -z "$other2" ] && [ "$objs2" = 0 ] && other2="no object compiled (see the log)"
      cell="$cell; with {builtin: ${fix// /, }}: forecast ${want2:-none}, build $([ "$n2" = 0 ] && [ -z "$other2" ] && echo "compiled ($objs2 objects)" || echo "$n2 errors${got2:+ ($got2)}${other2:+, $other2}")"
      agree="$agree; with builtins $(agreement "$want2" "$got2" "$n2" "$other2")"
      echo "  with \`${fix}\`: forecast \`${want2:-none}\`; build ${secs2}s, $objs2 objects compiled: $n2 errors, matched \`${got2:-none}\`${other2:+, first unmatched: \`$other2\`}" >> "$DETAILS"
    fi
    CELL[$tree,$kernel]="$cell (agree: $agree)"
    rm -rf "$root/usr/src/nvidia-p2p-$ver"
  done
done

{
  printf '| tree |'; for ks in "${K[@]}"; do printf ' %s |' "${ks#*:}"; done; echo
  printf '|---|'; for ks in "${K[@]}"; do printf -- '---|'; done; echo
  for tree in "${T[@]}"; do
    printf '| %s |' "$tree"; for ks in "${K[@]}"; do printf ' %s |' "${CELL[$tree,${ks#*:}]}"; done; echo
  done
  echo; echo "Details (logs in $WORK/logs):"; cat "$DETAILS"
} | tee "$WORK/matrix-$RUN.md"
}
main "$@"

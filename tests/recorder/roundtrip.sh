#!/bin/bash
# Round-trip test of scripts/record-node.sh: record every fixture (--from tests/fixtures/<name>) into a temp
# dir and compare what the recorder captures with the fixture. Also checks that the source is left untouched
# and that symlinks leading out of the root are not followed. Run from anywhere; no arguments.
# Prints "N passed, N failed" last; exits 1 on any failure.
set -u -o pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"

REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
REC="$REPO/scripts/record-node.sh"
FIX="$REPO/tests/fixtures"
TMP=$(temp_dir roundtrip)
trap 'rm -rf -- "$TMP"' EXIT


# manifest ROOT: one line per file or symlink that the recorder is meant to capture:
# "path L target" for symlinks, "path F sha256" for files (normalised where the recorder normalises)
manifest() {
    local root=$1 y p l plain="$TMP/plain.$$"
    : >"$plain"
    (cd -- "$root" && find . -mindepth 1 \( -type f -o -type l \) -printf '%y\t%P\t%l\n' | LC_ALL=C sort -t$'\t' -k2,2) |
        while IFS=$'\t' read -r y p l; do
            case $p in
            FIXTURE.md | dev/nvme* | var/* | lib/modules/*/modules.dep) continue ;;
            usr/*) case ${p##*/} in libcuda.so.*.* | libnvidia-ml.so.*.*) ;; *) continue ;; esac ;;
            lib/modules/*)
                case $p in */updates/*) ;; */nvidia* | */nouveau* | */vfio* | */nvme*) ;; *) continue ;; esac ;;
            esac
            if [ "$y" = l ]; then
                echo "$p L $l"
                continue
            fi
            case $p in
            sys/firmware/acpi/tables/DMAR | sys/firmware/acpi/tables/IVRS)
                echo "$p F $(head -c 36 -- "$root/$p" | sha256sum | cut -c1-16)" ;;
            sys/firmware/acpi/tables/* | */resource[0-9] | */resource[0-9]_wc | */rom | sys/bus/pci/drivers/*/*bind | \
                sys/bus/pci/drivers/*/*_id | sys/bus/pci/drivers_probe | sys/bus/pci/rescan | lib/* | usr/* | dev/vfio/*)
                echo "$p marker" ;;
            proc/mounts)
                echo "$p F $(awk '{ o = $4; sub(/,.*/, "", o); print $1, $2, $3, o, 0, 0 }' "$root/$p" | sha256sum | cut -c1-16)" ;;
            proc/modules)
                echo "$p F $(awk '{ $6 = "0x0000000000000000"; print }' "$root/$p" | sha256sum | cut -c1-16)" ;;
            *) printf '%s\n' "$p" >>"$plain" ;;
            esac
        done
    # ordinary files: content hashes in one pass
    (cd -- "$root" && tr '\n' '\0' <"$plain" | xargs -0 -r sha256sum --) | awk '{ print $2, "F", substr($1, 1, 16) }'
    rm -f -- "$plain"
}

# a fingerprint of everything under a tree, to prove the recorder wrote nothing there
fingerprint() {
    (cd -- "$1" && find . -printf '%p %y %s %l\n' | LC_ALL=C sort | sha256sum)
}

for fx in "$FIX"/*/; do
    fx=${fx%/}
    name=${fx##*/}
    [ -f "$fx/FIXTURE.md" ] || continue
    before=$(fingerprint "$fx")
    out="$TMP/$name"
    if ! bash "$REC" --from "$fx" --to "$out" 2>"$TMP/$name.log"; then
        fail "$name: recorder failed: $(tail -3 "$TMP/$name.log")"
        continue
    fi
    if grep -v '^record-node: recorded ' "$TMP/$name.log" | grep -q .; then
        fail "$name: recorder warned: $(grep -v '^record-node: recorded ' "$TMP/$name.log" | head -3)"
        continue
    fi
    [ "$(fingerprint "$fx")" = "$before" ] || { fail "$name: the source tree changed"; continue; }
    manifest "$fx" | LC_ALL=C sort >"$TMP/$name.want"
    manifest "$out" | LC_ALL=C sort >"$TMP/$name.got"
    if diff -u "$TMP/$name.want" "$TMP/$name.got" >"$TMP/$name.diff"; then
        pass "$name: $(wc -l <"$TMP/$name.want") paths identical"
    else
        fail "$name: recorded tree differs (- fixture, + recorded):"
        grep '^[-+][^-+]' "$TMP/$name.diff" | head -20 | sed 's/^/     /'
    fi
done

# symlinks out of the root are not followed, and nothing outside is recorded
esc="$TMP/escape-root"
mkdir -p "$esc/sys/bus/pci/devices" "$esc/sys/devices/pci0000:00/0000:00:01.0" "$TMP/outside" "$esc/etc"
echo 0x1234 >"$TMP/outside/vendor"
echo secret >"$TMP/outside/hostname"
echo 0x10de >"$esc/sys/devices/pci0000:00/0000:00:01.0/vendor"
ln -s ../../../devices/pci0000:00/0000:00:01.0 "$esc/sys/bus/pci/devices/0000:00:01.0"
ln -s ../../../../../outside "$esc/sys/bus/pci/devices/0000:00:02.0"
ln -s "$TMP/outside/hostname" "$esc/etc/hostname"
ln -s ../../../../../outside "$esc/sys/devices/pci0000:00/0000:00:01.0/driver"
# a directory on the way that leads out: sys/kernel -> outside (its iommu_groups/0/type would be read)
mkdir -p "$TMP/outside/iommu_groups/0"
echo 0x1234 >"$TMP/outside/iommu_groups/0/type"
ln -s ../../outside "$esc/sys/kernel"
mkdir -p "$esc/sys/devices/system"
ln -s ../../../outside "$esc/sys/devices/system/node"
mkdir -p "$TMP/outside/node0" && echo 0x1234 >"$TMP/outside/node0/cpulist"
if bash "$REC" --from "$esc" --to "$TMP/escape-out" 2>"$TMP/escape.log" &&
    [ -f "$TMP/escape-out/sys/devices/pci0000:00/0000:00:01.0/vendor" ] &&
    [ ! -e "$TMP/escape-out/sys/bus/pci/devices/0000:00:02.0" ] &&
    [ ! -e "$TMP/escape-out/etc/hostname" ] &&
    [ ! -e "$TMP/escape-out/sys/devices/pci0000:00/0000:00:01.0/driver" ] &&
    ! grep -rqs 'secret\|0x1234' "$TMP/escape-out"; then
    pass "escape: links out of the root were not followed"
else
    fail "escape: the recorder followed a link out of the root: $(cat "$TMP/escape.log")"
fi

# refusals: destination inside the source, non-empty destination, bad usage
if bash "$REC" --from "$esc" --to "$esc/rec" 2>/dev/null || [ -e "$esc/rec" ]; then
    fail "refuse: --to inside --from was accepted"
else
    pass "refuse: --to inside --from"
fi
if bash "$REC" --from "$FIX/h100-1gpu" --to "$TMP/h100-1gpu" 2>/dev/null; then
    fail "refuse: a non-empty --to was accepted"
else
    pass "refuse: non-empty --to"
fi
bash "$REC" >/dev/null 2>&1
[ $? -eq 2 ] && pass "usage: no arguments exits 2" || fail "usage: no arguments did not exit 2"

finish

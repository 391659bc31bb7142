#!/bin/bash
# record-node.sh --to DIR [--from ROOT]
#
# Record the PCI, IOMMU, kernel and driver facts of a machine into DIR, laid out like the machine's own
# root filesystem (the layout of tests/fixtures, see tests/fixtures/README.md), so that
# `p2pnode check --root DIR` sees what it would see on the machine. ROOT defaults to /; with --from a
# recorded tree (or a mounted image) is re-recorded, which is how tests/recorder/roundtrip.sh tests this.
#
# Read-only on ROOT: it only reads files and symlinks there, never writes, and never follows a symlink
# whose target lies outside ROOT. Nothing secret: no board/product serials or UUIDs, mount options are
# reduced to rw/ro, no block-device contents, module parameters only for the GPU/NVMe/vfio modules.
# Configuration copied: /etc/default/grub (+ grub.d/*.cfg), /etc/modprobe.d/*.conf, /etc/ld.so.cache
# (and the libcuda soname link it names).
# Run as root for the full 4096-byte config spaces and the ACPI table headers (without root the kernel
# returns 64 bytes of config and refuses the tables; the script says so and goes on).
set -u -o pipefail

usage() {
    echo "usage: ${0##*/} --to DIR [--from ROOT]" >&2
    exit 2
}

FROM=/
TO=
while [ $# -gt 0 ]; do
    case $1 in
    --to) [ $# -ge 2 ] || usage; TO=$2; shift 2 ;;
    --from) [ $# -ge 2 ] || usage; FROM=$2; shift 2 ;;
    -h | --help) usage ;;
    *) usage ;;
    esac
done
[ -n "$TO" ] || usage

SRC=$(realpath -e -- "$FROM" 2>/dev/null) || { echo "record-node: no such root: $FROM" >&2; exit 2; }
[ -d "$SRC" ] || { echo "record-node: not a directory: $FROM" >&2; exit 2; }
if [ "$SRC" = / ]; then S=""; else S=$SRC; fi
if [ -e "$TO" ] && [ -n "$(ls -A -- "$TO" 2>/dev/null)" ]; then
    echo "record-node: $TO exists and is not empty" >&2
    exit 2
fi
# the destination must not lie inside a non-/ source (that would write into it)
DSTP=$(realpath -m -- "$TO")
if [ -n "$S" ]; then
    case "$DSTP/" in "$S"/*) echo "record-node: --to must not be inside --from" >&2; exit 2 ;; esac
fi
mkdir -p -- "$TO" || exit 2
DST=$(realpath -e -- "$TO")

WARNINGS=0
warn() {
    echo "record-node: $*" >&2
    WARNINGS=$((WARNINGS + 1))
}

# inside PATH: PATH exists and, all symlinks resolved, lies inside the source root
inside() {
    local r
    r=$(realpath -e -- "$1" 2>/dev/null) || return 1
    [ -z "$S" ] && return 0
    case "$r" in "$S" | "$S"/*) return 0 ;; esac
    return 1
}

# dir_inside DIR: inside, remembered per directory (a non-symlink file in it is then inside too)
declare -A DIR_OK=()
dir_inside() {
    [ -n "${DIR_OK[$1]:-}" ] && return 0
    inside "$1" || return 1
    DIR_OK[$1]=1
}

# link_target LINK: the symlink's target as a path relative to the root (lexically resolved against the
# link's directory, which must itself be a real path); fails if it points outside the root
link_target() {
    local t n
    t=$(readlink -- "$1") || return 1
    case "$t" in
    /*) n=$(realpath -s -m -- "$S$t") ;;
    *) n=$(realpath -s -m -- "$(dirname -- "$1")/$t") ;;
    esac
    if [ -z "$S" ]; then
        printf '%s\n' "${n#/}"
        return 0
    fi
    case "$n" in "$S"/*) printf '%s\n' "${n#"$S"/}" ;; *) return 1 ;; esac
}

# up N: "../../.." (N times)
up() {
    local i out=..
    for ((i = 1; i < $1; i++)); do out=$out/..; done
    printf '%s' "$out"
}

# copy SRC-FILE DST-FILE: a regular, readable, non-symlink file (sysfs attributes), copied byte for byte;
# under a non-/ root, only if no directory on its path leads out of the root
copy() {
    [ -f "$1" ] && [ ! -L "$1" ] && [ -r "$1" ] || return 1
    [ -z "$S" ] || dir_inside "${1%/*}" || return 1
    [ -d "${2%/*}" ] || mkdir -p -- "${2%/*}"
    if ! cat -- "$1" >"$2" 2>/dev/null; then
        rm -f -- "$2"
        return 1
    fi
}

# copy_node REL: a node-wide file; symlinks allowed when they stay inside the root (/etc/os-release)
copy_node() {
    local f="$S/$1"
    [ -e "$f" ] || return 0
    inside "$f" || { warn "$1 leads outside the root, skipped"; return 0; }
    [ -f "$f" ] || return 0
    mkdir -p -- "$(dirname -- "$DST/$1")"
    cat -- "$f" >"$DST/$1" 2>/dev/null || { rm -f -- "$DST/$1"; warn "cannot read /$1"; }
}

marker() {
    [ -d "${1%/*}" ] || mkdir -p -- "${1%/*}"
    : >"$1"
}

# relative symlink DST/REL -> TARGET (idempotent)
mklink() {
    local p="$DST/$1"
    [ -d "${p%/*}" ] || mkdir -p -- "${p%/*}"
    [ -L "$DST/$1" ] || ln -s -- "$2" "$DST/$1"
}

ATTRS="vendor device class subsystem_vendor subsystem_device revision resource config current_link_speed
current_link_width max_link_speed max_link_width numa_node local_cpulist enable power_state driver_override
d3cold_allowed irq msi_bus reset_method"

mkdir -p -- "$DST/sys/bus/pci/devices"
declare -A DRIVERS=()
short_config=0

# ---- PCI devices -------------------------------------------------------------------------------------
for l in "$S"/sys/bus/pci/devices/*; do
    [ -L "$l" ] || continue
    bdf=${l##*/}
    rel=$(link_target "$l") || { warn "$bdf: link leads outside the root, skipped"; continue; }
    case "$rel" in sys/devices/*) ;; *) warn "$bdf: link does not lead into sys/devices, skipped"; continue ;; esac
    src="$S/$rel"
    inside "$src" && [ -d "$src" ] || { warn "$bdf: device directory leads outside the root, skipped"; continue; }
    dst="$DST/$rel"
    mkdir -p -- "$dst"
    depth=$(tr -cd / <<<"$rel" | wc -c)
    mklink "sys/bus/pci/devices/$bdf" "../../../${rel#sys/}"
    for a in $ATTRS; do copy "$src/$a" "$dst/$a"; done
    if [ -f "$dst/config" ] && [ "$(stat -c %s -- "$dst/config")" -le 64 ]; then short_config=1; fi
    copy "$src/power/control" "$dst/power/control"
    for f in "$src"/resource[0-9]* "$src/rom"; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        case ${f##*/} in
        *_resize) copy "$f" "$dst/${f##*/}" ;;
        *) marker "$dst/${f##*/}" ;;
        esac
    done
    if [ -L "$src/driver" ]; then
        if t=$(link_target "$src/driver"); then
            name=${t##*/}
            DRIVERS[$name]=1
            mklink "${rel}/driver" "$(up "$depth")/bus/pci/drivers/$name"
            mklink "sys/bus/pci/drivers/$name/$bdf" "../../../../${rel#sys/}"
        else
            warn "$bdf: driver link leads outside the root"
        fi
    fi
    if [ -L "$src/iommu_group" ]; then
        if t=$(link_target "$src/iommu_group"); then
            g=${t##*/}
            mklink "${rel}/iommu_group" "$(up "$depth")/kernel/iommu_groups/$g"
            mklink "sys/kernel/iommu_groups/$g/devices/$bdf" "../../../../${rel#sys/}"
        else
            warn "$bdf: iommu_group link leads outside the root"
        fi
    fi
    # NVMe controllers bound to nvme
    for c in "$src"/nvme/nvme[0-9]*; do
        [ -d "$c" ] && [ ! -L "$c" ] || continue
        name=${c##*/}
        for a in serial model firmware_rev address state transport dev; do copy "$c/$a" "$dst/nvme/$name/$a"; done
        mklink "sys/class/nvme/$name" "../../${rel#sys/}/nvme/$name"
    done
done
[ "$short_config" = 1 ] && warn "config spaces are 64 bytes: not root, capabilities not recorded"

DRIVER_MODULES=""
for name in "${!DRIVERS[@]}"; do
    d="$S/sys/bus/pci/drivers/$name"
    if [ -L "$d/module" ] && t=$(link_target "$d/module"); then
        mklink "sys/bus/pci/drivers/$name/module" "../../../../module/${t##*/}"
        DRIVER_MODULES="$DRIVER_MODULES ${t##*/}"
    fi
    for f in bind unbind new_id remove_id; do [ -e "$d/$f" ] && marker "$DST/sys/bus/pci/drivers/$name/$f"; done
done
copy "$S/sys/bus/pci/drivers_autoprobe" "$DST/sys/bus/pci/drivers_autoprobe"
for f in drivers_probe rescan; do [ -e "$S/sys/bus/pci/$f" ] && marker "$DST/sys/bus/pci/$f"; done

# ---- block devices (namespaces, partitions) and their holders ------------------------------------------
for b in "$S"/sys/class/block/*; do
    [ -L "$b" ] || continue
    name=${b##*/}
    t=$(link_target "$b") || { warn "block $name: link leads outside the root"; continue; }
    case "$t" in sys/devices/*) ;; *) continue ;; esac
    inside "$S/$t" || { warn "block $name: leads outside the root"; continue; }
    mkdir -p -- "$DST/$t"
    for a in size dev ro partition start queue/logical_block_size; do copy "$S/$t/$a" "$DST/$t/$a"; done
    mkdir -p -- "$DST/$t/holders"
    for h in "$S/$t"/holders/*; do
        [ -L "$h" ] || continue
        # keep the holder's name (dm-0, md0); its target need not be recorded
        ht=$(readlink -- "$h") && mklink "$t/holders/${h##*/}" "$ht"
    done
    mklink "sys/class/block/$name" "../../${t#sys/}"
    [ -e "$S/$t/partition" ] || mklink "sys/block/$name" "../${t#sys/}"
done

# ---- IOMMU ---------------------------------------------------------------------------------------------
mkdir -p -- "$DST/sys/class/iommu" "$DST/sys/kernel/iommu_groups"
for u in "$S"/sys/class/iommu/*; do
    [ -L "$u" ] || continue
    t=$(link_target "$u") || { warn "iommu ${u##*/}: link leads outside the root"; continue; }
    mkdir -p -- "$DST/$t"
    for a in amd-iommu/cap amd-iommu/features intel-iommu/version intel-iommu/cap intel-iommu/ecap; do
        copy "$S/$t/$a" "$DST/$t/$a"
    done
    mklink "sys/class/iommu/${u##*/}" "../../${t#sys/}"
done
for g in "$S"/sys/kernel/iommu_groups/*; do
    [ -d "$g" ] && [ ! -L "$g" ] || continue
    n=${g##*/}
    for a in type name reserved_regions; do copy "$g/$a" "$DST/sys/kernel/iommu_groups/$n/$a"; done
    for x in "$g"/devices/*; do
        [ -L "$x" ] || continue
        t=$(link_target "$x") || continue
        mklink "sys/kernel/iommu_groups/$n/devices/${x##*/}" "../../../../${t#sys/}"
    done
done
for f in "$S"/dev/vfio/noiommu-*; do [ -e "$f" ] && marker "$DST/dev/vfio/${f##*/}"; done
acpi_denied=0
for f in "$S"/sys/firmware/acpi/tables/*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    sig=${f##*/}
    case $sig in
    DMAR | IVRS)
        inside "$f" || continue
        mkdir -p -- "$DST/sys/firmware/acpi/tables"
        head -c 36 -- "$f" >"$DST/sys/firmware/acpi/tables/$sig" 2>/dev/null || acpi_denied=1
        ;;
    *) marker "$DST/sys/firmware/acpi/tables/$sig" ;;
    esac
done
[ "$acpi_denied" = 1 ] && warn "cannot read the DMAR/IVRS table (not root): recorded as empty"

# ---- kernel, node, NUMA --------------------------------------------------------------------------------
for f in proc/cmdline proc/version proc/sys/kernel/osrelease proc/swaps proc/driver/nvidia/version \
    proc/driver/nvidia/params etc/hostname etc/os-release etc/default/grub etc/ld.so.cache sys/devices/system/node/online; do
    copy_node "$f"
done
# the configuration p2pnode reads and may edit: module options, GRUB drop-ins
for f in "$S"/etc/modprobe.d/*.conf "$S"/etc/default/grub.d/*.cfg; do
    [ -f "$f" ] && copy_node "${f#"$S"/}"
done
for k in sys_vendor product_name product_family product_version board_vendor board_name board_version \
    bios_vendor bios_version bios_date chassis_vendor chassis_type; do
    copy_node "sys/class/dmi/id/$k"
done
for n in "$S"/sys/devices/system/node/node[0-9]*; do
    [ -d "$n" ] && copy "$n/cpulist" "$DST/sys/devices/system/node/${n##*/}/cpulist"
done
if [ -f "$S/proc/mounts" ] && inside "$S/proc/mounts"; then
    mkdir -p -- "$DST/proc"
    # device, mount point, type, rw/ro: never the other options (they can hold addresses or names)
    awk '{ o = $4; sub(/,.*/, "", o); if (o != "rw" && o != "ro") o = "rw"; print $1, $2, $3, o, 0, 0 }' \
        "$S/proc/mounts" >"$DST/proc/mounts" 2>/dev/null || warn "cannot read /proc/mounts"
fi
if [ -f "$S/proc/modules" ] && inside "$S/proc/modules"; then
    mkdir -p -- "$DST/proc"
    awk '{ $6 = "0x0000000000000000"; print }' "$S/proc/modules" >"$DST/proc/modules" 2>/dev/null
fi

# ---- modules: every loaded one and every driver's (built-in ones too): version, srcversion, taint, state;
# parameters of the relevant ones ---------------------------------------------------------------------------
PARAM_MODULES=" nvidia nvidia_uvm nvidia_modeset nvidia_drm nvidia_peermem nouveau vfio vfio_pci vfio_pci_core vfio_iommu_type1 nvme nvme_core "
mods=$(awk '{ print $1 }' "$DST/proc/modules" 2>/dev/null)
for m in $mods $DRIVER_MODULES $PARAM_MODULES; do
    md="$S/sys/module/$m"
    [ -d "$md" ] && inside "$md" || continue
    [ -d "$DST/sys/module/$m" ] && continue
    mkdir -p -- "$DST/sys/module/$m"
    for a in version srcversion taint initstate refcnt; do copy "$md/$a" "$DST/sys/module/$m/$a"; done
    case "$PARAM_MODULES" in *" $m "*)
        for p in "$md"/parameters/*; do copy "$p" "$DST/sys/module/$m/parameters/${p##*/}"; done ;;
    esac
done

# ---- installed driver files: module files that matter, userspace libraries, GSP firmware ------------------
rel=$(cat -- "$DST/proc/sys/kernel/osrelease" 2>/dev/null)
if [ -n "$rel" ] && [ -d "$S/lib/modules/$rel" ] && inside "$S/lib/modules/$rel"; then
    (cd -- "$S/lib/modules/$rel" && find . -xdev \( -name '*.ko' -o -name '*.ko.*' \) -type f \
        \( -path './updates/*' -o -name 'nvidia*' -o -name 'nouveau*' -o -name 'vfio*' -o -name 'nvme*' \) -print) |
        while IFS= read -r f; do marker "$DST/lib/modules/$rel/${f#./}"; done
    mkdir -p -- "$DST/lib/modules/$rel"
fi
for f in "$S"/usr/lib/x86_64-linux-gnu/libcuda.so.*.* "$S"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*.* \
    "$S"/lib/firmware/nvidia/*/gsp_*.bin; do
    [ -f "$f" ] && [ ! -L "$f" ] && inside "$f" || continue
    marker "$DST/${f#"$S"/}"
done

# the dynamic loader's cache names the libcuda programs load, wherever it lives (p2pnode reads the
# version from its soname link): the link and a marker for its target
if [ -s "$DST/etc/ld.so.cache" ]; then
    ldconfig -p -C "$DST/etc/ld.so.cache" 2>/dev/null |
        sed -n 's/^[[:space:]]*libcuda\.so\.1 (libc6,x86-64[^)]*) => \(\/.*\)$/\1/p' |
        while IFS= read -r l; do
            [ -L "$S$l" ] && dir_inside "$(dirname -- "$S$l")" || continue
            t=$(link_target "$S$l") || continue
            mklink "${l#/}" "$(readlink -- "$S$l")"
            [ -f "$S/$t" ] && [ ! -L "$S/$t" ] && marker "$DST/$t"
        done
fi

echo "record-node: recorded ${SRC} into ${DST} ($WARNINGS warnings)" >&2
exit 0

#!/bin/bash
# Which NVIDIA releases carry the fix for each kernel breakage of daemon/nvidia/breakages.yaml,
# read from the tags of a clone of NVIDIA/open-gpu-kernel-modules (1 = the tag carries it). The
# table's fixed_in lists were read from this output (2026-11-27, tags 550.40.07 … 595.45.04).
#   usage: scripts/nvidia-kernel-fixes.sh <git dir of open-gpu-kernel-modules> [first branch, 550]
set -euo pipefail
cd "$1"
first=${2:-550}
has() { git grep -q -E "$2" "$1" -- "$3" 2>/dev/null && echo 1 || echo 0; }
echo "tag extmod_cwd extra_cflags import_ns drm_date timer hrtimer mode_valid fb_create pfn_t pagemap exclude_bars of_gpio_guarded"
for t in $(git tag | sort -V | awk -F. -v f="$first" '$1 >= f'); do
  extra=$(git grep -q "^EXTRA_CFLAGS +=" "$t" -- kernel-open/Kbuild && echo 0 || echo 1)
  ofg=$(git show "$t:kernel-open/common/inc/nv-linux.h" 2>/dev/null | grep -B2 "linux/of_gpio.h" | grep -q "#if" && echo 1 || echo 0)
  pfn=$(git show "$t:kernel-open/nvidia-drm/nvidia-drm-gem-user-memory.c" 2>/dev/null | grep -c NV_LINUX_PFN_T_H_PRESENT || true)
  echo "$t $(has "$t" 'ln -sf \$\(abspath' kernel-open/Kbuild) $extra" \
    "$(has "$t" module_import_ns_takes kernel-open/conftest.sh) $(has "$t" drm_driver_has_date kernel-open/conftest.sh)" \
    "$(has "$t" timer_delete_sync kernel-open/nvidia-modeset/nvidia-modeset-linux.c) $(has "$t" hrtimer_setup kernel-open/nvidia/nv-nano-timer.c)" \
    "$(has "$t" mode_valid_has_const_mode_arg kernel-open/conftest.sh) $(has "$t" drm_fb_create_takes_format_info kernel-open/conftest.sh)" \
    "$([ "${pfn:-0}" -ge 2 ] && echo 1 || echo 0) $(has "$t" get_dev_pagemap_has_pgmap_arg kernel-open/conftest.sh)" \
    "$(has "$t" pci_resize_resource_has_exclude_bars_arg kernel-open/conftest.sh) $ofg"
done

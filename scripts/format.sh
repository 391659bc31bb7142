#!/bin/bash
# Formats the project's C++ and CUDA sources with .clang-format (`make format`); `--check` only
# lists the files whose layout differs and exits 1 if there are any. Recorded kernel headers
# (tests/fixtures) and the miniature kernel modules (tests/vm/nvidia-mini, kernel style) are not ours
# to lay out. Needs clang-format 16 or newer: Debian 12's clang-format-16, Debian 13's clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=""
for c in clang-format clang-format-19 clang-format-16; do
  command -v "$c" >/dev/null || continue
  v=$("$c" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
  if [ "${v:-0}" -ge 16 ]; then cf=$c; break; fi
done
[ -n "$cf" ] || { echo "clang-format 16 or newer is needed (apt install clang-format-16 on Debian 12)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.h' | grep -v -e '^tests/fixtures/' -e '^tests/vm/nvidia-mini/')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    "$cf" "$f" | cmp -s - "$f" || { echo "$f"; bad=1; }
  done
  exit $bad
fi
"$cf" -i "${files[@]}"

#!/usr/bin/env bash
# Run HERE after tests/gpu/pack-expect.sh: builds libgdrapi from gdrcopy's release tarball (the
# one the profiles name; plain C, no CUDA needed) into build-expect/gdrcopy/ for run-bar.sh.
# Usage: bash tests/gpu/pack-gdrapi.sh [TARBALL]
set -euo pipefail
TARBALL=${1:-../shared/trees/gdrcopy-2.6.tar.xz}
OUT=build-expect/gdrcopy
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tar -xf "$TARBALL" -C "$tmp"
make -C "$tmp"/gdrcopy-* lib >/dev/null
mkdir -p "$OUT"
cp "$tmp"/gdrcopy-*/src/libgdrapi.so.2.* "$OUT/"
cp "$OUT"/libgdrapi.so.2.? "$OUT/libgdrapi.so.2"  # a file, not a link: links are not carried
ls -l "$OUT"

#!/usr/bin/env bash
# Run HERE (the build machine) before tests/gpu/run-expect.sh: puts what the GPU box needs into
# build-expect/ (git-ignored, carried): p2pnode-agent (glibc + driver only), p2pnode and
# p2pnode-serve (the daemon's check and judge) and, in build-expect/lib, the shared libraries
# those two link beyond glibc (prometheus-cpp, cpp-httplib, yaml-cpp, fmt, OpenSSL, libsystemd, …),
# since the GPU box is a bare machine. Usage: bash tests/gpu/pack-expect.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
OUT=build-expect
rm -rf "$OUT"; mkdir -p "$OUT/lib"
cp "$BUILD/agent/p2pnode-agent" "$BUILD/daemon/p2pnode" "$BUILD/daemon/p2pnode-serve" "$OUT/"
strip --strip-debug "$OUT/p2pnode-agent" "$OUT/p2pnode" "$OUT/p2pnode-serve"  # the carry limit is 64 MiB
for b in "$OUT/p2pnode" "$OUT/p2pnode-serve"; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in  # glibc's own: the box's must be used
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
du -sh "$OUT"; ls "$OUT" "$OUT/lib"

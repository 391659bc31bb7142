#!/usr/bin/env bash
# Run HERE before tests/gpu/run-busy.sh: build-expect/ as pack-expect.sh makes it, plus the job
# that keeps the GPUs busy (tests/gpu/load/copy_load.cu, built for Hopper). Usage: bash tests/gpu/pack-busy.sh [BUILD_DIR]
set -euo pipefail
bash "$(dirname "$0")/pack-expect.sh" "${1:-build}"
nvcc -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o build-expect/p2pnode-copy-load "$(dirname "$0")/load/copy_load.cu"
ls -la build-expect/p2pnode-copy-load

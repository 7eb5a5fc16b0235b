#!/usr/bin/env bash
# The tile-language programs on a CUDA device against torch (matmul, SDPA
# with the cuDNN and flash backends) and the phase-1 CUDA text kernels, in one
# run, with their first-call times on an empty and on a warm disk cache:
#
#   bash bench/bench_tile_cuda.sh [--reps N] [--no-first-call]
#
# Needs torch with CUDA and tilejit built with its CUDA backend (installed, or
# on PYTHONPATH); triton is used for the timing when it imports. Prints a
# markdown table; the arguments go to bench_tile_cuda.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if command -v nvidia-smi >/dev/null; then
  echo "# $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1)"
fi
exec python3 "$here/bench_tile_cuda.py" "$@"

#!/usr/bin/env bash
# The tile GEMM against numpy's matmul in one run, with the same thread count,
# alternating so that both see the same machine load:
#
#   bash bench/bench_tile_gemm.sh <build dir> [threads] [size] [rounds]
#
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for numpy (they would pin
# OpenBLAS to another CPU's kernel); bench_tile_gemm.py prints the kernel it
# runs.
set -euo pipefail
build=${1:?usage: bench_tile_gemm.sh <build dir> [threads] [size] [rounds]}
threads=${2:-$(nproc)}
size=${3:-1024}
rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
for round in $(seq "$rounds"); do
  echo "## round $round"
  TILEJIT_NUM_THREADS=$threads "$build/bench/bench_tile_gemm" "$size" "$threads"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$threads" \
    OMP_NUM_THREADS="$threads" python3 "$here/bench_tile_gemm.py" "$size"
done

#!/usr/bin/env bash
# The tile attention kernels (flash attention, the sparse attention) against
# numpy's float32 version of the same math, and the tile sparse attention
# against the phase-1 source-text one, in one run with the same thread count,
# alternating rounds so that all see the same machine load:
#
#   bash bench/bench_tile_attention.sh <build dir> [threads] [rounds] [repeats]
#
# The build dir needs -DTILEJIT_BUILD_BENCH=ON and the bench_tile_attention
# target. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for numpy (they
# would pin OpenBLAS to another CPU's kernel).
set -euo pipefail
build=${1:?usage: bench_tile_attention.sh <build dir> [threads] [rounds] [repeats]}
threads=${2:-$(nproc)}
rounds=${3:-3}
repeats=${4:-9}
here=$(cd "$(dirname "$0")" && pwd)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1), nproc $(nproc)"
python3 -c 'import numpy; print("numpy", numpy.__version__)'
for round in $(seq "$rounds"); do
  echo "## round $round"
  TILEJIT_NUM_THREADS=$threads "$build/bench/bench_tile_attention" "$threads" "$repeats"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$threads" \
    OMP_NUM_THREADS="$threads" python3 "$here/bench_tile_attention.py" "$repeats"
done

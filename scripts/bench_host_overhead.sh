#!/usr/bin/env bash
# tilejit's own host work per CUDA call, without a GPU: builds
# bench/bench_cuda_call and the null driver (bench/null_driver/null_cuda.c, a
# libcuda.so.1 whose entries return at once) and runs the benchmark over it,
# three times (the first seven lines of each: the per-call table).
#
#   bash scripts/bench_host_overhead.sh
#
# Needs CMake, a C/C++ compiler and the CUDA toolkit's headers and NVRTC
# (the kernel is still compiled; it is never run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-host-bench"
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_BENCH=ON -DTILEJIT_BUILD_TESTS=OFF \
  -DTILEJIT_BUILD_EXAMPLES=OFF -DTILEJIT_WITH_CUDA=ON >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target bench_cuda_call bench_export_call null_cuda >/dev/null
export LD_LIBRARY_PATH="$build/bench/null_driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEJIT_CACHE_DIR="$build/kernel_cache"
for run in 1 2 3; do
  echo "== run $run"
  "$build/bench/bench_cuda_call" | sed -n '1,7p'
done
echo "== a CUDA export's C call (bench_export_call)"
"$build/bench/bench_export_call"

#!/usr/bin/env bash
# Instructions per call of tilejit's CUDA call path, without a GPU: runs
# bench_cuda_call's count mode over the null driver (bench/null_driver) under
# callgrind, for 0 and for N calls of each path, and prints the difference
# divided by N. The no-op kernel has 3 inputs, 1 output, 4 workspaces and 2
# symbols; the paths are `k(a, b, c)` and `k.call(args, {out = d})`.
#
#   bash scripts/count_call_instructions.sh [N]     (default 20000)
#
# Needs valgrind besides what scripts/bench_host_overhead.sh needs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-host-bench"
calls=${1:-20000}
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_BENCH=ON -DTILEJIT_BUILD_TESTS=OFF \
  -DTILEJIT_BUILD_EXAMPLES=OFF -DTILEJIT_WITH_CUDA=ON >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target bench_cuda_call null_cuda >/dev/null
export LD_LIBRARY_PATH="$build/bench/null_driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEJIT_CACHE_DIR="$build/kernel_cache"
"$build/bench/bench_cuda_call" count abc 1 >/dev/null  # fills the disk cache

# Instructions of one process running `n` calls of `path`.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/bench/bench_cuda_call" \
    count "$1" "$2" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for path in abc out; do
  base=$(instructions "$path" 0)
  many=$(instructions "$path" "$calls")
  echo "$path: $(( (many - base) / calls )) instructions per call ($calls calls)"
done

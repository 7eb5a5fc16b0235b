#!/usr/bin/env bash
# Builds, tests and benchmarks tilejit on a machine with an NVIDIA GPU, in one
# run, and writes the logs and the results table under $OUT (default
# ./gpu_out). Needs the CUDA toolkit, CMake and a C++ compiler; GoogleTest is
# taken from the system, or from Debian packages unpacked from .gpu/*.deb.
# Python steps run when python3 can import torch (the CUDA half of the Python
# tests and the Python benchmarks).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
OUT=${OUT:-$root/gpu_out}
mkdir -p "$OUT"
jobs=$(nproc)
export TILEJIT_CACHE_DIR=$root/build-gpu/kernel_cache
summary=$OUT/summary.md
: >"$summary"
log() { echo "$@" | tee -a "$summary"; }

prefix_args=()
if ls .gpu/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/tilejit_deps
  for f in .gpu/*.deb; do dpkg -x "$f" /tmp/tilejit_deps; done
  prefix_args=(-DCMAKE_PREFIX_PATH=/tmp/tilejit_deps/usr)
fi

log "# tilejit on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%F)"
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=ON \
  -DTILEJIT_BUILD_BENCH=ON -DTILEJIT_WITH_CUDA=ON "${prefix_args[@]}" >"$OUT/cmake.log" 2>&1 ||
  { log "cmake failed"; tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build-gpu -j"$jobs" >"$OUT/build.log" 2>&1 ||
  { log "build failed"; grep -m20 -B2 -A8 "error" "$OUT/build.log"; exit 1; }
log "build: $(( $(date +%s) - t0 )) s"

(cd build-gpu && ctest -j8 --timeout 300 --output-on-failure >"$OUT/ctest.log" 2>&1)
log "ctest: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
grep -E "\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Subprocess aborted" "$OUT/ctest.log" | head -20 | tee -a "$summary"
(cd build-gpu && ./tests/cpp/tilejit_test_cuda >"$OUT/test_cuda.log" 2>&1)
log "cuda tests: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_cuda.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|error" "$OUT/test_cuda.log" | head -30 | tee -a "$summary"

log "## examples on the GPU (cold disk cache, then a new process on a warm one)"
rm -rf "$root/build-gpu/example_cache"
TILEJIT_CACHE_DIR=$root/build-gpu/example_cache ./build-gpu/examples/cuda_examples 2>&1 | tee "$OUT/examples_cold.log" | tee -a "$summary"
TILEJIT_CACHE_DIR=$root/build-gpu/example_cache ./build-gpu/examples/cuda_examples 2>&1 | grep -E "^jit|context" | sed 's/^/warm: /' | tee -a "$summary"

log "## The CUDA export: the C consumer of the split-K GEMMs on the GPU (tests/c/consumer_cuda_splitk.c)"
if (cd build-gpu && ctest -R 'export\.(write_cuda_kernels|cuda_consumer)$' >"$OUT/cuda_export.log" 2>&1) &&
   ./build-gpu/tests/c/exported_cuda/consumer_cuda_splitk expect-gpu >>"$OUT/cuda_export.log" 2>&1; then
  log "cuda consumer: $(tail -1 "$OUT/cuda_export.log")"
else
  log "cuda consumer FAILED:"; tail -20 "$OUT/cuda_export.log" | tee -a "$summary"
fi
log "## A CUDA export's C call against the bare launch (bench/bench_export_call.cpp)"
./build-gpu/bench/bench_export_call 2>&1 | tee -a "$summary"

log "## C++ call overhead (cached outputs, the default)"
./build-gpu/bench/bench_cuda_call 2>&1 | tee -a "$summary"
log "## C++ call overhead with TILEJIT_CUDA_CACHE_OUTPUTS=0 (driver allocation per output)"
TILEJIT_CUDA_CACHE_OUTPUTS=0 ./build-gpu/bench/bench_cuda_call 2>&1 | head -7 | tee -a "$summary"

if [[ "${TILEJIT_GPU_SKIP_PYTHON:-0}" != 1 ]] && python3 -c "import torch, nanobind, scikit_build_core" 2>/dev/null && [[ -f pyproject.toml ]]; then
  log "## Python"
  # The image's default CXX links libstdc++ statically; an extension built so
  # crashes next to numpy's libstdc++, so the package is built with the
  # system compiler.
  CXX=/usr/bin/g++ python3 -m pip install --no-build-isolation --no-deps --no-index -q . >"$OUT/pip.log" 2>&1 ||
    { log "pip install failed"; tail -30 "$OUT/pip.log"; }
  (cd /tmp && python3 -m pytest -q -rs "$root/tests/python" >"$OUT/pytest.log" 2>&1)
  log "pytest: $(tail -1 "$OUT/pytest.log")"
  grep -E "^FAILED|^SKIPPED|Error" "$OUT/pytest.log" | head -20 | tee -a "$summary"
  # The code blocks of README.md and docs/*.md, those that need torch or a
  # GPU included (they skip elsewhere: tests/docs/doc_fixtures.py).
  log "## The documentation's Python blocks (pytest-markdown-docs, GPU blocks included)"
  if python3 -c "import pytest_markdown_docs" 2>/dev/null; then
    (cd /tmp && PYTHONPATH="$root/tests/docs" python3 -m pytest -p no:cacheprovider -p doc_fixtures \
      --markdown-docs --markdown-docs-syntax=superfences -rs "$root/README.md" "$root/docs" \
      >"$OUT/pytest_docs.log" 2>&1)
    log "pytest docs: $(tail -1 "$OUT/pytest_docs.log")"
    grep -E "^FAILED|^ERROR|SKIPPED" "$OUT/pytest_docs.log" | head -20 | tee -a "$summary"
  else
    log "skipped: pytest-markdown-docs is not installed"
  fi
  log "## Python call overhead (torch tensors)"
  (cd /tmp && python3 "$root/bench/bench_python_cuda.py" --cpp-bench "$root/build-gpu/bench/bench_cuda_call" 2>&1 | tee -a "$summary")
  log "## Example kernels against torch"
  (cd /tmp && python3 "$root/bench/bench_examples_torch.py" 2>&1 | tee -a "$summary")
  log "## The tile programs on the GPU (tests/python/test_tile_cuda.py -v)"
  (cd /tmp && python3 -m pytest -v -rs -p no:cacheprovider "$root/tests/python/test_tile_cuda.py" \
    >"$OUT/pytest_tile_cuda.log" 2>&1)
  log "pytest test_tile_cuda.py: $(tail -1 "$OUT/pytest_tile_cuda.log")"
  grep -E "^FAILED|^ERROR|SKIPPED" "$OUT/pytest_tile_cuda.log" | head -40 | tee -a "$summary"
  # The generator's features that are on for CUDA (tests/difftest/features.py);
  # every failing program, minimised, lands in $OUT/difftest_cases as a
  # regression case to commit under tests/difftest/regressions/.
  log "## Random tile programs against the numpy interpreter (python3 -m difftest --target cuda)"
  (cd "$root/tests" && python3 -m difftest --target cuda --seconds "${TILEJIT_DIFFTEST_SECONDS:-180}" \
    --timeout 60 --minimise-seconds 60 --corpus "$OUT/difftest_cases" >"$OUT/difftest_cuda.log" 2>&1)
  log "difftest: $(grep -E '^[0-9]+ programs in' "$OUT/difftest_cuda.log")"
  grep -E "^  failed" "$OUT/difftest_cuda.log" | head -20 | tee -a "$summary"
  # Optional: a failure is logged and the script goes on.
  log "## The tile programs against torch (bench/bench_tile_cuda.sh)"
  if ! (cd /tmp && bash "$root/bench/bench_tile_cuda.sh" 2>"$OUT/bench_tile_cuda.err" |
        tee "$OUT/bench_tile_cuda.md" | tee -a "$summary"); then
    log "bench_tile_cuda failed (stderr: $OUT/bench_tile_cuda.err)"
    tail -20 "$OUT/bench_tile_cuda.err" | tee -a "$summary"
  fi
  log "## Where the tile GEMM's time goes (bench/bench_tile_stages.py)"
  if ! (cd /tmp && python3 "$root/bench/bench_tile_stages.py" --sources "$OUT/stage_sources" \
        2>"$OUT/bench_tile_stages.err" | tee "$OUT/bench_tile_stages.md" | tee -a "$summary"); then
    log "bench_tile_stages failed"
    tail -20 "$OUT/bench_tile_stages.err" | tee -a "$summary"
  fi
  log "## A kernel as a torch operator (bench/bench_torch_op.py)"
  if ! (cd /tmp && python3 "$root/bench/bench_torch_op.py" 2>"$OUT/bench_torch_op.err" |
        tee -a "$summary"); then
    log "bench_torch_op failed (stderr: $OUT/bench_torch_op.err)"
    tail -20 "$OUT/bench_torch_op.err" | tee -a "$summary"
  fi
fi

#!/usr/bin/env bash
# The C++ tests under sanitizers, as CI runs them (issue 5):
#  1. AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer, which
#     ASan runs at exit on Linux): the library, every test binary and the
#     examples, all of ctest;
#  2. ThreadSanitizer: the library and the test binaries where threads meet
#     (reliability, jit, runtime, backend).
# Kernel bodies are compiled at run time by the host compiler without
# sanitizers; everything of tilejit's own is instrumented.
#
# Build directories: build-asan and build-tsan (TILEJIT_ASAN_BUILD_DIR,
# TILEJIT_TSAN_BUILD_DIR override them). TILEJIT_SANITIZERS=asan or tsan runs
# one half only.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
asan_dir=${TILEJIT_ASAN_BUILD_DIR:-build-asan}
tsan_dir=${TILEJIT_TSAN_BUILD_DIR:-build-tsan}
which=${TILEJIT_SANITIZERS:-asan tsan}

# The sanitizer runtimes come with GCC; GoogleTest and CMake as for the
# normal build.
source scripts/apt_ensure.sh  # the script runs from the repository root
apt_ensure g++ cmake make libgtest-dev libasan8 libubsan1 libtsan2

# -O1 -g: readable reports at a fraction of the compile time of -O2.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
        -DTILEJIT_BUILD_TESTS=ON -DTILEJIT_BUILD_PYTHON=OFF -DTILEJIT_BUILD_BENCH=OFF)

SECONDS=0
if [[ " $which " == *" asan "* ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer: build ($asan_dir)"
  cmake -S . -B "$asan_dir" "${common[@]}" -DTILEJIT_SANITIZE=address,undefined >/dev/null
  cmake --build "$asan_dir" -j"$jobs"
  echo "== ASan/UBSan/LSan: ctest (built in $SECONDS s)"
  # Sizes that no allocator can serve must come back as nullptr (the pool
  # then raises OutOfMemoryError), not abort the process.
  # intercept_tls_get_addr=0: LSan's record of dynamic TLS (__tls_get_addr)
  # took a bogus range from the TLS of the NVRTC library that the CUDA
  # backend dlopens ("DTLS 6 at 0x1a71-0x2000002b73"), and its tracer died
  # of SIGSEGV at the leak check of a test that had passed, in some builds
  # and not others (the binary's layout decides). tilejit keeps none of its
  # allocations in the TLS of a dlopened library; static TLS is still scanned.
  asan=(detect_leaks=1 allocator_may_return_null=1 check_initialization_order=1
        strict_init_order=1 intercept_tls_get_addr=0)
  export ASAN_OPTIONS=$(IFS=:; echo "${asan[*]}")
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd "$asan_dir" && ctest --output-on-failure -j"$jobs")
  unset ASAN_OPTIONS UBSAN_OPTIONS
  echo "== ASan/UBSan/LSan done in $SECONDS s"
fi

if [[ " $which " == *" tsan "* ]]; then
  start=$SECONDS
  echo "== ThreadSanitizer: build ($tsan_dir)"
  cmake -S . -B "$tsan_dir" "${common[@]}" -DTILEJIT_SANITIZE=thread \
    -DTILEJIT_BUILD_EXAMPLES=OFF >/dev/null
  targets=()
  for layer in reliability jit runtime backend; do
    [[ -d tests/cpp/$layer ]] && targets+=("tilejit_test_$layer")
  done
  cmake --build "$tsan_dir" -j"$jobs" --target "${targets[@]}"
  echo "== TSan: ctest over ${targets[*]} (built in $((SECONDS - start)) s)"
  # As for ASan: sizes no allocator can serve come back as nullptr.
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1
  # The layers not built here register placeholder tests named *_NOT_BUILT;
  # the export.* tests (tests/c) run programs this build does not make, and
  # their libraries and C consumer are not instrumented anyway.
  (cd "$tsan_dir" && ctest --output-on-failure -j"$jobs" -E '_NOT_BUILT$|^export\.')
  unset TSAN_OPTIONS
  echo "== TSan done in $((SECONDS - start)) s"
fi
echo "== sanitizers: all passed in $SECONDS s"

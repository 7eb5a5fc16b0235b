#!/usr/bin/env bash
# The test suite, as CI runs it: installs what it needs, builds tilejit with
# its tests and examples, runs them with ctest, checks that an installed
# tilejit is found by a separate project through find_package, runs the
# Python tests, and checks the documentation (the site builds, every code
# block runs or compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)

bash scripts/install_deps.sh

echo "== build (Release) and ctest"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

echo "== install, then a consumer project with find_package(tilejit)"
prefix="$root/build/install"
rm -rf "$prefix" build/consumer
cmake --install build --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build/consumer -j"$jobs"
TILEJIT_CACHE_DIR="$root/build/kernel_cache" ./build/consumer/consumer

echo "== Python package and pytest (the differential tester's random programs for 60 s)"
TILEJIT_DIFFTEST_SECONDS="${TILEJIT_DIFFTEST_SECONDS:-60}" bash scripts/test_python.sh

echo "== documentation: mkdocs build --strict, and every code block of README.md and docs/"
bash scripts/test_docs.sh

echo "== sanitizers: ASan + UBSan + LSan (all C++ tests), TSan (threaded suites)"
bash scripts/test_sanitizers.sh

echo "== fuzzing: declarations, legalisation and binding, 60 s from the committed corpus"
bash scripts/fuzz.sh 60

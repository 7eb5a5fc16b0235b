#!/usr/bin/env bash
# The demo: builds tilejit and runs the seed's sparse attention forward,
# written in the tile language, on the CPU, with its output and four workspaces
# allocated by the framework, checked against a plain reference; then a small
# flash-decoding whose partials are compiler-made workspaces; then, from
# Python, the seed's TileLang-Ascend sparse flash attention emulated on the
# CPU (examples/ascend/sparse_flash_attention.py), its five workspaces the
# framework's, checked against numpy. Exits non-zero if any step mismatches.
#
#   bash scripts/demo.sh            # --quick: smaller problems, as the tests run them
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target demo
bash scripts/build_python.sh  # the package, into build-py/site
status=0
./build/examples/demo "$@" || status=1
echo
PYTHONPATH="$(pwd)/build-py/site" "${PYTHON:-python3}" examples/ascend/sparse_flash_attention.py "$@" ||
  status=1
exit "$status"

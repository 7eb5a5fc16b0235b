#!/usr/bin/env bash
# The demo: builds tilejit and runs the seed's sparse attention forward,
# written in the tile language, on the CPU, with its output and four workspaces
# allocated by the framework, checked against a plain reference; then a small
# flash-decoding whose partials are compiler-made workspaces.
set -euo pipefail
cd "$(dirname "$0")/.."
TILEJIT_SKIP_PIP=1 bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target demo
./build/examples/demo "$@"

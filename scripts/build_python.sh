#!/usr/bin/env bash
# Builds the Python package (the whole C++ library and the extension,
# through pip and scikit-build-core) into build-py/site without touching
# the Python environment; scripts/test_python.sh and scripts/demo.sh run
# tilejit from there (PYTHONPATH=build-py/site). Quiet unless it fails.
#
#   bash scripts/build_python.sh
#   PYTHON=/path/to/python bash scripts/build_python.sh   # another interpreter
#
# Needs: python3 with pip, nanobind, scikit-build-core, numpy
# (scripts/install_deps.sh). The build directory build-py/wheel is kept, so
# a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
site="$root/build-py/site"
python="${PYTHON:-python3}"

# Ninja builds in parallel by itself; make (scikit-build-core's fallback
# when ninja is missing) needs telling.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

mkdir -p build-py
log="$root/build-py/pip-install.log"
if ! "$python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    --upgrade --target "$site" -C build-dir="$root/build-py/wheel" . >"$log" 2>&1; then
  cat "$log" >&2
  echo "building the Python package failed (log: $log)" >&2
  exit 1
fi
grep -v -e "as the 'root' user" -e "^WARNING: Target directory" "$log" || true

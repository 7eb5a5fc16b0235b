#!/usr/bin/env bash
# The Python tests: builds the package (the whole C++ library and the
# extension, through pip and scikit-build-core) into build-py/site without
# touching the Python environment, then runs pytest on tests/python with it.
#
#   bash scripts/test_python.sh            # extra arguments go to pytest
#   PYTHON=/path/to/python bash scripts/test_python.sh   # another interpreter
#
# Needs: python3 with pip, nanobind, scikit-build-core, numpy, pytest
# (scripts/install_deps.sh); ml_dtypes and torch are optional: the tests
# that need them skip without them. The build directory build-py/wheel is
# kept, so a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
site="$root/build-py/site"
python="${PYTHON:-python3}"

# Ninja builds in parallel by itself; make (scikit-build-core's fallback
# when ninja is missing) needs telling.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

echo "== build and install the Python package into $site"
mkdir -p build-py
log="$root/build-py/pip-install.log"
if ! "$python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    --upgrade --target "$site" -C build-dir="$root/build-py/wheel" . >"$log" 2>&1; then
  cat "$log" >&2
  echo "building the Python package failed (log: $log)" >&2
  exit 1
fi
grep -v -e "as the 'root' user" -e "^WARNING: Target directory" "$log" || true

echo "== pytest tests/python"
# -p no:cacheprovider: no .pytest_cache in the tree. The tests' kernel
# cache goes to a temporary directory (tests/python/conftest.py).
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest -p no:cacheprovider -q \
  tests/python "$@"

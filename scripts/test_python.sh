#!/usr/bin/env bash
# The Python tests: builds the package into build-py/site
# (scripts/build_python.sh) without touching the Python environment, then
# runs pytest on tests/python with it.
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

echo "== build and install the Python package into $site"
PYTHON="$python" bash scripts/build_python.sh

echo "== pytest tests/python"
# -p no:cacheprovider: no .pytest_cache in the tree. The tests' kernel
# cache goes to a temporary directory (tests/python/conftest.py).
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest -p no:cacheprovider -q \
  tests/python "$@"

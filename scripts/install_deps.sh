#!/usr/bin/env bash
# Installs what building and testing tilejit needs on a fresh Debian machine:
# the compiler, CMake, GoogleTest, Google Benchmark, Python and its headers
# (apt), and the Python build and test tools (pip). Packages already present
# are left alone.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/apt_ensure.sh"
apt_ensure g++ cmake make libgtest-dev libbenchmark-dev python3 python3-dev python3-pip

if [[ "${TILEJIT_SKIP_PIP:-0}" != 1 ]]; then
  python3 -m pip install -q --disable-pip-version-check \
    "numpy>=1.24" "pytest>=7" "nanobind>=2.0" "scikit-build-core>=0.10" "ml_dtypes>=0.2" ninja 2>&1 | grep -v "as the 'root' user" || true
fi

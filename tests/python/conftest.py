"""Shared set-up of the Python tests.

The disk cache of compiled kernels goes to a temporary directory, set
before tilejit is imported anywhere (the C++ runtime reads
TILEJIT_CACHE_DIR when the cache is first used), so the tests neither read
nor fill the user's ~/.cache/tilejit. Helpers live in support.py.
"""

import os
import shutil
import tempfile

_cache_dir = tempfile.mkdtemp(prefix="tilejit-pytest-cache-")
os.environ["TILEJIT_CACHE_DIR"] = _cache_dir


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_cache_dir, ignore_errors=True)

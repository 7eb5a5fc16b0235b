"""Fixtures for the code blocks of README.md and docs/*.md, which
pytest-markdown-docs runs (scripts/test_docs.sh loads this module with
`-p doc_fixtures`).

A block whose fence says `python fixture:cuda` needs torch with a CUDA
device and tilejit's cuda target; `python fixture:torch` needs torch. Each
skips, with the reason, where that is missing, so the blocks run in CI on a
machine with no GPU and all of them run on a GPU machine
(scripts/gpu_run.sh). The blocks compile kernels into a temporary cache
directory, never the user's."""

import os
import shutil
import tempfile

import pytest

_cache_dir = tempfile.mkdtemp(prefix="tilejit-docs-cache-")
os.environ["TILEJIT_CACHE_DIR"] = _cache_dir


def pytest_unconfigure(config):
    shutil.rmtree(_cache_dir, ignore_errors=True)


def _torch_or_skip():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    return torch


@pytest.fixture
def torch():
    return _torch_or_skip()


@pytest.fixture
def cuda():
    torch = _torch_or_skip()
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    import tilejit
    if "cuda" not in tilejit._C.registered_targets():
        pytest.skip("tilejit was built without its CUDA backend")
    if not tilejit._C.target_available("cuda"):
        pytest.skip("tilejit's cuda target is not available")
    return torch

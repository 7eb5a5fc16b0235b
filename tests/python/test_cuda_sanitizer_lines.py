"""compute-sanitizer names the author's line (Note [Line directives]): the
generated CUDA carries #line directives to the Python lines, and NVRTC
compiles it with -lineinfo, so a memcheck report of an out-of-bounds read
points at the statement in the tile program that made it (a read past a
shared tile, through an index the program loads: nothing can prove it in
bounds, so nothing guards it). Runs where a GPU
and compute-sanitizer are (scripts/gpu_run.sh); skipped elsewhere."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "sanitizer_oob_program.py")


def _gpu():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None or not _gpu(),
                    reason="needs a GPU and compute-sanitizer")
def test_memcheck_names_the_line_of_the_out_of_bounds_read(tmp_path):
    with open(PROGRAM) as f:
        line = next(i for i, text in enumerate(f, 1) if "the out-of-bounds read" in text)
    env = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path))
    run = subprocess.run(["compute-sanitizer", "--tool", "memcheck", "--print-limit", "4",
                          sys.executable, PROGRAM], capture_output=True, text=True, env=env,
                         timeout=300)
    report = run.stdout + run.stderr
    assert "Invalid __shared__ read" in report, report[-3000:]
    assert f"sanitizer_oob_program.py:{line}" in report, report[-3000:]

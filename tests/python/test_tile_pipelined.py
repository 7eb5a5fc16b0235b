"""A T.Pipelined copy whose rows an index tensor names, through a value the
loop computes (Note [Prefetched addresses] in src/backend/cuda/pipeline.h):

    blk[0] = Idx[bx, k]
    T.copy(A[blk[0] * 64, 0], A_s)

On the CPU the loop is a plain loop: its result, checked here against numpy,
is the reference test_tile_cuda.py checks the CUDA kernels against. The CUDA
prefetch recomputes a value stored at the loop's top level (a T.alloc_local,
a T.alloc_var, a let); any other (here, a store under an `if`) leaves the
copy synchronous and raises tilejit.PerformanceWarning at the copy's line
when the kernel compiles. Those tests need tilejit's cuda target: a GPU, or
the null driver (bench/null_driver) first on LD_LIBRARY_PATH.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import tilejit_cuda_unavailable

BLOCK, STEPS = 64, 8
FORMS = ["local", "var", "let", "conditional"]


def gather_rows(form, num_stages=3):
    """Out[b * 64 + r, c] = sum over k of A[Idx[b, k] * 64 + r, c]; the row
    reaches the copy as `form` says."""
    n, m = T.symbolic("n"), T.symbolic("m")

    @T.prim_func
    def main(A: T.Tensor((n, BLOCK), "float32"), Idx: T.Tensor((m, STEPS), "int32"),
             Out: T.Tensor((m * BLOCK, BLOCK), "float32")):
        with T.Kernel(m, threads=128) as bx:
            A_s = T.alloc_shared((BLOCK, BLOCK), "float32")
            acc = T.alloc_fragment((BLOCK, BLOCK), "float32")
            blk = T.alloc_local((1,), "int32")
            var = T.alloc_var("int32")
            T.clear(acc)
            for k in T.Pipelined(STEPS, num_stages=num_stages):
                if form == "local":
                    blk[0] = Idx[bx, k]
                    T.copy(A[blk[0] * BLOCK, 0], A_s)
                elif form == "var":
                    var = Idx[bx, k]
                    T.copy(A[var * BLOCK, 0], A_s)
                elif form == "let":
                    row = Idx[bx, k] * BLOCK
                    T.copy(A[row, 0], A_s)
                else:
                    if Idx[bx, k] >= 0:
                        blk[0] = Idx[bx, k]
                    T.copy(A[blk[0] * BLOCK, 0], A_s)  # the copy left synchronous
                for i, j in T.Parallel(BLOCK, BLOCK):
                    acc[i, j] += A_s[i, j]
            T.copy(acc, Out[bx * BLOCK, 0])

    return main


gather_rows_cpu = tilejit.jit(gather_rows, out_idx=[2], target="cpu")


def inputs(blocks=10, m=3, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((blocks * BLOCK, BLOCK)).astype(np.float32)
    idx = rng.integers(0, blocks, size=(m, STEPS)).astype(np.int32)
    return a, idx


def reference(a, idx):
    out = np.zeros((idx.shape[0] * BLOCK, BLOCK))
    for b in range(idx.shape[0]):
        for k in range(STEPS):
            r = int(idx[b, k]) * BLOCK
            out[b * BLOCK:(b + 1) * BLOCK] += a[r:r + BLOCK]
    return out


def where(line):
    """"file:line:col" of the statement at `line` of this file."""
    text = Path(__file__).read_text().splitlines()[line - 1]
    return f"{__file__}:{line}:{len(text) - len(text.lstrip()) + 1}"


def copy_line():
    """The line of the copy the CUDA lowering leaves synchronous (the store
    of blk[0] is the line before)."""
    lines = Path(__file__).read_text().splitlines()
    return 1 + next(i for i, text in enumerate(lines) if "# the copy left synchronous" in text)


@pytest.mark.parametrize("form", FORMS)
def test_the_cpu_runs_the_loop_in_order(form):
    a, idx = inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", tilejit.PerformanceWarning)
        kernel = gather_rows_cpu(form)
    assert kernel.diagnostics == []
    out = kernel(a, idx)
    np.testing.assert_allclose(out, reference(a, idx), rtol=1e-5, atol=1e-4)


needs_cuda_target = pytest.mark.skipif(bool(tilejit_cuda_unavailable()),
                                       reason=tilejit_cuda_unavailable() or "available")


@needs_cuda_target
@pytest.mark.parametrize("form", ["local", "var", "let"])
def test_cuda_prefetches_a_row_the_loop_computes(form):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tilejit.PerformanceWarning)
        kernel = tilejit.compile(gather_rows(form), out_idx=[2], target="cuda")
    assert kernel.diagnostics == []
    assert "k_ahead" in kernel.source  # the prefetch recomputes the row for its iteration


@needs_cuda_target
def test_cuda_warns_at_the_line_of_a_copy_it_cannot_prefetch():
    line = copy_line()
    with pytest.warns(tilejit.PerformanceWarning) as record:
        kernel = tilejit.compile(gather_rows("conditional"), out_idx=[2], target="cuda")
    assert len(record) == 1
    w = record[0]
    assert type(w.message) is tilejit.PerformanceWarning
    assert issubclass(tilejit.PerformanceWarning, UserWarning)
    assert (w.filename, w.lineno) == (__file__, line)
    text = str(w.message)
    assert text == (
        f"{where(line)}: T.copy: not pipelined, copied synchronously in each iteration: its "
        f"source address reads 'blk', which the loop writes at {where(line - 1)} in a way the "
        "prefetch cannot recompute for a later iteration (it can recompute a let or a store to "
        "a local buffer at the loop's top level before the copy)")
    [d] = kernel.diagnostics
    assert (d["op"], d["file"], d["line"]) == ("T.copy", __file__, line)
    assert d["path"] == "not pipelined, copied synchronously in each iteration"
    assert d["message"] == text
    assert "k_ahead" not in kernel.source


@needs_cuda_target
def test_a_warning_filter_can_make_it_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tilejit.PerformanceWarning)
        with pytest.raises(tilejit.PerformanceWarning, match="not pipelined"):
            tilejit.compile(gather_rows("conditional"), out_idx=[2], target="cuda")

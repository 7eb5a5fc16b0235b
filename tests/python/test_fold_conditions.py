"""Conditions the loops' ranges decide are folded away before lowering
(Note [Decided conditions] in include/tilejit/transform/fold_conditions.h):
a key mask of a sequence that is a whole number of blocks costs nothing per
element, and one that is not keeps its compare. The results are the
program's on every target."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()


def masked_rows(n, block=64, rows=16):
    """out[r, c] = x[r, c] where c < n, else -1; n columns in blocks of
    `block`, each block's mask a T.if_then_else on k * block + j >= n."""

    @T.prim_func
    def masked(X: T.Tensor((rows, T.ceildiv(n, block) * block), "float32"),
               Out: T.Tensor((rows, T.ceildiv(n, block) * block), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((rows, block), "float32")
            for k in T.serial(T.ceildiv(n, block)):
                for i, j in T.Parallel(rows, block):
                    f[i, j] = T.if_then_else(k * block + j >= n, -1.0, X[i, k * block + j])
                T.copy(f, Out[0, k * block])
    return masked


def thread_branch(threads=128):
    """An if on the thread index that every thread of the block takes."""

    @T.prim_func
    def branch(X: T.Tensor((threads,), "float32"), Out: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            if tx < threads:
                Out[tx] = X[tx] + 1.0
            else:
                Out[tx] = 0.0
    return branch


@on_targets
@pytest.mark.parametrize("n", [256, 200])
def test_a_decided_mask_computes_the_program(target, n):
    cols = (n + 63) // 64 * 64
    x = np.random.default_rng(n).standard_normal((16, cols)).astype(np.float32)
    kernel = tilejit.compile(masked_rows(n), out_idx=[1], target=target)
    out = as_numpy(kernel(to_target(target, x)))
    ref = np.where(np.arange(cols)[None, :] >= n, -1.0, x)
    np.testing.assert_array_equal(out, ref)


@on_targets
def test_a_branch_every_thread_takes_computes_the_program(target):
    x = np.arange(128, dtype=np.float32)
    kernel = tilejit.compile(thread_branch(), out_idx=[1], target=target)
    np.testing.assert_array_equal(as_numpy(kernel(to_target(target, x))), x + 1)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_only_an_undecided_mask_is_computed_per_element():
    whole = tilejit.compile(masked_rows(256), out_idx=[1], target="cuda").get_kernel_source()
    part = tilejit.compile(masked_rows(200), out_idx=[1], target="cuda").get_kernel_source()
    # k in [0, 4), j in [0, 64): k * 64 + j < 256 everywhere.
    assert ">= 256)" not in whole and "(-1.0f)" not in whole, whole
    assert ">= 200)" in part and "(-1.0f)" in part, part
    branch = tilejit.compile(thread_branch(), out_idx=[1], target="cuda").get_kernel_source()
    assert "< 128)" not in branch and "0.0f;" not in branch.split("tilejit_kernel(")[1], branch

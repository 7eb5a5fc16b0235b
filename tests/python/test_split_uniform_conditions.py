"""A T.Parallel nest whose select a block decides as a whole runs without it
where it does (Note [Conditions decided per block] in
include/tilejit/transform/split_uniform_conditions.h): a causal mask costs
nothing on the key blocks before the diagonal, a key mask nothing but in the
last block. The results are the program's on every target."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()


def causal_scores(n, block=32):
    """Out[r, c] = X[r, c] where r >= c, else -1: block rows bx, key blocks
    k, each block's mask bx * block + i >= k * block + j."""

    @T.prim_func
    def causal(X: T.Tensor((n, n), "float32"), Out: T.Tensor((n, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            s = T.alloc_fragment((block, block), "float32")
            for k in T.serial(T.ceildiv(n, block)):
                for i, j in T.Parallel(block, block):
                    s[i, j] = T.if_then_else(bx * block + i >= k * block + j,
                                             X[bx * block + i, k * block + j], -1.0)
                T.copy(s, Out[bx * block, k * block])
    return causal


def key_mask(n, block=64, rows=16):
    """Out[r, c] = X[r, c] where c < n, else -1 (the mask reads: past n)."""

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


def data_mask(rows=16, cols=64):
    """A condition on the data: never decided per block."""

    @T.prim_func
    def by_value(X: T.Tensor((rows, cols), "float32"), Out: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((rows, cols), "float32")
            for i, j in T.Parallel(rows, cols):
                f[i, j] = T.if_then_else(X[i, j] >= 0.0, X[i, j], 0.0)
            T.copy(f, Out)
    return by_value


@on_targets
@pytest.mark.parametrize("n", [128, 96])
def test_a_causal_mask_computes_the_program(target, n):
    x = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
    kernel = tilejit.compile(causal_scores(n), out_idx=[1], target=target)
    out = as_numpy(kernel(to_target(target, x)))
    r, c = np.indices((n, n))
    np.testing.assert_array_equal(out, np.where(r >= c, x, -1.0))


@on_targets
@pytest.mark.parametrize("n", [256, 200, 130])
def test_a_key_mask_computes_the_program(target, n):
    cols = (n + 63) // 64 * 64
    x = np.random.default_rng(n).standard_normal((16, cols)).astype(np.float32)
    kernel = tilejit.compile(key_mask(n), out_idx=[1], target=target)
    out = as_numpy(kernel(to_target(target, x)))
    np.testing.assert_array_equal(out, np.where(np.arange(cols)[None, :] >= n, -1.0, x))


@on_targets
def test_a_condition_on_the_data_computes_the_program(target):
    x = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    kernel = tilejit.compile(data_mask(), out_idx=[1], target=target)
    np.testing.assert_array_equal(as_numpy(kernel(to_target(target, x))), np.maximum(x, 0.0))


def test_the_cpu_runs_each_block_s_decided_nests_without_the_mask():
    src = tilejit.compile(causal_scores(128), out_idx=[1], target="cpu").get_kernel_source()
    # (bx - k) * 32 - 31 >= 0: every key block before the diagonal; after it,
    # (bx - k) * 32 + 31 < 0: none; the diagonal's block compares per element.
    assert "* 32) + (static_cast<int64_t>(k) * (-32))) + (-31)) >= 0)" in src, src
    assert "+ 31) < 0)" in src, src
    assert src.count(">= ((k * 32) + j)") == 1, src
    by_value = tilejit.compile(data_mask(), out_idx=[1], target="cpu").get_kernel_source()
    assert "static_cast<int64_t>" not in by_value, by_value


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_cuda_fills_the_decided_blocks():
    src = tilejit.compile(causal_scores(128), out_idx=[1], target="cuda").get_kernel_source()
    assert "+ (-31)) >= 0)) {" in src, src
    assert src.count(">= ((k * 32) + j") == 1, src

"""Fragments that no T.gemm touches, as the CUDA lowering spreads them over
the block's threads in registers (Note [Partitioned fragments] in
src/backend/cuda/fragments.h): row reductions whose rows span several warps,
part of a warp or one warp, 16-bit tiles reduced as they are, reductions
into shared memory, a row loop that stores to global memory (one thread of
each row stores), and tiles at a tensor's edge. Each program runs on the
CPU target and, where a GPU is, on CUDA, against numpy."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, to_target
from test_tile_kernels import needs_tile_cpu


def _rand(shape, dtype="float32", seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def softmax(m, n, block_m, dtype, threads=128):
    """TileLang's softmax: the input tile reduced as it is (16-bit or not),
    the exponentials in a float tile."""
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=threads) as bx:
            x = T.alloc_fragment((block_m, n), dtype)
            e = T.alloc_fragment((block_m, n), "float32")
            mx = T.alloc_fragment((block_m,), "float32")
            sm = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(block_m, n):
                e[i, j] = T.exp(T.cast(x[i, j], "float32") - mx[i])
            T.reduce_sum(e, sm, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = e[i, j] / sm[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m, dtype", [
    (5, 8192, 1, "float16"),    # a row over 128 threads: four warps meet in shared memory
    (13, 256, 4, "float32"),    # 32 threads a row (one warp); the last tile has one row
    (64, 64, 64, "float16"),    # 8 threads a row, 4 rows each
])
def test_softmax(target, m, n, block_m, dtype):
    k = tilejit.compile(softmax(m, n, block_m, dtype), out_idx=[1], target=target)
    x = _rand((m, n), dtype, seed=n, scale=4)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    tol = 2e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(as_numpy(k(to_target(target, x))).astype(np.float64),
                               e / e.sum(axis=1, keepdims=True), rtol=tol, atol=tol * 1e-2)


def layer_norm(m, n, block_m, eps=1e-5):
    """Mean and 1 / std per row, stored to global memory from a loop over
    the rows (guarded at the tensor's edge), and the normalised rows."""
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32"),
             Mean: T.Tensor((m,), "float32"), Rstd: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            sq = T.alloc_fragment((block_m, n), "float32")
            s = T.alloc_fragment((block_m,), "float32")
            ss = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            for i, j in T.Parallel(block_m, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(x, s, dim=1)
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_m):
                s[i] = s[i] / n
                ss[i] = T.rsqrt(ss[i] / n - s[i] * s[i] + eps)
                if bx * block_m + i < m:
                    Mean[bx * block_m + i] = s[i]
                    Rstd[bx * block_m + i] = ss[i]
            for i, j in T.Parallel(block_m, n):
                x[i, j] = (x[i, j] - s[i]) * ss[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m", [(7, 1024, 2), (8, 512, 4)])
def test_layer_norm_stores_row_statistics_once(target, m, n, block_m):
    k = tilejit.compile(layer_norm(m, n, block_m), out_idx=[1, 2, 3], target=target)
    x = _rand((m, n), seed=m, scale=2) + 1
    y, mean, rstd = (as_numpy(v) for v in k(to_target(target, x)))
    xf = x.astype(np.float64)
    mu = xf.mean(axis=1)
    r = 1 / np.sqrt(xf.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, r, rtol=1e-4)
    np.testing.assert_allclose(y, (xf - mu[:, None]) * r[:, None], rtol=1e-4, atol=1e-4)


def row_stats(m, n, block_m):
    """Row sums and maxima reduced into shared memory (not a register row
    vector), then copied out; the max accumulates over two halves."""
    half = n // 2

    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), S: T.Tensor((m,), "float32"),
             Mx: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            a = T.alloc_fragment((block_m, half), "float16")
            b = T.alloc_fragment((block_m, half), "float16")
            s_sh = T.alloc_shared((block_m,), "float32")
            m_sh = T.alloc_shared((block_m,), "float32")
            T.copy(X[bx * block_m, 0], a)
            T.copy(X[bx * block_m, half], b)
            T.reduce_sum(a, s_sh, dim=1)
            T.reduce_sum(b, s_sh, dim=1, clear=False)
            T.reduce_max(a, m_sh, dim=1)
            T.reduce_max(b, m_sh, dim=1, clear=False)
            T.copy(s_sh, S[bx * block_m])
            T.copy(m_sh, Mx[bx * block_m])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m", [(6, 2048, 2), (64, 128, 16)])
def test_row_reductions_into_shared_memory(target, m, n, block_m):
    k = tilejit.compile(row_stats(m, n, block_m), out_idx=[1, 2], target=target)
    x = _rand((m, n), "float16", seed=n)
    s, mx = (as_numpy(v) for v in k(to_target(target, x)))
    xf = x.astype(np.float64)
    np.testing.assert_allclose(s, xf.sum(axis=1), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(mx, xf.max(axis=1).astype(np.float32))


def reducer_rows(m, n, block_m, op):
    """A T.alloc_reducer folded over a tile in registers: each row's
    elements are spread over its threads, so the fold is an atomic (Note
    [Reductions in a T.Parallel nest]), not each thread's own."""
    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), R: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float16")
            r = T.alloc_reducer((block_m,), "float32", op=op, replication="all")
            T.copy(X[bx * block_m, 0], x)
            T.fill(r, -T.infinity("float32") if op == "max" else 0.0)
            for i, j in T.Parallel(block_m, n):
                if op == "max":
                    r[i] = T.max(r[i], T.cast(x[i, j], "float32"))
                else:
                    r[i] += T.cast(x[i, j], "float32")
            T.finalize_reducer(r)
            for i in T.Parallel(block_m):
                if bx * block_m + i < m:
                    R[bx * block_m + i] = r[i]
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("op", ["max", "sum"])
@pytest.mark.parametrize("m, n, block_m", [(45, 128, 16), (3, 1024, 1)])
def test_a_reducer_over_a_register_tile(target, op, m, n, block_m):
    k = tilejit.compile(reducer_rows(m, n, block_m, op), out_idx=[1], target=target)
    x = _rand((m, n), "float16", seed=m)
    got = as_numpy(k(to_target(target, x)))
    xf = x.astype(np.float64)
    if op == "max":
        np.testing.assert_array_equal(got, xf.max(axis=1).astype(np.float32))
    else:
        np.testing.assert_allclose(got, xf.sum(axis=1), rtol=1e-4, atol=1e-3)


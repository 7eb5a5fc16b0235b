"""Runs of consecutive elements that a thread moves as vectors (Note
[Vectorised runs] in src/backend/cuda/vector_runs.h): a partitioned tile's
register loop that reads and writes shared tiles and tensors, a read-modify-
write of a shared tile, T.vectorized loops at aligned and unaligned offsets
(the alignment is checked where the kernel runs), and TileLang's split-K
GEMV. Each program runs on the CPU target and, where a GPU is, on CUDA,
against numpy: staging reads before the lanes and writes after them must
change no value."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, to_target
from test_tile_kernels import needs_tile_cpu


def _rand(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def scale_rows(m, n, dtype, threads=128):
    """x * w + x, through a fragment, the result written back over the
    shared input tile and then to Y (read-modify-write of one element)."""
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), W: T.Tensor((n,), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(1, threads=threads) as _:
            xs = T.alloc_shared((m, n), dtype)
            ws = T.alloc_shared((n,), dtype)
            f = T.alloc_fragment((m, n), "float32")
            T.copy(X, xs)
            T.copy(W, ws)
            for i, j in T.Parallel(m, n):
                f[i, j] = T.cast(xs[i, j], "float32") * T.cast(ws[j], "float32")
            for i, j in T.Parallel(m, n):
                xs[i, j] = T.cast(f[i, j] + T.cast(xs[i, j], "float32"), dtype)
            T.copy(xs, Y)
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, dtype", [
    (4, 1024, "float16"),   # runs of 8 halves: one 16-byte vector
    (8, 256, "float32"),    # runs of 8 floats: two
    (16, 64, "bfloat16"),
])
def test_partitioned_loop_reads_and_writes_shared_runs(target, m, n, dtype):
    k = tilejit.compile(scale_rows(m, n, dtype), out_idx=[2], target=target)
    x, w = _rand((m, n), dtype, 1), _rand((n,), dtype, 2)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    want = (xf * wf + xf).astype(dtype).astype(np.float32)
    got = as_numpy(k(to_target(target, x), to_target(target, w))).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def shifted_copy(n, offset, dtype, vec=8, threads=32):
    """Each thread copies `vec` elements starting at offset + t * vec through
    a local array in T.vectorized loops: with offset % vec != 0 the runs are
    not aligned and move element by element."""
    @T.prim_func
    def main(A: T.Tensor((n + offset,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(n // (vec * threads), threads=threads) as bx:
            t = T.get_thread_binding(0)
            r = T.alloc_local((vec,), dtype)
            for k in T.vectorized(vec):
                r[k] = A[offset + (bx * threads + t) * vec + k]
            for k in T.vectorized(vec):
                B[(bx * threads + t) * vec + k] = r[k] * 2
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("offset", [0, 1, 2, 4])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_vectorized_loop_at_any_alignment(target, offset, dtype):
    n = 2048
    k = tilejit.compile(shifted_copy(n, offset, dtype), out_idx=[1], target=target)
    a = _rand((n + offset,), dtype, 3)
    got = as_numpy(k(to_target(target, a)))
    np.testing.assert_array_equal(got, (a[offset:].astype(np.float32) * 2).astype(dtype))


def gemv_splitk(n, kk, block_n=32, reduce_threads=32, tile_k=8, dtype="float16"):
    """TileLang's split-K GEMV (examples/gemv): threads (block_n,
    reduce_threads), each reading tile_k elements of A and of a row of B
    in T.vectorized loops, the partial dot products added into a shared
    row sum."""
    block_k = reduce_threads * tile_k

    @T.prim_func
    def main(A: T.Tensor((kk,), dtype), B: T.Tensor((n, kk), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block_n), threads=(block_n, reduce_threads)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            a = T.alloc_local((tile_k,), dtype)
            b = T.alloc_local((tile_k,), dtype)
            c_shared = T.alloc_shared((block_n,), "float32")
            acc = T.alloc_local((1,), "float32")
            if tk == 0:
                c_shared[tn] = 0
            T.clear(acc)
            for bk in T.serial(T.ceildiv(kk, block_k)):
                for k in T.vectorized(tile_k):
                    a[k] = A[bk * block_k + tk * tile_k + k]
                    b[k] = B[bn * block_n + tn, bk * block_k + tk * tile_k + k]
                for k in T.serial(tile_k):
                    acc[0] += a[k].astype("float32") * b[k].astype("float32")
            T.atomic_add(c_shared[tn], acc[0])
            C[bn * block_n + tn] = c_shared[tn]
    return main


@needs_tile_cpu
@on_targets
def test_gemv_splitk(target):
    n, kk = 64, 512
    k = tilejit.compile(gemv_splitk(n, kk), out_idx=[2], target=target)
    a, b = _rand((kk,), "float16", 4), _rand((n, kk), "float16", 5)
    want = b.astype(np.float32) @ a.astype(np.float32)
    got = as_numpy(k(to_target(target, a), to_target(target, b))).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=5e-2)

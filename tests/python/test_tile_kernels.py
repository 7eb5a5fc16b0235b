"""Tile-language kernels end to end on the CPU: the Python front end, the C++
builder, the verifier and the CPU lowering, checked against numpy."""

import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import raises_exact
from test_tile_frontend import readme_matmul

def _why_tile_bodies_cannot_run():
    """Why this build cannot run a tile body on the CPU, or "" when it can."""
    if not hasattr(tilejit._C, "TileBuilder"):
        return "this build has no tile builder"

    @T.prim_func
    def probe(A: T.Tensor((4,), "float32")):
        with T.Kernel(1):
            A[0] = 1

    try:
        tilejit.compile(probe, target="cpu")
    except ValueError as e:
        if "does not compile tile-IR bodies" in str(e):
            return str(e)
    return ""


_WHY = _why_tile_bodies_cannot_run()
needs_tile_cpu = pytest.mark.skipif(bool(_WHY), reason=_WHY)
needs_tile_builder = pytest.mark.skipif(not hasattr(tilejit._C, "TileBuilder"),
                                        reason="this build has no tile builder")


@needs_tile_builder
def test_the_readme_gemm_records_into_the_cpp_builder():
    f = readme_matmul(1024, 512, T.symbolic("K"), 128, 128, 32)
    assert isinstance(f, tilejit.PrimFunc) and f.is_tile
    # As the verifier normalises it: every region a full slice.
    assert f.script().splitlines() == [
        "func matmul_relu_kernel(A: float16[1024, K], B: float16[K, 512], C: float16[1024, 512])",
        "kernel(bx, by in [4, 8], threads tx in [128]):",
        "  alloc A_shared: shared float16[128, 32]",
        "  alloc B_shared: shared float16[32, 128]",
        "  alloc C_local: fragment float32[128, 128]",
        "  fill(C_local[0:128, 0:128], 0.0)",
        "  for ko in pipelined(0, ceildiv(K, 32), stages=3):",
        "    copy(A[by * 128:by * 128 + 128, ko * 32:ko * 32 + 32], A_shared[0:128, 0:32])",
        "    copy(B[ko * 32:ko * 32 + 32, bx * 128:bx * 128 + 128], B_shared[0:32, 0:128])",
        "    gemm(A_shared[0:128, 0:32], B_shared[0:32, 0:128], C_local[0:128, 0:128])",
        "  for i in parallel(0, 128):",
        "    for j in parallel(0, 128):",
        "      C_local[i, j] = max(C_local[i, j], 0.0)",
        "  copy(C_local[0:128, 0:128], C[by * 128:by * 128 + 128, bx * 128:bx * 128 + 128])",
    ]

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


@needs_tile_cpu
def test_tilelang_readme_gemm_runs_unchanged_on_the_cpu():
    # As the README runs it: compile through tilelang.jit, call with A, B, C.
    kernel = tilelang.jit(readme_matmul, target="cpu")(256, 256, 128, 128, 128, 32,
                                                       "float32", "float32")
    a, b = rand(256, 128), rand(128, 256)
    c = np.empty((256, 256), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    assert kernel.get_kernel_source() == kernel.source
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    assert profiler.do_bench(n_warmup=1, n_repeat=2) > 0


@needs_tile_cpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_readme_gemm_low_precision(dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        np_dtype = ml_dtypes.bfloat16
    else:
        np_dtype = np.float16
    kernel = tilelang.jit(readme_matmul, out_idx=[-1], target="cpu")(128, 128, 64, 64, 64, 32,
                                                                      dtype)
    a, b = rand(128, 64).astype(np_dtype), rand(64, 128).astype(np_dtype)
    c = kernel(a, b)
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


@tilelang.jit(out_idx=[-1], target="cpu")
def elementwise_add(n, block=64, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main


@needs_tile_cpu
@pytest.mark.parametrize("n", [64, 100, 1000])
def test_elementwise_add(n):
    a, b = rand(n), rand(n)
    np.testing.assert_allclose(elementwise_add(n)(a, b), a + b, rtol=1e-6)


@tilelang.jit(out_idx=[-1], target="cpu")
def symbolic_gemm(block_M=32, block_N=32, block_K=16):
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((block_K, block_N), "float32")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])
    return main


@needs_tile_cpu
@pytest.mark.parametrize("m, n, k", [(32, 32, 16), (50, 70, 30), (100, 33, 17)])
def test_gemm_with_symbolic_shapes_and_partial_tiles(m, n, k):
    kernel = symbolic_gemm()
    a, b = rand(m, k), rand(k, n)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)


@tilelang.jit(out_idx=[-1], target="cpu")
def softmax_rows(m, n, block_m=4):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block_m)) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            row_max = T.alloc_fragment((block_m,), "float32")
            row_sum = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
def test_softmax_rows():
    x = rand(10, 24) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax_rows(10, 24)(x), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


@tilelang.jit(out_idx=[-1], target="cpu")
def softmax_symbolic_rows(n, block_m=4):
    m = T.symbolic("m")

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block_m)) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            row_max = T.alloc_fragment((block_m,), "float32")
            row_sum = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
def test_random_shapes_against_numpy():
    # One compile per kernel (the shapes are symbolic), a few shapes each, so
    # the test stays quick; the seed is fixed so a failure reproduces.
    rng = np.random.default_rng(2026)
    gemm = symbolic_gemm()
    for _ in range(5):
        m, n, k = (int(v) for v in rng.integers(1, 97, size=3))
        a, b = rand(m, k), rand(k, n)
        np.testing.assert_allclose(gemm(a, b), a @ b, rtol=1e-4, atol=1e-4,
                                   err_msg=f"gemm M={m} N={n} K={k}")
    softmax = softmax_symbolic_rows(37)
    for _ in range(5):
        m = int(rng.integers(1, 50))
        x = rand(m, 37) * 4
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(softmax(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5,
                                   atol=1e-6, err_msg=f"softmax M={m}")


@tilelang.jit(out_idx=[-1], target="cpu")
def rms_norm(m, n, block_m=2, eps=1e-6):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block_m)) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            sq = T.alloc_fragment((block_m, n), "float32")
            ss = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m:(bx + 1) * block_m, :], x)
            for i, j in T.Parallel(block_m, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_m):
                ss[i] = T.rsqrt(ss[i] / n + eps)
            for i, j in T.Parallel(block_m, n):
                x[i, j] *= ss[i]
            T.copy(x, Y[bx * block_m:(bx + 1) * block_m, :])
    return main


@needs_tile_cpu
def test_rms_norm():
    x = rand(6, 32)
    ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(rms_norm(6, 32)(x), ref, rtol=1e-5, atol=1e-5)


@tilelang.jit(target="cpu")
def splitk_gemm(M, N, K, split_k, block=32, block_k=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), split_k) as (bx, by, bz):
            A_s = T.alloc_shared((block, block_k), "float32")
            B_s = T.alloc_shared((block_k, block), "float32")
            C_f = T.alloc_fragment((block, block), "float32")
            T.clear(C_f)
            for k in T.serial(T.ceildiv(K // split_k, block_k)):
                T.copy(A[by * block, bz * (K // split_k) + k * block_k], A_s)
                T.copy(B[bz * (K // split_k) + k * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(block, block):
                T.atomic_add(C[by * block + i, bx * block + j], C_f[i, j])
    return main


@needs_tile_cpu
def test_splitk_gemm_with_atomic_add():
    a, b = rand(64, 128), rand(128, 64)
    c = np.zeros((64, 64), np.float32)
    splitk_gemm(64, 64, 128, 4)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _splitk_partials(split_k, alloc_global, bm=64, bn=64, bk=32):
    """Split-K with the partial sums in a workspace: a parameter (the
    factory's workspace_idx) or a T.alloc_global the compiler plans
    (examples::tile::splitk_gemm in examples/tile/tile_kernels.h). Each block
    computes its tile's slices into Partial[s], then reduces them into C; a
    slice's last K tile may reach into the next slice, so what lies past the
    slice's end is zeroed and each K element is summed once."""
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    chunk = T.ceildiv(K, split_k)

    @T.macro
    def tile(A, B, C, Partial, bx, by):
        A_s = T.alloc_shared((bm, bk), "float32")
        B_s = T.alloc_shared((bk, bn), "float32")
        P_s = T.alloc_shared((bm, bn), "float32")
        C_l = T.alloc_fragment((bm, bn), "float32")
        for s in T.serial(split_k):
            T.clear(C_l)
            k_end = T.min(s * chunk + chunk, K)
            for ko in T.Pipelined(T.ceildiv(chunk, bk), num_stages=2):
                k0 = s * chunk + ko * bk
                T.copy(A[by * bm, k0], A_s)
                T.copy(B[k0, bx * bn], B_s)
                for i, kk in T.Parallel(bm, bk):
                    A_s[i, kk] = T.if_then_else(k0 + kk < k_end, A_s[i, kk], 0)
                for kk, j in T.Parallel(bk, bn):
                    B_s[kk, j] = T.if_then_else(k0 + kk < k_end, B_s[kk, j], 0)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, Partial[s, by * bm, bx * bn])
        T.clear(C_l)
        for s in T.serial(split_k):
            T.copy(Partial[s, by * bm, bx * bn], P_s)
            for i, j in T.Parallel(bm, bn):
                C_l[i, j] += P_s[i, j]
        T.copy(C_l, C[by * bm, bx * bn])

    if alloc_global:
        @T.prim_func
        def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
                 C: T.Tensor((M, N), "float32")):
            Partial = T.alloc_global((split_k, M, N), "float32")
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
                tile(A, B, C, Partial, bx, by)
    else:
        @T.prim_func
        def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
                 C: T.Tensor((M, N), "float32"), Partial: T.Tensor((split_k, M, N), "float32")):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
                tile(A, B, C, Partial, bx, by)
    return main


@tilelang.jit(out_idx=[2], workspace_idx=[3], target="cpu")
def splitk_gemm_workspace(split_k, bm=64, bn=64, bk=32):
    return _splitk_partials(split_k, False, bm, bn, bk)


@tilelang.jit(out_idx=[2], target="cpu")
def splitk_gemm_global(split_k, bm=64, bn=64, bk=32):
    return _splitk_partials(split_k, True, bm, bn, bk)


@needs_tile_cpu
@pytest.mark.parametrize("factory", [splitk_gemm_workspace, splitk_gemm_global],
                         ids=["workspace_idx", "alloc_global"])
def test_splitk_gemm_with_the_partials_in_a_workspace(factory):
    # K = 100 over 3 slices of 34: each slice's second K tile of 32 reaches
    # into the next slice. M and N do not divide the tiles either.
    kernel = factory(3)
    for m, n, k in [(70, 50, 100), (64, 64, 96), (5, 3, 7)]:
        a, b = rand(m, k), rand(k, n)
        np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4,
                                   err_msg=f"M={m} N={n} K={k}")
        assert kernel.workspace_layout(a, b) == [
            {"name": "Partial", "offset": 0, "bytes": 3 * m * n * 4, "shape": (3, m, n),
             "dtype": "float32", "init": "empty"}]
    assert kernel.workspace_names == ["Partial"] and kernel.input_names == ["A", "B"]


@tilelang.jit(out_idx=[-1], target="cpu")
def splitk_gemm_counted(M, N, K, split_k, block=32, block_k=16):
    # The slices are whole K tiles, so none straddles two slices; the copies'
    # bounds checks alone mask K's end. One block walks the slices of its
    # tile: with no atomic returning the previous value, the count is read by
    # the block that made it (see examples/tile/tile_kernels.h).
    chunk = tilelang.cdiv(tilelang.cdiv(K, split_k), block_k) * block_k
    tiles_m, tiles_n = tilelang.cdiv(M, block), tilelang.cdiv(N, block)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        Partial = T.alloc_global((split_k, M, N), "float32")
        Count = T.alloc_global((tiles_m, tiles_n), "int32", init="zero_once")
        with T.Kernel(tiles_n, tiles_m) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float32")
            B_s = T.alloc_shared((block_k, block), "float32")
            P_s = T.alloc_shared((block, block), "float32")
            C_f = T.alloc_fragment((block, block), "float32")
            for s in T.serial(split_k):
                T.clear(C_f)
                for k in T.Pipelined(chunk // block_k, num_stages=2):
                    T.copy(A[by * block, s * chunk + k * block_k], A_s)
                    T.copy(B[s * chunk + k * block_k, bx * block], B_s)
                    T.gemm(A_s, B_s, C_f)
                T.copy(C_f, Partial[s, by * block, bx * block])
                if T.get_thread_binding() == 0:  # a scalar atomic is each thread's
                    T.atomic_add(Count[by, bx], 1)
            if Count[by, bx] == split_k:
                T.clear(C_f)
                for s in T.serial(split_k):
                    T.copy(Partial[s, by * block, bx * block], P_s)
                    for i, j in T.Parallel(block, block):
                        C_f[i, j] += P_s[i, j]
                T.copy(C_f, C[by * block, bx * block])
                Count[by, bx] = 0
    return main


@needs_tile_cpu
@pytest.mark.parametrize("m, n, k, split_k", [(64, 64, 128, 4), (50, 70, 45, 3), (33, 17, 100, 2)])
def test_splitk_gemm_with_compiler_made_workspaces_and_a_tile_counter(m, n, k, split_k):
    kernel = splitk_gemm_counted(m, n, k, split_k)
    # Twice with new inputs: the second call finds the counters re-armed
    # (a zero_once workspace is zeroed only when its arena is first leased).
    for _ in range(2):
        a, b = rand(m, k), rand(k, n)
        np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)
    tiles = (-(-m // 32), -(-n // 32))
    partial = split_k * m * n * 4
    count_offset = (partial + 255) // 256 * 256
    assert kernel.workspace_layout(a, b) == [
        {"name": "Partial", "offset": 0, "bytes": partial, "shape": (split_k, m, n),
         "dtype": "float32", "init": "empty"},
        {"name": "Count", "offset": count_offset, "bytes": tiles[0] * tiles[1] * 4,
         "shape": tiles, "dtype": "int32", "init": "zero_once"},
    ]
    assert kernel.workspace_bytes(a, b) == count_offset + 256


@needs_tile_cpu
def test_front_end_errors_from_the_builder_carry_the_span():
    def make():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(1):
                A_s = T.alloc_shared((32, 32), "float32")
                T.copy(A[0:64, 0:64], A_s)
        return main

    line = inspect.getsourcelines(make)[1] + 5
    with raises_exact(ValueError, f"{__file__}:{line}:17: T.copy: source A[0:64, 0:64] and "
                                  f"destination A_s[0:32, 0:32] differ in shape ([64, 64] vs "
                                  f"[32, 32])"):
        make()


@needs_tile_cpu
def test_profiler_on_a_tile_kernel():
    kernel = elementwise_add(256)
    profiler = kernel.get_profiler(tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda a, b: a + b, rtol=1e-6, atol=1e-6)
    assert profiler.do_bench(n_warmup=1, n_repeat=3) > 0



# --- T.use_swizzle -----------------------------------------------------------

@tilelang.jit(target="cpu")
def swizzled_gemm(M, N, K, panel_size, order, block=32, block_k=32, dtype="bfloat16"):
    """C = A @ B with the blocks rasterised (T.use_swizzle); Count[by, bx]
    counts the blocks that took tile (by, bx): one each, whatever the order."""
    tiles_m, tiles_n = tilelang.cdiv(M, block), tilelang.cdiv(N, block)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), "float32"), Count: T.Tensor((tiles_m, tiles_n), "int32")):
        with T.Kernel(tiles_n, tiles_m, threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), dtype)
            B_s = T.alloc_shared((block_k, block), dtype)
            C_f = T.alloc_fragment((block, block), "float32")
            T.use_swizzle(panel_size, order=order)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_k), num_stages=2):
                T.copy(A[by * block, k * block_k], A_s)
                T.copy(B[k * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])
            if T.get_thread_binding() == 0:  # a scalar atomic is each thread's
                T.atomic_add(Count[by, bx], 1)
    return main


@needs_tile_builder
def test_use_swizzle_is_recorded_on_the_kernel():
    # Wherever it is called in the kernel; TileLang's "column" is "col".
    for order, printed in [("row", "row"), ("col", "col"), ("column", "col")]:
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(4, 2, threads=128) as (bx, by):
                A[by, bx] = 1.0
                T.use_swizzle(3, order=order)
        assert main.script().splitlines()[1] == (
            f'kernel(bx, by in [4, 2], threads tx in [128], swizzle(panel_size=3, '
            f'order="{printed}")):')

    @T.prim_func
    def off(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(4, 2, threads=128) as (bx, by):
            T.use_swizzle(panel_size=10, enable=False)
            A[by, bx] = 1.0
    assert off.script().splitlines()[1] == "kernel(bx, by in [4, 2], threads tx in [128]):"


@needs_tile_cpu
@pytest.mark.parametrize("order", ["row", "col"])
def test_use_swizzle_leaves_the_cpu_result_as_it_is(order):
    # Grid 7 x 5 with panel 3: the last panel is partial in either order.
    m, n, k = 5 * 32 - 3, 7 * 32 - 5, 70
    a, b = rand(m, k), rand(k, n)
    c, count = np.zeros((m, n), np.float32), np.zeros((5, 7), np.int32)
    swizzled_gemm(m, n, k, 3, order, dtype="float32")(a, b, c, count)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_array_equal(count, np.ones((5, 7), np.int32))


# --- TileLang's autotuning GEMM (examples/tile/gemm.py) ----------------------

@needs_tile_cpu
@pytest.mark.parametrize("enable_rasteration", [False, True])
def test_autotune_example_gemm_against_numpy(enable_rasteration):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
    import gemm as example

    m, n, k = 100, 70, 50  # no tile divides them
    kernel = example.matmul(m, n, k, 32, 64, 16, 2, 128, enable_rasteration)
    a, b = rand(m, k, dtype=np.float16), rand(n, k, dtype=np.float16)
    c = kernel(a, b)
    assert c.dtype == np.float16 and c.shape == (m, n)
    np.testing.assert_allclose(c.astype(np.float64), example.reference(a, b), rtol=1e-2,
                               atol=1e-2)
    assert ('swizzle(panel_size=10, order="row")' in kernel.prim_func.script()) == \
        enable_rasteration

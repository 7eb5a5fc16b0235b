"""T.copy of tiles at a tensor's edge (device/cuda/tilejit/cuda/copy.h, Note
[Vector copies]): shapes that no tile divides, in both dimensions; rows of
16-byte, 8-byte, 4-byte and 2-byte alignment (K = 200, 204, 202, 201 halves);
bfloat16, float16 and float32; loads through cp.async (a T.Pipelined GEMM, a
tile copied into shared memory) and synchronous copies (shared memory to a
global tensor's edge, global to global with zeros past the source's edge, a
source column before the tensor's first). Each program runs on the CPU
target and, where a GPU is, on CUDA, against numpy.

The lowering report's paths for those copies (the CUDA target: a GPU, or
the null driver of bench/null_driver first on LD_LIBRARY_PATH) compile the
generated CUDA with NVRTC too.
"""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import TARGETS, ml_dtypes, tilejit_cuda_unavailable
from test_tile_kernels import needs_tile_cpu

pytestmark = needs_tile_cpu


def gemm(M, N, K, bm, bn, bk, dtype, via_shared=False, stages=3):
    """C = A @ B, TileLang's README GEMM; `via_shared`: C's tile goes through
    shared memory, so that its store at the edges is a copy of copy.h."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), "float32")
            if via_shared:
                C_s = T.alloc_shared((bm, bn), dtype)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            if via_shared:
                T.copy(C_l, C_s)
                T.copy(C_s, C[by * bm, bx * bn])
            else:
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def pad(M, N, bm, bn, dtype, through_shared, shift=0):
    """P, the whole grid of tiles, = A shifted `shift` columns right, with
    zeros where A has no element: through a shared tile (cp.async, zero-
    filled) or global to global (synchronous)."""
    Mp, Np = -(-M // bm) * bm, -(-N // bn) * bn

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), P: T.Tensor((Mp, Np), dtype)):
        with T.Kernel(Np // bn, Mp // bm, threads=128) as (bx, by):
            if through_shared:
                S = T.alloc_shared((bm, bn), dtype)
                T.copy(A[by * bm, bx * bn - shift], S)
                T.copy(S, P[by * bm, bx * bn])
            else:
                T.copy(A[by * bm, bx * bn - shift],
                       P[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn])

    return main


def crop(M, N, bm, bn, dtype, through_shared):
    """B = P[:M, :N] for P the whole grid of tiles: each tile stored into B,
    in part at B's edges."""
    Mp, Np = -(-M // bm) * bm, -(-N // bn) * bn

    @T.prim_func
    def main(P: T.Tensor((Mp, Np), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(Np // bn, Mp // bm, threads=128) as (bx, by):
            if through_shared:
                S = T.alloc_shared((bm, bn), dtype)
                T.copy(P[by * bm, bx * bn], S)
                T.copy(S, B[by * bm, bx * bn])
            else:
                T.copy(P[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn], B[by * bm, bx * bn])

    return main


def _np_dtype(dtype):
    if dtype == "bfloat16":
        if ml_dtypes is None:
            pytest.skip("ml_dtypes is not installed")
        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def _rand(shape, dtype, seed):
    """Random values exact in `dtype` (multiples of 1/8 in [-2, 2))."""
    x = np.random.default_rng(seed).integers(-16, 16, size=shape) / 8
    return x.astype(np.float32).astype(_np_dtype(dtype))


def _on(target, x, dtype):
    if target == "cpu":
        return x
    import torch
    return torch.from_numpy(x.astype(np.float32)).cuda().to(getattr(torch, dtype))


def _host(x):
    if hasattr(x, "cpu"):
        return x.float().cpu().numpy()
    return np.asarray(x).astype(np.float32)


GEMMS = [
    # M, N, K, dtype: K = 200 halves is a 16-byte row, 204 an 8-byte one,
    # 202 a 4-byte one, 201 a 2-byte one (element by element).
    (200, 136, 200, "float16"),
    (200, 136, 204, "float16"),
    (200, 136, 202, "float16"),
    (200, 136, 201, "float16"),
    (72, 200, 204, "bfloat16"),
    (72, 200, 202, "bfloat16"),
    (100, 72, 100, "float32"),  # a row of 400 bytes
    (100, 72, 98, "float32"),   # 392 bytes: 8-byte vectors
    (100, 72, 99, "float32"),   # 396 bytes: 4-byte vectors
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("via_shared", [False, True], ids=["acc_store", "shared_store"])
@pytest.mark.parametrize("M, N, K, dtype", GEMMS)
def test_gemm_at_the_edges(target, M, N, K, dtype, via_shared):
    bk = 32 if dtype != "float32" else 16
    kernel = tilejit.compile(gemm(M, N, K, 64, 64, bk, dtype, via_shared), out_idx=[2],
                             target=target)
    a, b = _rand((M, K), dtype, 1), _rand((K, N), dtype, 2)
    c = _host(kernel(_on(target, a, dtype), _on(target, b, dtype)))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dtype == "float32" else 1e-2  # one rounding of C to 16 bits
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol)


COPIES = [
    # M, N, block_m, block_n, dtype
    (50, 104, 16, 64, "float16"),   # 208 bytes: 16-byte vectors, 104 = 64 + 40 columns
    (50, 100, 16, 64, "float16"),   # 200 bytes: 8-byte vectors
    (50, 102, 16, 64, "float16"),   # 204 bytes: 4-byte vectors
    (50, 101, 16, 64, "float16"),   # 202 bytes: element by element
    (37, 70, 8, 32, "bfloat16"),    # 140 bytes: 4-byte vectors
    (37, 68, 8, 32, "bfloat16"),    # 136 bytes: 8-byte vectors
    (37, 45, 8, 16, "float32"),     # 180 bytes: 4-byte vectors
    (37, 44, 8, 16, "float32"),     # 176 bytes: 16-byte vectors
    (9, 20, 4, 4, "float16"),       # a tile row of 4 halves: 8-byte vectors at most
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("through_shared", [True, False], ids=["shared", "global"])
@pytest.mark.parametrize("M, N, bm, bn, dtype", COPIES)
def test_a_padded_copy_is_zero_past_the_edges(target, M, N, bm, bn, dtype, through_shared):
    kernel = tilejit.compile(pad(M, N, bm, bn, dtype, through_shared), out_idx=[1],
                             target=target)
    a = _rand((M, N), dtype, 3)
    ref = np.zeros((-(-M // bm) * bm, -(-N // bn) * bn), np.float32)
    ref[:M, :N] = a.astype(np.float32)
    np.testing.assert_array_equal(_host(kernel(_on(target, a, dtype))), ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("through_shared", [True, False], ids=["shared", "global"])
@pytest.mark.parametrize("M, N, bm, bn, dtype", COPIES)
def test_a_store_at_the_edges_writes_only_what_exists(target, M, N, bm, bn, dtype,
                                                      through_shared):
    kernel = tilejit.compile(crop(M, N, bm, bn, dtype, through_shared), out_idx=[1],
                             target=target)
    p = _rand((-(-M // bm) * bm, -(-N // bn) * bn), dtype, 4)
    np.testing.assert_array_equal(_host(kernel(_on(target, p, dtype))),
                                  p[:M, :N].astype(np.float32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("through_shared", [True, False], ids=["shared", "global"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_source_column_before_the_first(target, dtype, through_shared):
    """Tiles that start 3 columns before A's first: each vector's elements
    exist only in part, from its middle on."""
    M, N, bm, bn = 20, 60, 8, 32
    kernel = tilejit.compile(pad(M, N, bm, bn, dtype, through_shared, shift=3), out_idx=[1],
                             target=target)
    a = _rand((M, N), dtype, 5)
    ref = np.zeros((24, 64), np.float32)
    ref[:M, 3:N + 3] = a.astype(np.float32)
    np.testing.assert_array_equal(_host(kernel(_on(target, a, dtype))), ref)


# The CUDA lowering report names each copy's path (op_report.cpp); the
# kernels are compiled with NVRTC, which needs no GPU.

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")


def _copies(f, arch="compute_80"):
    """The copies' paths and reasons, compiled for `arch` (before Hopper by
    default: cp.async and copy.h's vectors, which these tests pin)."""
    kernel = tilejit.compile(f, target="cuda", extra_compile_flags=[f"--gpu-architecture={arch}"])
    return [(e["path"], e["reason"]) for e in kernel.lowering_report() if e.get("op") == "T.copy"]


@needs_cuda_target
def test_the_tiles_of_a_1000_cube_gemm_take_cp_async():
    # Every copy's tiles, those at the edges too, move 16 bytes at a time.
    assert _copies(gemm(1000, 1000, 1000, 128, 128, 32, "float16")) == [
        ("cp_async", ""), ("cp_async", ""), ("registers", "")]
    # On Hopper, TMA, whose boxes past the tensors' ends read zeros (Note
    # [TMA copies]).
    assert _copies(gemm(1000, 1000, 1000, 128, 128, 32, "float16"), "sm_90a") == [
        ("tma_load", ""), ("tma_load", ""), ("registers", "")]


@needs_cuda_target
def test_a_row_of_8_aligned_bytes_names_its_vectors():
    assert _copies(gemm(1000, 1000, 1004, 128, 128, 32, "float16"))[0] == (
        "cp_async", "8-byte vectors: a row of A is 1004 elements (2008 bytes), "
                    "not a multiple of 16 bytes")


@needs_cuda_target
def test_a_row_aligned_to_less_goes_element_by_element():
    # copy.h narrows 16-byte vectors to 8 bytes and no further.
    assert _copies(gemm(1000, 1000, 1002, 128, 128, 32, "float16"))[0] == (
        "elementwise", "an unaligned row: a row of A is 1002 elements (2004 bytes), "
                       "not a multiple of 8 bytes")


@needs_cuda_target
def test_an_odd_row_of_halves_goes_element_by_element():
    assert _copies(gemm(1000, 1000, 1001, 128, 128, 32, "float16"))[0] == (
        "elementwise", "an unaligned row: a row of A is 1001 elements (2002 bytes), "
                       "not a multiple of 4 bytes")


@needs_cuda_target
def test_a_store_from_shared_memory_is_a_vector_copy():
    assert _copies(gemm(1000, 1000, 1000, 128, 128, 32, "float16", via_shared=True))[2:] == [
        ("registers", ""),
        ("vector", "vectors through registers: cp.async moves global memory into shared "
                   "memory only")]


@needs_cuda_target
def test_a_tile_row_of_8_bytes_names_its_vectors():
    assert _copies(pad(9, 20, 4, 4, "float16", through_shared=True))[0] == (
        "cp_async", "8-byte vectors: 4 elements per row is not a whole number of 16-byte "
                    "vectors")


@needs_cuda_target
@pytest.mark.parametrize("M, N, K, dtype", GEMMS)
def test_every_gemm_above_compiles_for_cuda(M, N, K, dtype):
    bk = 32 if dtype != "float32" else 16
    for via_shared in (False, True):
        tilejit.compile(gemm(M, N, K, 64, 64, bk, dtype, via_shared), target="cuda")


@needs_cuda_target
@pytest.mark.parametrize("M, N, bm, bn, dtype", COPIES)
def test_every_copy_above_compiles_for_cuda(M, N, bm, bn, dtype):
    for through_shared in (True, False):
        tilejit.compile(pad(M, N, bm, bn, dtype, through_shared), target="cuda")
        tilejit.compile(pad(M, N, bm, bn, dtype, through_shared, shift=3), target="cuda")
        tilejit.compile(crop(M, N, bm, bn, dtype, through_shared), target="cuda")

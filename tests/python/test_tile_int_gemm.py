"""Integer GEMM, as TileLang writes it: int8 x int8 -> int32, exact, on the
CPU target and, where a GPU is, on CUDA (the library's gemm in the integer
C; the lowering report says why not the tensor cores); a float gemm into an
integer C is an error at the user's line."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, to_target
from test_tile_kernels import needs_tile_cpu


def int8_gemm(M, N, K, bm=64, bn=64, bk=32):
    """int8 x int8 -> int32, as TileLang's integer GEMM: exact."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "int8"), B: T.Tensor((K, N), "int8"),
             C: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "int8")
            B_s = T.alloc_shared((bk, bn), "int8")
            C_l = T.alloc_fragment((bm, bn), "int32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (100, 70, 130)])
def test_an_int8_gemm_accumulates_exactly_in_int32(target, m, n, k):
    rng = np.random.default_rng(k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = as_numpy(tilejit.compile(int8_gemm(m, n, k), out_idx=[2], target=target)(to_target(target, a),
                                                                          to_target(target, b)))
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


def test_a_float_gemm_into_an_integer_c_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "int32")):
        with T.Kernel(1, threads=32):
            A_s = T.alloc_shared((16, 16), "float16")
            C_l = T.alloc_fragment((16, 16), "int32")
            T.copy(A, A_s)
            T.gemm(A_s, A_s, C_l, clear_accum=True)
            T.copy(C_l, C)
    with pytest.raises(TypeError, match=r"T\.gemm: C C_l\[0:16, 0:16\] has dtype int32 and A, B "
                                        r"are float16, float16; the CPU gemm accumulates in "
                                        r"floating point, or in an integer C from integer A and B"):
        tilejit.compile(main, out_idx=[1], target="cpu")

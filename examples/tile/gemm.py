"""The GEMM of TileLang's autotuning example (examples/gemm/
example_gemm_autotune.py), written as it writes its kernel: C = A @ B^T with
A of shape [M, K] and B of shape [N, K], one block per (block_M, block_N)
tile of C, the K tiles through a T.Pipelined ring, the accumulator in a
fragment staged through shared memory on its way out, and the blocks'
order rasterised (T.use_swizzle(panel_size=10)) when `enable_rasteration`.
M, N and K need not divide the tiles.

    kernel = matmul(M, N, K, 128, 256, 64, 3, 256, True)
    c = kernel(a, b)

`reference` is the same product in float64 numpy."""

import numpy as np

import tilejit as tilelang
import tilejit.language as T


@tilelang.jit(out_idx=[-1], target="cpu")
def matmul(M, N, K, block_M, block_N, block_K, num_stages, thread_num, enable_rasteration,
           dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def gemm_autotune(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=thread_num) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.use_swizzle(panel_size=10, enable=enable_rasteration)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(
                    A_shared,
                    B_shared,
                    C_local,
                    transpose_B=True,
                )
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm_autotune


def reference(a, b):
    """a @ b.T in float64."""
    return a.astype(np.float64) @ b.astype(np.float64).T

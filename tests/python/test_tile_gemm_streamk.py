"""TileLang's Stream-K GEMM (examples/gemm_streamk/example_tilelang_gemm_streamk.py)
on the CPU: its kernel verbatim (eager style: T.const shapes, annotations in
the body), its module-level plan in numpy at a small shape with 12
programs, so that both the stream-K wave (partial tiles joined with
T.atomic_add) and the data-parallel tiles run. Its CUDA source compiles
(NVRTC) wherever tilejit's cuda target is available."""

import math

import numpy as np
import pytest

import tilejit as tilelang
from tilejit import language as T
from support import tilejit_cuda_unavailable
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")


# --- the example's module-level plan (smaller: m, n, k and total_sm) ---------

def cdiv(a, b):
    return math.ceil(a / b)


m = 128
n = 512
k = 128

total_sm = 12

rng = np.random.default_rng(0)
# uniform distribution from -1 to 1
A = (rng.random((m, k)) * 2 - 1).astype(np.float16)
B = (rng.random((n, k)) * 2 - 1).astype(np.float16)

streamk_programs = total_sm
BLOCK_SIZE_M = 16
BLOCK_SIZE_N = 128
BLOCK_SIZE_K = 32
two_tiles = False
M, K = A.shape
N, K = B.shape
# accumulator types
# compute grid (work to do per SM on the first wave)
num_block_m = tilelang.cdiv(M, BLOCK_SIZE_M)
num_block_n = tilelang.cdiv(N, BLOCK_SIZE_N)
iters_per_tile = tilelang.cdiv(K, BLOCK_SIZE_K)
total_tiles = num_block_m * num_block_n

# Two-tile SK + DP
streamk_tiles = total_tiles % streamk_programs
if total_tiles - streamk_tiles > streamk_programs:  # (total_tiles // total_programs > 1)
    streamk_tiles += streamk_programs

blocking_tiles = total_tiles - streamk_tiles
streamk_iters = streamk_tiles * iters_per_tile

streamk_full_tiles = streamk_iters // streamk_programs
streamk_partial_tiles = streamk_iters % streamk_programs

sm_patition_factor = max(blocking_tiles // total_sm, 1)


# --- TileLang's kernel, verbatim ---

@tilelang.jit
def tl_matmul_streamk(
    A,
    B,
    C,
    streamk_tiles,
    block_M,
    block_N,
    block_K,
    trans_A,
    trans_B,
    dtypeAB,
    dtypeC,
    accum_dtype,
    num_stages,
    threads,
):
    assert not trans_A
    M, N, K = T.const("M, N, K")
    A_shape = (M, K) if not trans_A else (K, M)
    B_shape = (K, N) if not trans_B else (N, K)
    A_shared_shape = (block_M, block_K) if not trans_A else (block_K, block_M)
    B_shared_shape = (block_K, block_N) if not trans_B else (block_N, block_K)

    A: T.Tensor(A_shape, dtypeAB)
    B: T.Tensor(B_shape, dtypeAB)
    C: T.Tensor((M, N), dtypeC)

    with T.Kernel(streamk_programs, threads=threads) as pid:
        A_shared = T.alloc_shared(A_shared_shape, dtypeAB)
        B_shared = T.alloc_shared(B_shared_shape, dtypeAB)
        A_shared_full_tiles = T.alloc_shared(A_shared_shape, dtypeAB)
        B_shared_full_tiles = T.alloc_shared(B_shared_shape, dtypeAB)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        # compute first wave
        start_iter = T.alloc_fragment((1,), T.int32, "local")
        end_iter = T.alloc_fragment((1,), T.int32, "local")

        start_iter[0] = pid * streamk_full_tiles + T.min(pid, streamk_partial_tiles)
        last_iter = (pid + 1) * streamk_full_tiles + T.min(pid + 1, streamk_partial_tiles)

        while start_iter[0] < last_iter:
            end_iter[0] = T.min(
                start_iter[0] + (iters_per_tile - (start_iter[0] % iters_per_tile)),
                last_iter,
            )

            tile_id = start_iter[0] // iters_per_tile
            remain_iters = start_iter[0] % iters_per_tile
            pid_m = tile_id // T.ceildiv(N, block_N)
            pid_n = tile_id % T.ceildiv(N, block_N)

            T.clear(C_local)
            for k in T.Pipelined(end_iter[0] - start_iter[0], num_stages=num_stages):
                T.copy(
                    A[pid_m * block_M, (k + (start_iter[0] % iters_per_tile)) * block_K],
                    A_shared,
                )
                T.copy(
                    B[pid_n * block_N, (k + (start_iter[0] % iters_per_tile)) * block_K],
                    B_shared,
                )
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B)

            # last iteration of the tile always happens before its start on another SM
            if remain_iters == 0 and (end_iter[0] % iters_per_tile == 0):
                T.copy(C_local, C[pid_m * block_M, pid_n * block_N])
            else:
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[pid_m * block_M + i, pid_n * block_N + j], C_local[i, j])

            start_iter[0] = end_iter[0]

        # compute full tiles
        if sm_patition_factor > 0:
            for p in T.serial(sm_patition_factor):
                tile_id = pid + streamk_tiles + p * total_sm
                pid_m = tile_id // T.ceildiv(N, block_N)
                pid_n = tile_id % T.ceildiv(N, block_N)
                T.clear(C_local)

                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                    T.copy(A[pid_m * block_M, k * block_K], A_shared_full_tiles)
                    T.copy(B[pid_n * block_N, k * block_K], B_shared_full_tiles)
                    T.gemm(A_shared_full_tiles, B_shared_full_tiles, C_local, transpose_B=trans_B)
                T.copy(C_local, C[pid_m * block_M, pid_n * block_N])


def run_streamk(A, B):
    b_c = np.zeros((m, n), dtype=np.float32)
    tl_matmul_streamk.retarget("cpu")(
        A,
        B,
        b_c,
        streamk_tiles,
        BLOCK_SIZE_M,
        BLOCK_SIZE_N,
        BLOCK_SIZE_K,
        False,
        True,
        T.float16,
        T.float32,  # fp32 for atom add
        T.float32,
        2,
        64,
    )
    return b_c


@needs_tile_cpu
def test_streamk_gemm():
    assert streamk_tiles > 0 and blocking_tiles > 0  # both phases run
    b_c = run_streamk(A, B)
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    np.testing.assert_allclose(b_c, ref, rtol=1e-2, atol=1e-2)


@needs_cuda_target
def test_streamk_gemm_compiles_for_cuda():
    kernel = tl_matmul_streamk.retarget("cuda").compile(
        M=m, N=n, K=k, streamk_tiles=streamk_tiles, block_M=BLOCK_SIZE_M,
        block_N=BLOCK_SIZE_N, block_K=BLOCK_SIZE_K, trans_A=False, trans_B=True,
        dtypeAB=T.float16, dtypeC=T.float32, accum_dtype=T.float32, num_stages=2, threads=64)
    assert "atomic" in kernel.get_kernel_source().lower()

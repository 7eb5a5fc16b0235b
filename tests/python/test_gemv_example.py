"""TileLang's GEMV example (examples/gemv/example_gemv.py): its seven kernel
factories, copied unchanged but for the imports, run on the CPU and on a GPU
against numpy, and their CUDA sources compiled by NVRTC where tilejit's cuda
target is available (a GPU, or the null driver, bench/null_driver, first on
LD_LIBRARY_PATH). splitk_gemv_vectorized_tvm and get_autotuned_kernel reduce
with TVM's thread all-reduce (language/allreduce.py, Note [Thread
all-reduce]); the other forms of the all-reduce are in
test_tile_allreduce.py."""

import numpy as np
import pytest

import tilejit
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

# The kernels below are TileLang's (github.com/tile-ai/tilelang, MIT License,
# Copyright (c) Tile-AI), examples/gemv/example_gemv.py at commit a35008a42531,
# from `@tl.jit def naive_gemv` to the line before `def check_correctness_and_bench`;
# only these imports differ (tilelang, tilelang.language, tvm's DataType,
# tilelang.autotuner, tilelang's jit).
import itertools  # noqa: E402
import tilejit as tl  # noqa: E402
import tilejit.language as T  # noqa: E402
from tilejit import DataType  # noqa: E402
from tilejit.autotuner import autotune  # noqa: E402
from tilejit import jit  # noqa: E402


@tl.jit
def naive_gemv(
    A,
    B,
    BLOCK_N: int,
    BLOCK_K: int,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float,
):
    N, K = T.const("N, K")
    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N)) as bn:
        tn = T.get_thread_binding(0)  # tn = threadIdx.x
        A_shared = T.alloc_shared((BLOCK_K,), dtype)
        B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), dtype)
        C_reg = T.alloc_local((1,), accum_dtype)
        T.clear(C_reg)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for tk in T.serial(BLOCK_K):
                A_shared[tk] = A[bk * BLOCK_K + tk]
                B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
            for tk in T.serial(BLOCK_K):
                C_reg[0] += A_shared[tk].astype(accum_dtype) * B_shared[tn, tk].astype(accum_dtype)
        C[bn * BLOCK_N + tn] = C_reg[0]

    return C


@tl.jit
def naive_splitk_gemv(
    A,
    B,
    BLOCK_N: int,
    BLOCK_K: int,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float,
):
    N, K = T.const("N, K")
    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, BLOCK_K)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((1,), dtype)
        B_local = T.alloc_local((1,), dtype)
        C_accum = T.alloc_local((1,), accum_dtype)
        C_shared = T.alloc_shared((BLOCK_N,), accum_dtype)
        if tk == 0:
            C_shared[tn] = 0
        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            A_local[0] = A[bk * BLOCK_K + tk]
            B_local[0] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
            C_accum[0] += A_local[0].astype(accum_dtype) * B_local[0].astype(accum_dtype)
        T.atomic_add(C_shared[tn], C_accum[0])
        C[bn * BLOCK_N + tn] = C_shared[tn]

    return C


@tl.jit
def splitk_gemv(
    A,
    B,
    BLOCK_N: int,
    BLOCK_K: int,
    reduce_threads: int,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float,
):
    N, K = T.const("N, K")
    TILE_K = T.ceildiv(BLOCK_K, reduce_threads)

    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((TILE_K,), dtype)
        B_local = T.alloc_local((TILE_K,), dtype)
        C_shared = T.alloc_shared((BLOCK_N,), accum_dtype)
        C_accum = T.alloc_local((1,), accum_dtype)
        if tk == 0:
            C_shared[tn] = 0
        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for k in T.serial(TILE_K):
                A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
            for k in T.serial(TILE_K):
                C_accum[0] += A_local[k].astype(accum_dtype) * B_local[k].astype(accum_dtype)
        T.atomic_add(C_shared[tn], C_accum[0])
        C[bn * BLOCK_N + tn] = C_shared[tn]

    return C


@tl.jit
def splitk_gemv_vectorized(
    A,
    B,
    BLOCK_N: int,
    reduce_threads: int,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float,
):
    N, K = T.const("N, K")
    MAX_TRANSACTION_SIZE_IN_BITS = 128
    TILE_K = MAX_TRANSACTION_SIZE_IN_BITS // DataType(dtype).bits
    BLOCK_K = reduce_threads * TILE_K

    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((TILE_K,), dtype)
        B_local = T.alloc_local((TILE_K,), dtype)
        C_shared = T.alloc_shared((BLOCK_N,), accum_dtype)
        C_accum = T.alloc_local((1,), accum_dtype)
        if tk == 0:
            C_shared[tn] = 0
        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for k in T.vectorized(TILE_K):
                A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
            for k in T.serial(TILE_K):
                C_accum[0] += A_local[k].astype(accum_dtype) * B_local[k].astype(accum_dtype)
        T.atomic_add(C_shared[tn], C_accum[0])
        C[bn * BLOCK_N + tn] = C_shared[tn]

    return C


@tl.jit
def splitk_gemv_vectorized_tvm(
    A,
    B,
    BLOCK_N: int,
    reduce_threads: int,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float,
):
    N, K = T.const("N, K")
    MAX_TRANSACTION_SIZE_IN_BITS = 128
    TILE_K = MAX_TRANSACTION_SIZE_IN_BITS // DataType(dtype).bits
    BLOCK_K = reduce_threads * TILE_K

    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((TILE_K,), dtype)
        B_local = T.alloc_local((TILE_K,), dtype)
        C_accum = T.alloc_local((1,), accum_dtype)

        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for k in T.vectorized(TILE_K):
                A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
            for k in T.serial(TILE_K):
                C_accum[0] += A_local[k].astype(accum_dtype) * B_local[k].astype(accum_dtype)
        C_reduced = T.alloc_local((1,), accum_dtype)
        with T.attr(
            T.comm_reducer(lambda x, y: x + y, [T.cast(0, accum_dtype)]),
            "reduce_scope",
            T.reinterpret(T.uint64(0), dtype="handle"),
        ):
            T.evaluate(
                T.tvm_thread_allreduce(
                    T.uint32(1),
                    C_accum[0],
                    True,
                    C_reduced[0],
                    tk,
                    dtype="handle",
                )
            )

        C[bn * BLOCK_N + tn] = C_reduced[0]

    return C


def get_block_template_configs():
    iter_params = dict(
        block_M=[2, 4, 8, 32, 64, 128], block_N=[2, 4, 8, 32, 64, 128], num_stages=[0, 1, 2, 3, 4], threads=[32, 64, 128, 256]
    )
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@tl.autotune(
    configs=get_block_template_configs(),
    warmup=3,
    rep=20,
)
@tl.jit(
    pass_configs={
        tl.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
        tl.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
    },
)
def gemv_alloc_reducer(
    a, x, block_M=128, block_N=128, num_stages=2, threads=256, dtype: T.dtype = T.float16, accum_dtype: T.dtype = T.float
):
    M, N = T.const("M, N")
    a: T.Tensor((M, N), dtype)
    x: T.Tensor((N,), dtype)
    o = T.empty((M,), dtype)

    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as i0_m:
        o_reducer = T.alloc_reducer(block_M, accum_dtype, replication="all")
        T.clear(o_reducer)
        for i0_n in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
            a_smem = T.alloc_shared((block_M, block_N), dtype)
            T.copy(a[i0_m * block_M, i0_n * block_N], a_smem)
            a_frag = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(a_smem, a_frag)
            x_frag = T.alloc_fragment(block_N, dtype)
            T.copy(x[i0_n * block_N], x_frag)
            for i1_m, i1_n in T.Parallel(block_M, block_N):
                o_reducer[i1_m] += a_frag[i1_m, i1_n] * x_frag[i1_n]
        T.finalize_reducer(o_reducer)
        T.copy(o_reducer, o[i0_m * block_M])

    return o


def get_thread_template_configs():
    iter_params = dict(BLOCK_N=[2, 4, 8, 32, 64, 128], reduce_threads=[4, 8, 32])
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@autotune(
    configs=get_thread_template_configs(),
    warmup=3,
    rep=20,
)
@jit(target="auto")
def get_autotuned_kernel(
    A,
    B,
    BLOCK_N=None,
    reduce_threads=None,
):
    N, K = T.const("N, K")
    dtype = T.float16
    accum_dtype = T.float32
    MAX_TRANSACTION_SIZE_IN_BITS = 128
    TILE_K = MAX_TRANSACTION_SIZE_IN_BITS // DataType(dtype).bits
    BLOCK_K = reduce_threads * TILE_K

    A: T.Tensor((K,), dtype)
    B: T.Tensor((N, K), dtype)
    C = T.empty((N,), dtype)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((TILE_K,), dtype)
        B_local = T.alloc_local((TILE_K,), dtype)
        C_accum = T.alloc_local((1,), accum_dtype)

        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for k in T.vectorized(TILE_K):
                A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
            for k in T.serial(TILE_K):
                C_accum[0] += A_local[k].astype(accum_dtype) * B_local[k].astype(accum_dtype)
        C_reduced = T.alloc_local((1,), accum_dtype)
        with T.attr(
            T.comm_reducer(lambda x, y: x + y, [T.cast(0, accum_dtype)]),
            "reduce_scope",
            T.reinterpret(T.uint64(0), dtype="handle"),
        ):
            T.evaluate(
                T.tvm_thread_allreduce(
                    T.uint32(1),
                    C_accum[0],
                    True,
                    C_reduced[0],
                    tk,
                    dtype="handle",
                )
            )

        C[bn * BLOCK_N + tn] = C_reduced[0]

    return C


# --- the checks ----------------------------------------------------------------

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")

N, K = 128, 512  # small: CI time; K a multiple of every BLOCK_K below

# (factory, configuration) as the example's main() compiles them, the blocks
# scaled down to N and K; get_autotuned_kernel with a configuration given
# (no tuning).
KERNELS = {
    "naive_gemv": (naive_gemv, dict(BLOCK_N=128, BLOCK_K=64)),  # T.Kernel's 128 threads
    "naive_splitk_gemv": (naive_splitk_gemv, dict(BLOCK_N=8, BLOCK_K=32)),
    "splitk_gemv": (splitk_gemv, dict(BLOCK_N=8, BLOCK_K=32, reduce_threads=8)),
    "splitk_gemv_vectorized": (splitk_gemv_vectorized, dict(BLOCK_N=2, reduce_threads=32)),
    "splitk_gemv_vectorized_tvm": (splitk_gemv_vectorized_tvm, dict(BLOCK_N=2, reduce_threads=32)),
    "splitk_gemv_vectorized_tvm_in_a_warp": (splitk_gemv_vectorized_tvm,
                                             dict(BLOCK_N=4, reduce_threads=8)),
    "get_autotuned_kernel": (get_autotuned_kernel, dict(BLOCK_N=4, reduce_threads=4)),
    "gemv_alloc_reducer": (gemv_alloc_reducer, dict(block_M=32, block_N=64, num_stages=1,
                                                    threads=64)),
    "gemv_alloc_reducer_2_stages": (gemv_alloc_reducer, dict(block_M=32, block_N=64,
                                                             num_stages=2, threads=64)),
}


def _compile(name, target):
    factory, config = KERNELS[name]
    dims = dict(M=N, N=K) if name.startswith("gemv_alloc_reducer") else dict(N=N, K=K)
    return factory.retarget(target).compile(**dims, **config)


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("name", KERNELS)
def test_the_example_kernel_against_numpy(name, target):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(K) / 8).astype(np.float16)
    b = (rng.standard_normal((N, K)) / 8).astype(np.float16)
    kernel = _compile(name, target)
    a_t, b_t = to_target(target, a), to_target(target, b)
    c = kernel(b_t, a_t) if name.startswith("gemv_alloc_reducer") else kernel(a_t, b_t)
    ref = b.astype(np.float32) @ a.astype(np.float32)
    np.testing.assert_allclose(as_numpy(c).astype(np.float32), ref, rtol=1e-2, atol=1e-2)


@needs_cuda_target
@pytest.mark.parametrize("name", KERNELS)
def test_the_example_kernel_compiles_for_cuda(name):
    kernel = _compile(name, "cuda")
    assert "__global__" in kernel.get_kernel_source()
    if name == "gemv_alloc_reducer_2_stages":
        # its tile, allocated inside the T.Pipelined loop, is the kernel's
        # (Note [Allocations are the kernel's]), so the loop is pipelined
        loops = [e["path"] for e in kernel.lowering_report()
                 if e.get("kind") == "op" and e["op"] == "T.Pipelined"]
        assert loops == ["pipelined, 2 stages"]

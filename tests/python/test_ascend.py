"""TileLang-Ascend's dialect (T.Kernel(..., is_npu=True), the L1 / L0A /
L0B / L0C / UB buffers, T.gemm_v0, T.tile.*) emulated on the CPU target:
programs written as the dialect's examples write them, checked against
numpy, and its errors by kind, exact message and the author's line."""

import inspect
import linecache

import numpy as np
import pytest

import tilejit as tilelang
import tilejit.language as T
from tilejit.language import ascend_tile
from support import raises_exact
from test_tile_kernels import needs_tile_cpu

F = __file__

pass_configs = {
    tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
    tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
    tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True,
    tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_SYNC: True,
}


def here():
    return inspect.currentframe().f_back.f_lineno


def at(line, call, nth=1, path=F):
    """file:line:col of the nth call `call(` of the file `path` (this one)
    from that line on (of `call` itself when it ends with a colon)."""
    needle = call if call.endswith(":") else call + "("
    for _ in range(200):
        text = linecache.getline(path, line)
        if needle in text:
            nth -= 1
            if nth == 0:
                return f"{path}:{line}:{text.index(needle) + 1}"
        line += 1
    raise AssertionError(f"no {needle!r} in the 200 lines from {path}:{line - 200}")


# --- programs --------------------------------------------------------------

@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def sigmoid(M, N, block_M, block_N, dtype="float"):
    m_num, n_num = M // block_M, N // block_N
    VEC_NUM = 2
    half = block_M // VEC_NUM

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            a_ub = T.alloc_ub((half, block_N), dtype)
            b_ub = T.alloc_ub((half, block_N), dtype)
            zero_ub = T.alloc_ub((half, block_N), dtype)
            T.copy(A[bx * block_M + vid * half, by * block_N], a_ub)
            T.tile.fill(zero_ub, 0.0)
            T.tile.sub(a_ub, zero_ub, a_ub)
            T.tile.exp(a_ub, a_ub)
            T.tile.add(a_ub, a_ub, 1.0)
            T.tile.reciprocal(b_ub, a_ub)
            T.barrier_all()
            T.copy(b_ub, B[bx * block_M + vid * half, by * block_N])

    return main


@needs_tile_cpu
def test_sigmoid_each_vector_core_takes_half_the_rows():
    tilelang.disable_cache()
    try:
        func = sigmoid(64, 96, 32, 32)
    finally:
        tilelang.enable_cache()
    a = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
    b = np.asarray(func(a))
    np.testing.assert_allclose(b, 1 / (1 + np.exp(-a)), rtol=1e-5, atol=1e-6)


@needs_tile_cpu
def test_an_npu_program_is_the_cpu_targets_to_emulate():
    # "auto" picks the CPU even where a GPU is there (a numpy input would
    # otherwise be refused as a tensor on the wrong device), and asking for
    # CUDA says why not.
    prog = sigmoid.get_tir(32, 32, 32, 32)
    kernel = tilelang.compile(prog, out_idx=[-1])
    assert kernel.target == "cpu"
    if "cuda" not in tilelang._C.registered_targets():
        pytest.skip("tilejit was built without its CUDA backend")
    with raises_exact(ValueError, "main: a TileLang-Ascend program (T.Kernel(..., is_npu=True)) "
                                  "is emulated on the CPU target only; compile it with "
                                  "target=\"cpu\" (\"auto\" picks it)"):
        tilelang.compile(prog, out_idx=[-1], target="cuda")


@tilelang.jit(out_idx=[-1], pass_configs=pass_configs)
def matmul(M, N, K, block_M, block_N, K_L1, transpose_B=False, dtype="float16",
           accum_dtype="float"):
    m_num, n_num = M // block_M, N // block_N
    b_shape = (N, K) if transpose_B else (K, N)
    b_tile = (block_N, K_L1) if transpose_B else (K_L1, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_L1((block_M, K_L1), dtype)
            B_L1 = T.alloc_L1(b_tile, dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            for k in T.serial(T.ceildiv(K, K_L1)):
                T.copy(A[bx * block_M, k * K_L1], A_L1)
                if transpose_B:
                    T.copy(B[by * block_N, k * K_L1], B_L1)
                else:
                    T.copy(B[k * K_L1, by * block_N], B_L1)
                T.gemm_v0(A_L1, B_L1, C_L0, transpose_B=transpose_B, init=(k == 0))
            T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


@needs_tile_cpu
@pytest.mark.parametrize("transpose_B", [True])  # False: the developer-mode test below
def test_gemm_v0_from_l1_into_l0c(transpose_B):
    func = matmul(64, 96, 128, 32, 48, 32, transpose_B)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((96, 128) if transpose_B else (128, 96)).astype(np.float16)
    c = np.asarray(func(a, b)).astype(np.float32)
    ref = a.astype(np.float32) @ (b.T if transpose_B else b).astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=5e-2)


@tilelang.jit(out_idx=[-1], pass_configs=pass_configs)
def matmul_developer(M, N, K, block_M, block_N, K_L1, dtype="float16", accum_dtype="float"):
    """Developer mode: tilejit's own shared / fragment buffers, placed by use."""
    m_num, n_num = M // block_M, N // block_N

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_shared((block_M, K_L1), dtype)
            B_L1 = T.alloc_shared((K_L1, block_N), dtype)
            C_L0 = T.alloc_fragment((block_M, block_N), accum_dtype)
            for k in T.serial(T.ceildiv(K, K_L1)):
                T.copy(A[bx * block_M, k * K_L1], A_L1)
                T.copy(B[k * K_L1, by * block_N], B_L1)
                T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
            T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


@needs_tile_cpu
def test_gemm_v0_on_developer_mode_buffers():
    func = matmul_developer(32, 64, 64, 16, 32, 16)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.asarray(func(a, b)).astype(np.float32)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=5e-2)


@tilelang.jit(out_idx=[-1], pass_configs=pass_configs)
def matmul_add(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    """The intrinsic style: L1 -> L0A / L0B by hand, T.mma, then a vector
    epilogue (C = A @ B + D) on each vector core's half of L0C."""
    m_num, n_num = M // block_M, N // block_N
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             D: T.Tensor((M, N), accum_dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_L1((block_M, K), dtype)
            B_L1 = T.alloc_L1((K, block_N), dtype)
            A_L0 = T.alloc_L0A((block_M, block_K), dtype)
            B_L0 = T.alloc_L0B((block_K, block_N), dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            c_ub = T.alloc_ub((half, block_N), accum_dtype)
            d_ub = T.alloc_ub((half, block_N), accum_dtype)
            T.annotate_address({A_L1: 0, B_L1: block_M * K * 2})
            T.copy(A[bx * block_M, 0], A_L1)
            T.copy(B[0, by * block_N], B_L1)
            T.set_flag("mte2", "mte1", 0)
            T.wait_flag("mte2", "mte1", 0)
            for kk in T.serial(K // block_K):
                T.copy(A_L1[0, kk * block_K], A_L0)
                T.copy(B_L1[kk * block_K, 0], B_L0)
                T.mma(A_L0, B_L0, C_L0, init=(kk == 0))
            T.pipe_barrier("all")
            T.copy(C_L0[vid * half:vid * half + half, :], c_ub)
            T.copy(D[bx * block_M + vid * half, by * block_N], d_ub)
            T.tile.add(c_ub, c_ub, d_ub)
            T.copy(c_ub, C[bx * block_M + vid * half, by * block_N])

    return main


@needs_tile_cpu
def test_mma_through_l0a_l0b_and_a_vector_epilogue_from_l0c():
    func = matmul_add(64, 64, 64, 32, 32, 16)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    d = rng.standard_normal((64, 64)).astype(np.float32)
    c = np.asarray(func(a, b, d))
    ref = a.astype(np.float32) @ b.astype(np.float32) + d
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)


@tilelang.jit(out_idx=[1])
def softmax(M, N, block_M, dtype="float"):
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M // block_M, is_npu=True) as (cid, vid):
            row = cid * block_M + vid * half
            x_ub = T.alloc_ub((half, N), dtype)
            m_ub = T.alloc_ub((half,), dtype)
            s_ub = T.alloc_ub((half,), dtype)
            b_ub = T.alloc_ub((half, N), dtype)
            T.copy(X[row, 0], x_ub)
            T.reduce_max(x_ub, m_ub, dim=-1)
            T.tile.broadcast(b_ub, m_ub)
            T.tile.sub(x_ub, x_ub, b_ub)
            T.tile.exp(x_ub, x_ub)
            T.tile.reduce_sum(x_ub, s_ub, dim=-1)
            T.tile.broadcast(b_ub, s_ub, axis=1)
            T.tile.div(x_ub, x_ub, b_ub)
            T.copy(x_ub, Y[row, 0])

    return main


@needs_tile_cpu
def test_softmax_rows_with_reductions_and_broadcasts():
    func = softmax(32, 24, 8)
    x = np.random.default_rng(3).standard_normal((32, 24)).astype(np.float32) * 4
    y = np.asarray(func(x))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@tilelang.jit(out_idx=[1])
def masked_activations(N, dtype="float"):
    @T.prim_func
    def main(X: T.Tensor((2, N), dtype), Y: T.Tensor((2, 6, N), dtype)):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), dtype)
            y = T.alloc_ub((N,), dtype)
            mask = T.alloc_ub((N // 8,), "uint8")
            i_ub = T.alloc_ub((N,), "int32")
            T.copy(X[vid, 0:N], x)
            T.tile.compare(mask, x, 0.0, "GT")  # relu through a bit mask
            T.tile.select(y, mask, x, 0.0, "VSEL_TENSOR_SCALAR_MODE")
            T.copy(y, Y[vid, 0, 0:N])
            T.tile.cast(i_ub, x, "CAST_FLOOR", N)
            T.tile.cast(y, i_ub, "CAST_NONE", N)
            T.copy(y, Y[vid, 1, 0:N])
            T.tile.sigmoid(y, x)
            T.tile.ln(y, y)
            T.copy(y, Y[vid, 2, 0:N])
            T.tile.max(y, x, -0.5)
            T.tile.min(y, y, 0.5)
            T.copy(y, Y[vid, 3, 0:N])
            T.tile.abs(y, x)
            T.tile.sqrt(y, y)
            T.tile.mul(y, y, 2.0)
            T.copy(y, Y[vid, 4, 0:N])
            T.tile.fill(y, 1.0)
            T.tile.axpy(y, x, 3.0)
            T.copy(y, Y[vid, 5, 0:N])

    return main


@needs_tile_cpu
def test_compare_select_cast_and_unary_ops():
    func = masked_activations(16)
    x = np.random.default_rng(4).standard_normal((2, 16)).astype(np.float32) * 3
    y = np.asarray(func(x))
    np.testing.assert_allclose(y[:, 0], np.maximum(x, 0))
    np.testing.assert_allclose(y[:, 1], np.floor(x))
    np.testing.assert_allclose(y[:, 2], -np.log1p(np.exp(-x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[:, 3], np.clip(x, -0.5, 0.5))
    np.testing.assert_allclose(y[:, 4], 2 * np.sqrt(np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(y[:, 5], 3 * x + 1, rtol=1e-6, atol=1e-6)


# --- errors ----------------------------------------------------------------

def test_a_buffer_over_its_memory_is_an_error_naming_it():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.alloc_L0A')}: T.alloc_L0A: A_L0 "
                                  f"(float16[128, 512]) takes 131072 bytes, over L0A's "
                                  f"capacity of 65536 bytes"):
        @T.prim_func
        def main(A: T.Tensor((128, 512), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                A_L0 = T.alloc_L0A((128, 512), "float16")  # noqa: F841


def test_the_buffers_of_a_memory_add_up():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.alloc_ub', 3)}: T.alloc_ub: c_ub "
                                  f"(float32[128, 128]) takes 65536 bytes with the 131072 bytes "
                                  f"already allocated there, over UB's capacity of 196352 bytes"):
        @T.prim_func
        def main(A: T.Tensor((128, 128), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a_ub = T.alloc_ub((128, 128), "float32")  # noqa: F841
                b_ub = T.alloc_ub((128, 128), "float32")  # noqa: F841
                c_ub = T.alloc_ub((128, 128), "float32")  # noqa: F841


# Two L0C accumulators, 16 KiB and 128 KiB (the seed's acc_s_l0c and
# acc_o_l0c): 144 KiB in all, over L0C's 128 KiB, but the first is dead
# before the second is first written unless `overlap`.
@tilelang.jit(out_idx=[2, 3], pass_configs=pass_configs)
def two_accumulators(overlap):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 512), "float16"),
             S: T.Tensor((64, 64), "float32"), O: T.Tensor((64, 512), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((64, 64), "float16")
            b_l1 = T.alloc_L1((64, 512), "float16")
            s_l0c = T.alloc_L0C((64, 64), "float32")
            o_l0c = T.alloc_L0C((64, 512), "float32")
            T.copy(A, a_l1)
            T.copy(B, b_l1)
            T.gemm_v0(a_l1, a_l1, s_l0c, transpose_B=True, init=True)
            if not overlap:
                T.copy(s_l0c, S)
            T.gemm_v0(a_l1, b_l1, o_l0c, init=True)
            T.copy(o_l0c, O)
            if overlap:
                T.copy(s_l0c, S)

    return main


@needs_tile_cpu
def test_buffers_whose_lifetimes_do_not_overlap_share_a_memory():
    # Under TL_ASCEND_MEMORY_PLANNING, as TileLang-Ascend's planning pass
    # places them: both at offset 0 of L0C.
    func = two_accumulators(False)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 512)).astype(np.float16)
    s, o = (np.asarray(x) for x in func(a, b))
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(s, a32 @ a32.T, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(o, a32 @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_buffers_live_at_once_must_fit_together():
    line = at(here() - 33, "T.alloc_L0C", 2)
    with raises_exact(ValueError, f"{line}: T.alloc_L0C: o_l0c (float32[64, 512]) takes 131072 "
                                  f"bytes, and no room is left for it in L0C's 131072 bytes "
                                  f"while s_l0c (16384 bytes at 0) is live"):
        two_accumulators(True)


def test_without_memory_planning_buffers_are_placed_one_after_another():
    # TileLang-Ascend then places them in allocation order, unchecked: the
    # second runs past L0C on the NPU.
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.alloc_L0C', 2)}: T.alloc_L0C: o_l0c "
                                  f"(float32[64, 512]) takes 131072 bytes with the 16384 bytes "
                                  f"already allocated there, over L0C's capacity of 131072 bytes"):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                s_l0c = T.alloc_L0C((64, 64), "float32")  # noqa: F841
                o_l0c = T.alloc_L0C((64, 512), "float32")  # noqa: F841


@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def annotated(address):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), S: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((64, 64), "float16")
            b_l1 = T.alloc_L1((64, 64), "float16")
            s_l0c = T.alloc_L0C((64, 64), "float32")
            T.annotate_address({a_l1: 0, b_l1: address})
            T.copy(A, a_l1)
            T.copy(A, b_l1)
            T.gemm_v0(a_l1, b_l1, s_l0c, transpose_B=True, init=True)
            T.copy(s_l0c, S)

    return main


def test_annotated_addresses_of_live_buffers_must_not_overlap():
    line = at(here() - 14, "T.annotate_address")
    with raises_exact(ValueError, f"{line}: T.annotate_address: b_l1 (float16[64, 64]) at 4096 "
                                  f"(8192 bytes) overlaps a_l1 (float16[64, 64]) at 0 (8192 "
                                  f"bytes), live at the same time in L1"):
        annotated(4096)
    with raises_exact(ValueError, f"{line}: T.annotate_address: b_l1 (float16[64, 64]) at "
                                  f"520000 takes 8192 bytes, past the end of L1 (524032 bytes)"):
        annotated(520000)
    annotated(8192)  # side by side


def test_a_copy_off_the_data_paths_is_an_error():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.copy')}: T.copy: A (GM) to A_L0 (L0A) is "
                                  f"not a data path of the Ascend core; the paths are GM->L1, "
                                  f"GM->UB, L1->L0A, L1->L0B, L0C->GM, L0C->UB, UB->GM, UB->UB, "
                                  f"UB->L1"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                A_L0 = T.alloc_L0A((16, 16), "float16")
                T.copy(A, A_L0)


@tilelang.jit(out_idx=[-1], pass_configs=pass_configs)
def relu_matmul(M, N, K, block_M, block_N, block_K, through_workspace, dtype="float16",
                accum_dtype="float"):
    """C = relu(A) @ B + 1: each vector core makes its half of relu(A)'s
    rows, which the cube reads (UB -> L1, or UB -> GM workspace -> L1), and
    the vector cores add 1 to the cube's result (L0C -> UB): data flows
    both ways in each step."""
    m_num, n_num = M // block_M, N // block_N
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             ws: T.Tensor((m_num * n_num, block_M, block_K), dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            a_ub = T.alloc_ub((half, block_K), dtype)
            c_ub = T.alloc_ub((half, block_N), accum_dtype)
            A_L1 = T.alloc_L1((block_M, block_K), dtype)
            B_L1 = T.alloc_L1((block_K, block_N), dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            for k in T.serial(K // block_K):
                T.copy(A[bx * block_M + vid * half, k * block_K], a_ub)
                T.tile.relu(a_ub, a_ub)
                if through_workspace:
                    T.copy(a_ub, ws[cid, vid * half, 0])
                    T.copy(ws[cid, 0:block_M, 0:block_K], A_L1)
                else:
                    T.copy(a_ub, A_L1[vid * half, 0])
                T.copy(B[k * block_K, by * block_N], B_L1)
                T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
            T.copy(C_L0[vid * half:vid * half + half, :], c_ub)
            T.tile.add(c_ub, c_ub, 1.0)
            T.copy(c_ub, C[bx * block_M + vid * half, by * block_N])

    return main


@needs_tile_cpu
@pytest.mark.parametrize("through_workspace", [False, True])
def test_vector_to_cube_runs_the_two_parts_in_lockstep(through_workspace):
    func = relu_matmul(64, 32, 64, 32, 32, 16, through_workspace)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    ws = np.zeros((2, 32, 16), np.float16)
    c = np.asarray(func(a, b, ws))
    ref = np.maximum(a.astype(np.float32), 0) @ b.astype(np.float32) + 1
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)


@needs_tile_cpu
def test_only_a_vector_to_cube_flow_takes_the_lockstep_path():
    # Cube -> vector keeps the serial loop over vid (the cube code once per
    # vid, no per-core UB); vector -> cube runs each vector step per core,
    # vid set by the step (Note [Cube and vector in lockstep]).
    serial = matmul_add(64, 64, 64, 32, 32, 16).get_kernel_source()
    lockstep = relu_matmul(64, 32, 64, 32, 32, 16, True).get_kernel_source()
    assert "int32_t vid[1];" not in serial
    assert "int32_t vid[1];" in lockstep
    assert "vid[0] = tilejit::cpu::convert<int32_t>(vid_1);" in lockstep


def test_a_workspace_read_more_often_than_written_is_a_deadlock():
    line = here()
    with raises_exact(ValueError,
                      f"{at(line, 'T.copy', 4)}: T.copy: the cube read the workspace ws "
                      f"(GM->L1) 5 times per block but the vector cores write it (UB->GM) 4 "
                      f"times: read 5 waits for a write that never comes (a deadlock on the "
                      f"NPU)"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16"), ws: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                p_ub = T.alloc_ub((8, 16), "float16")
                p_l1 = T.alloc_L1((16, 16), "float16")
                for k in T.serial(4):
                    T.copy(A[vid * 8, 0], p_ub)
                    T.copy(p_ub, ws[vid * 8, 0])
                    T.copy(ws, p_l1)
                T.copy(ws, p_l1)


def test_a_cross_flag_wait_with_no_signal_before_it_is_a_deadlock():
    line = here()
    with raises_exact(ValueError,
                      f"{at(line, 'T.wait_cross_flag', 3)}: T.wait_cross_flag(1): the cube "
                      f"waits for T.set_cross_flag(..., 1) by the vector cores, but the vector "
                      f"cores end their part: a deadlock on the NPU"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                T.set_cross_flag("FIX", 0)
                T.wait_cross_flag(0)
                T.wait_cross_flag(1)


def test_a_branch_on_vid_in_lockstep_is_not_emulated_yet():
    line = here()
    with raises_exact(NotImplementedError,
                      f"{at(line, 'if vid == 0:', 2)}: a branch on vid ('vid[0] == 0') in a "
                      f"kernel whose cube and vector parts run in lockstep is not emulated yet "
                      f"(Note [Cube and vector in lockstep])"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                p_ub = T.alloc_ub((8, 16), "float16")
                p_l1 = T.alloc_L1((16, 16), "float16")
                T.copy(A[vid * 8, 0], p_ub)
                T.copy(p_ub, p_l1[vid * 8, 0])
                if vid == 0:
                    T.tile.add(p_ub, p_ub, 1.0)


@pytest.mark.parametrize("call, name, kind", [
    ("T.sync_all()", "T.sync_all", NotImplementedError),
    # Also an AttributeError, so that hasattr(T.tile, ...) is False (below).
    ("T.tile.sort(a_ub, a_ub, 16)", "T.tile.sort",
     ascend_tile.NotEmulatedError),
])
def test_a_construct_not_emulated_is_an_error_naming_it(tmp_path, call, name, kind):
    path = tmp_path / "kernel_file.py"
    path.write_text("import tilejit.language as T\n\n"
                    "def main(A: T.Tensor((16,), 'float32')):\n"
                    "    with T.Kernel(1, is_npu=True) as (cid, vid):\n"
                    "        a_ub = T.alloc_ub((16,), 'float32')\n"
                    f"        {call}\n")
    scope = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    with raises_exact(kind, f"{path}:6:9: {name} (TileLang-Ascend) is not emulated yet"):
        T.prim_func(scope["main"])


def test_tools_that_look_names_up_see_no_such_attribute():
    # torch.compile's cache key pickles what a graph refers to and asks
    # modules for names such as "torch": an AttributeError, not a crash.
    assert not hasattr(T.tile, "torch")
    assert getattr(T.tile, "sort", None) is None
    assert issubclass(ascend_tile.NotEmulatedError, NotImplementedError)


def test_gemm_v0_operands_must_be_in_the_cube_memories():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.gemm_v0')}: T.gemm_v0: A (a_ub) is in UB; "
                                  f"it must be in L1 or L0A"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a_ub = T.alloc_ub((16, 16), "float16")
                b_l1 = T.alloc_L1((16, 16), "float16")
                c_l0 = T.alloc_L0C((16, 16), "float")
                T.gemm_v0(a_ub, b_l1, c_l0)


def test_on_chip_buffers_need_an_npu_kernel():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.alloc_L1')}: T.alloc_L1 is only valid "
                                  f"inside a T.Kernel(..., is_npu=True) block"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1):
                a = T.alloc_L1((16, 16), "float16")  # noqa: F841


def test_a_scope_is_the_cube_or_the_vector_cores():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.Scope')}: T.Scope: expected \"C\" (the "
                                  f"cube) or \"V\" (the vector cores), got 'X'"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("X"):
                    pass


def test_gather_mask_takes_the_fixed_patterns():
    line = here()
    with raises_exact(ascend_tile.NotEmulatedError,
                      f"{at(line, 'T.tile.gather_mask')}: T.tile.gather_mask: pattern 'P01' "
                      f"is not emulated yet; the fixed patterns \"Pxxxx\" are"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a_ub = T.alloc_ub((16,), "float32")
                b_ub = T.alloc_ub((8,), "float32")
                T.tile.gather_mask(b_ub, a_ub, "P01")


def test_topk_needs_room_for_its_pairs():
    line = here()
    with raises_exact(ValueError,
                      f"{at(line, 'T.tile.topk')}: T.tile.topk: expected a 1-d destination "
                      f"of 2 * top_k elements and a 1-d src of count elements, got d_ub [8], "
                      f"a_ub [16], top_k 8, count 16"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a_ub = T.alloc_ub((16,), "float32")
                d_ub = T.alloc_ub((8,), "float32")
                T.tile.topk(d_ub, a_ub, 8, 16)


def test_enable_relu_is_an_ascend_copy_option():
    line = here()
    with raises_exact(ValueError, f"{at(line, 'T.copy', 1)}: T.copy: enable_relu is "
                                  f"TileLang-Ascend's, valid inside a T.Kernel(..., is_npu=True) "
                                  f"block"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1):
                T.copy(A, B, enable_relu=True)

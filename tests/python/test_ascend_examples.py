"""TileLang-Ascend's examples (tile-ai/tilelang-ascend, branch ascendc_pto,
examples/), each kernel written here in the dialect with the structure and
ops of the example named above it, at small shapes, run on the CPU
emulation (python/tilejit/language/ascend.py) and checked against numpy."""

import numpy as np
import pytest

import tilejit as tilelang
import tilejit.language as T
from support import raises_exact
from test_ascend import at as _at, here, pass_configs
from test_tile_kernels import needs_tile_cpu

F = __file__


def at(line, call, nth=1):
    """file:line:col of the nth `call(` of this file from that line on."""
    return _at(line, call, nth, path=F)


# --- examples/activation/gelu_mul.py: vector cores only --------------------

@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def gelu_mul(M, N, block_M, block_N, dtype="float"):
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N // 2, block_N)
    rows = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N // 2), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            x_ub = T.alloc_ub((rows, block_N), dtype)
            gate_ub = T.alloc_ub((rows, block_N), dtype)
            out_ub = T.alloc_ub((rows, block_N), dtype)
            t_ub = T.alloc_ub((rows, block_N), dtype)
            T.copy(A[bx * block_M + vid * rows, by * block_N], x_ub)
            T.copy(A[bx * block_M + vid * rows, by * block_N + N // 2], gate_ub)
            # gelu(x) = x / (1 + exp(-sqrt(8 / pi) (x + 0.044715 x^3)))
            T.tile.mul(t_ub, x_ub, x_ub)
            T.tile.mul(t_ub, x_ub, t_ub)
            T.tile.mul(t_ub, t_ub, 0.044715)
            T.tile.add(t_ub, x_ub, t_ub)
            T.tile.mul(t_ub, t_ub, -1.5957691)
            T.tile.exp(t_ub, t_ub)
            T.tile.add(t_ub, t_ub, 1.0)
            T.tile.div(t_ub, x_ub, t_ub)
            T.tile.mul(out_ub, t_ub, gate_ub)
            T.copy(out_ub, B[bx * block_M + vid * rows, by * block_N])

    return main


@needs_tile_cpu
def test_gelu_mul():
    func = gelu_mul(64, 128, 32, 32)
    a = np.random.default_rng(10).standard_normal((64, 128)).astype(np.float32)
    b = np.asarray(func(a))
    x, gate = a[:, :64], a[:, 64:]
    gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(b, gelu * gate, rtol=1e-4, atol=1e-5)


# --- examples/gemm/example_gemm.py: the cube only, in T.Scope("C") ---------

@tilelang.jit(out_idx=[-1])
def gemm(M, N, K, block_M, block_N, K_L1, dtype="float16", accum_dtype="float"):
    m_num, n_num = M // block_M, N // block_N

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_L1((block_M, K_L1), dtype)
            B_L1 = T.alloc_L1((K_L1, block_N), dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            with T.Scope("C"):
                for k in T.serial(T.ceildiv(K, K_L1)):
                    T.copy(A[bx * block_M, k * K_L1], A_L1)
                    T.copy(B[k * K_L1, by * block_N], B_L1)
                    T.barrier_all()
                    T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
                    T.barrier_all()
                T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


@needs_tile_cpu
def test_gemm_in_a_cube_scope():
    func = gemm(64, 64, 96, 32, 32, 32)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 64)).astype(np.float16)
    c = np.asarray(func(a, b)).astype(np.float32)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=5e-2)


# --- examples/pipeline/flash_attn_bshd_pipeline.py (flash_attn_bhsd.py's ----
# algorithm with automatic cube/vector sync): workspaces both ways, run in
# lockstep (Note [Cube and vector in lockstep]).

@tilelang.jit(out_idx=[3], workspace_idx=[4, 5, 6], pass_configs=pass_configs)
def flash_attention(batch, heads, seq_len, dim, block_M, block_N):
    dtype, accum_dtype = "float16", "float"
    sm_scale = (1.0 / dim) ** 0.5
    shape = [batch, heads, seq_len, dim]
    block_num = seq_len // block_M * heads * batch
    half = block_M // 2

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype),
             V: T.Tensor(shape, dtype), Output: T.Tensor(shape, dtype),
             ws_s: T.Tensor([block_num, block_M, block_N], accum_dtype),
             ws_p: T.Tensor([block_num, block_M, block_N], dtype),
             ws_o: T.Tensor([block_num, block_M, dim], accum_dtype)):
        with T.Kernel(block_num, is_npu=True) as (cid, vid):
            bx = cid % (seq_len // block_M)
            by = cid // (seq_len // block_M) % heads
            bz = cid // (seq_len // block_M) // heads % batch

            q_l1 = T.alloc_L1([block_M, dim], dtype)
            k_l1 = T.alloc_L1([block_N, dim], dtype)
            v_l1 = T.alloc_L1([block_N, dim], dtype)
            p_l1 = T.alloc_L1([block_M, block_N], dtype)
            s_l0c = T.alloc_L0C([block_M, block_N], accum_dtype)
            o_l0c = T.alloc_L0C([block_M, dim], accum_dtype)

            acc_o = T.alloc_ub([half, dim], accum_dtype)
            sumexp = T.alloc_ub([half], accum_dtype)
            m_i = T.alloc_ub([half], accum_dtype)
            s_ub = T.alloc_ub([half, block_N], accum_dtype)
            m_prev = T.alloc_ub([half], accum_dtype)
            s_in = T.alloc_ub([half, block_N], accum_dtype)
            sumexp_i = T.alloc_ub([half], accum_dtype)
            p_half = T.alloc_ub([half, block_N], dtype)
            o_in = T.alloc_ub([half, dim], accum_dtype)
            o_half = T.alloc_ub([half, dim], dtype)

            T.tile.fill(acc_o, 0.0)
            T.tile.fill(sumexp, 0.0)
            T.tile.fill(m_i, -2**30)
            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], q_l1)

            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=2):
                # the cube: S = Q K^T, to the vector cores through ws_s
                T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0c, transpose_B=True, init=True)
                T.copy(s_l0c, ws_s[cid, :, :])
                # the vector cores: online softmax of their half of the rows
                T.tile.fill(s_ub, 0.0)
                T.copy(m_i, m_prev)
                T.copy(ws_s[cid, vid * half:vid * half + half, :], s_in)
                T.tile.add(s_ub, s_ub, s_in)
                T.tile.mul(s_ub, s_ub, sm_scale)
                T.reduce_max(s_ub, m_i, dim=-1)
                T.tile.max(m_i, m_i, m_prev)
                T.tile.sub(m_prev, m_prev, m_i)
                T.tile.exp(m_prev, m_prev)
                for h_i in range(half):
                    T.tile.sub(s_ub[h_i, :], s_ub[h_i, :], m_i[h_i])
                T.tile.exp(s_ub, s_ub)
                T.reduce_sum(s_ub, sumexp_i, dim=-1)
                T.tile.mul(sumexp, sumexp, m_prev)
                T.tile.add(sumexp, sumexp, sumexp_i)
                T.copy(s_ub, p_half)
                # P to the cube through ws_p (both halves), O_k = P V back
                T.copy(p_half, ws_p[cid, vid * half:vid * half + half, :])
                T.copy(ws_p[cid, :, :], p_l1)
                T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], v_l1)
                T.gemm_v0(p_l1, v_l1, o_l0c, init=True)
                T.copy(o_l0c, ws_o[cid, :, :])
                for h_i in range(half):
                    T.tile.mul(acc_o[h_i, :], acc_o[h_i, :], m_prev[h_i])
                T.copy(ws_o[cid, vid * half:vid * half + half, :], o_in)
                T.tile.add(acc_o, acc_o, o_in)

            for h_i in range(half):
                T.tile.div(acc_o[h_i, :], acc_o[h_i, :], sumexp[h_i])
            T.copy(acc_o, o_half)
            T.copy(o_half, Output[bz, by, bx * block_M + vid * half:
                                  bx * block_M + vid * half + half, :])

    return main


def attention_reference(q, k, v):
    q, k, v = (x.astype(np.float32) for x in (q, k, v))
    s = np.einsum("bhsd,bhkd->bhsk", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhsk,bhkd->bhsd", p, v)


@needs_tile_cpu
def test_flash_attention_with_workspaces_both_ways():
    func = flash_attention(1, 2, 64, 32, 16, 32)
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal((1, 2, 64, 32)).astype(np.float16) for _ in range(3))
    out = np.asarray(func(q, k, v)).astype(np.float32)
    np.testing.assert_allclose(out, attention_reference(q, k, v), rtol=2e-2, atol=2e-2)


# --- examples/flash_attention/flash_attn_bhsd.py: T.Scope + cross flags -----
# The two scopes run interleaved at their waits (Note [Cube and vector
# concurrently]); here each waits for the other before it signals.

def test_scopes_that_each_wait_for_the_other_first_deadlock():
    line = here()
    with raises_exact(ValueError,
                      f"{at(line, 'T.wait_cross_flag', 3)}: T.wait_cross_flag(1): the cube "
                      f"waits for T.set_cross_flag(..., 1) by the vector cores, but the vector "
                      f"cores wait for T.set_cross_flag(..., 0) by the cube "
                      f"(T.wait_cross_flag(0) at {at(line, 'T.wait_cross_flag', 4)}): a "
                      f"deadlock on the NPU"):
        @T.prim_func
        def main(Q: T.Tensor((32, 16), "float16"), K: T.Tensor((32, 16), "float16"),
                 ws_s: T.Tensor((32, 32), "float"), ws_p: T.Tensor((32, 32), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                q_l1 = T.alloc_L1([32, 16], "float16")
                k_l1 = T.alloc_L1([32, 16], "float16")
                p_l1 = T.alloc_L1([32, 32], "float16")
                s_l0c = T.alloc_L0C([32, 32], "float")
                s_ub = T.alloc_ub([16, 32], "float")
                p_ub = T.alloc_ub([16, 32], "float16")
                with T.Scope("C"):
                    T.copy(Q, q_l1)
                    for _k in T.serial(2):
                        T.copy(K, k_l1)
                        T.gemm_v0(q_l1, k_l1, s_l0c, transpose_B=True, init=True)
                        T.copy(s_l0c, ws_s)
                        T.wait_cross_flag(1)
                        T.set_cross_flag("FIX", 0)
                        T.copy(ws_p, p_l1)
                with T.Scope("V"):
                    for _k in T.serial(2):
                        T.wait_cross_flag(0)
                        T.copy(ws_s[vid * 16, 0], s_ub)
                        T.tile.exp(s_ub, s_ub)
                        T.copy(s_ub, p_ub)
                        T.copy(p_ub, ws_p[vid * 16, 0])
                        T.set_cross_flag("MTE3", 1)


# --- examples/deepseek_v4/int8_gemm.py: int8 cube, a dynamic workspace ------

@tilelang.jit(out_idx=[-2], workspace_idx=[5], pass_configs=pass_configs)
def int8_gemm(N, K, block_M=32, block_N=32, block_K=32, out_dtype="float32"):
    M = T.symbolic("M")
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)
    k_num = T.ceildiv(K, block_K)
    rows = block_M // 2

    @T.prim_func
    def main(A: T.Tensor([M, K], "int8"), B: T.Tensor([N, K], "int8"),
             scale_a: T.Tensor([M], "float32"), scale_b: T.Tensor([N], "float32"),
             C: T.Tensor([M, N], out_dtype), ws: T.Tensor([M, N], "int32")):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bm = cid // n_num
            bn = cid % n_num
            with T.Scope("C"):
                A_L1 = T.alloc_L1([block_M, block_K], "int8")
                B_L1 = T.alloc_L1([block_N, block_K], "int8")
                C_L0 = T.alloc_L0C([block_M, block_N], "int32")
                for bk in T.serial(k_num):
                    T.copy(A[bm * block_M, bk * block_K], A_L1)
                    T.copy(B[bn * block_N, bk * block_K], B_L1)
                    T.gemm_v0(A_L1, B_L1, C_L0, transpose_B=True, init=(bk == 0))
                T.copy(C_L0, ws[bm * block_M, bn * block_N])
                T.set_cross_flag("FIX", 0)
            with T.Scope("V"):
                c_ub = T.alloc_ub([rows, block_N], "int32")
                c_f = T.alloc_ub([rows, block_N], "float32")
                c_out = T.alloc_ub([rows, block_N], out_dtype)
                sa_ub = T.alloc_ub([rows], "float32")
                sb_ub = T.alloc_ub([block_N], "float32")
                T.wait_cross_flag(0)
                T.copy(ws[bm * block_M + vid * rows, bn * block_N], c_ub)
                T.copy(scale_a[bm * block_M + vid * rows], sa_ub)
                T.copy(scale_b[bn * block_N], sb_ub)
                T.tile.cast(c_f, c_ub, mode="CAST_RINT", count=rows * block_N)
                for i, j in T.Parallel(rows, block_N):
                    c_f[i, j] *= sa_ub[i]
                    c_f[i, j] *= sb_ub[j]
                T.tile.cast(c_out, c_f, mode="CAST_RINT", count=rows * block_N)
                T.copy(c_out, C[bm * block_M + vid * rows, bn * block_N])

    return main


@needs_tile_cpu
@pytest.mark.parametrize("M", [64, 40])
def test_int8_gemm_with_a_dynamic_workspace(M):
    func = int8_gemm(64, 96)
    rng = np.random.default_rng(13)
    a = rng.integers(-128, 128, (M, 96), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 96), dtype=np.int8)
    sa = rng.random(M).astype(np.float32)
    sb = rng.random(64).astype(np.float32)
    c = np.asarray(func(a, b, sa, sb))
    ref = (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.float32) * sa[:, None] * sb
    np.testing.assert_allclose(c, ref, rtol=1e-5)


# --- examples/normalization/rms_norm.py: ping-pong tiles, a row reduction ----

@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def rms_norm(M, N, block_M, block_N, eps=1e-5, dtype="float"):
    m_num, n_num = M // block_M, N // block_N
    rows = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num, is_npu=True) as (cid, vid):
            a_even = T.alloc_ub([rows, block_N], dtype)
            a_odd = T.alloc_ub([rows, block_N], dtype)
            acc = T.alloc_ub([rows, block_N], dtype)
            row_sum = T.alloc_ub([rows, 1], dtype)
            inv_rms = T.alloc_ub([rows, 1], dtype)
            inv_tile = T.alloc_ub([rows, block_N], dtype)
            row = cid * block_M + vid * rows
            T.tile.fill(acc, 0.0)
            for by in T.serial(n_num // 2):
                T.copy(A[row:row + rows, by * 2 * block_N:(by * 2 + 1) * block_N], a_even)
                T.tile.mul(a_even, a_even, a_even)
                T.tile.add(acc, acc, a_even)
                T.copy(A[row:row + rows, (by * 2 + 1) * block_N:(by * 2 + 2) * block_N], a_odd)
                T.tile.mul(a_odd, a_odd, a_odd)
                T.tile.add(acc, acc, a_odd)
            T.reduce_sum(acc, row_sum, dim=-1)
            T.tile.mul(row_sum, row_sum, T.cast(1.0 / N, dtype))
            T.tile.add(row_sum, row_sum, T.cast(eps, dtype))
            T.tile.rsqrt(inv_rms, row_sum)
            T.tile.broadcast(inv_tile, inv_rms)
            for by in T.serial(n_num // 2):
                T.copy(A[row:row + rows, by * 2 * block_N:(by * 2 + 1) * block_N], a_even)
                T.tile.mul(a_even, a_even, inv_tile)
                T.copy(a_even, B[row:row + rows, by * 2 * block_N:(by * 2 + 1) * block_N])
                T.copy(A[row:row + rows, (by * 2 + 1) * block_N:(by * 2 + 2) * block_N], a_odd)
                T.tile.mul(a_odd, a_odd, inv_tile)
                T.copy(a_odd, B[row:row + rows, (by * 2 + 1) * block_N:(by * 2 + 2) * block_N])

    return main


@needs_tile_cpu
def test_rms_norm():
    func = rms_norm(32, 128, 16, 32)
    a = np.random.default_rng(14).standard_normal((32, 128)).astype(np.float32)
    b = np.asarray(func(a))
    ref = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(b, ref, rtol=1e-4, atol=1e-5)


# --- examples/topk_selector/example_topk_selector.py: a row per vector core --

@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def topk_selector(B, N, top_k, block_N, dtype="float32"):
    b_num = T.ceildiv(B, 2)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(x: T.Tensor([B, N], dtype), indices: T.Tensor([B, top_k], "int32")):
        with T.Kernel(b_num, is_npu=True) as (cid, vid):
            row_id = (cid * 2 + vid) % B
            x_ub = T.alloc_ub([block_N], dtype)
            scores = T.alloc_ub([N], dtype)
            pairs = T.alloc_ub([2 * top_k], dtype)
            index_f = T.alloc_ub([top_k], dtype)
            index_i = T.alloc_ub([top_k], "int32")
            for bn in T.serial(n_num):
                T.copy(x[row_id, bn * block_N], x_ub)
                for i in range(block_N):
                    scores[bn * block_N + i] = x_ub[i]
            T.tile.topk(pairs, scores, top_k, N)
            T.tile.gather_mask(index_f, pairs, "P1010")  # (value, index) pairs -> index
            T.tile.cast(index_i, index_f, "CAST_ROUND", top_k)
            T.copy(index_i, indices[row_id, :top_k])

    return main


@needs_tile_cpu
def test_topk_selector():
    func = topk_selector(4, 64, 8, 16)
    x = np.random.default_rng(15).standard_normal((4, 64)).astype(np.float32)
    got = np.asarray(func(x))
    ref = np.argsort(-x, axis=1, kind="stable")[:, :8]
    np.testing.assert_array_equal(got, ref)


# --- examples/lightning_indexer/example_lightning_indexer.py ----------------
# The cube writes relu(Q K^T) for every head into a workspace, the vector
# cores weight and sum the heads and keep the top-k keys of each query.

@tilelang.jit(out_idx=[-1], workspace_idx=[-3], pass_configs=pass_configs)
def indexer(B, N2, G, S1, S2, D, TOP_K, VEC_N, VEC_G, BLOCK_M, BLOCK_N, BLOCK_K,
            input_dtype="float16", calc_dtype="float"):
    @T.prim_func
    def main(Query: T.Tensor((B, S1, N2, G * D), input_dtype),
             Key: T.Tensor((B, S2, N2, D), input_dtype),
             QK: T.Tensor((B, N2, S1, G, S2), calc_dtype),
             Weights: T.Tensor((B, S1, N2, G), calc_dtype),
             Out: T.Tensor((B, N2, S1, TOP_K), "int")):
        per_core = N2 * S1 // 2
        with T.Kernel(B * N2, is_npu=True) as (cid, vid):
            n2_id = cid % N2
            with T.Scope("C"):
                q_l1 = T.alloc_L1((BLOCK_M, BLOCK_K), input_dtype)
                k_l1 = T.alloc_L1((BLOCK_N, BLOCK_K), input_dtype)
                c_l0 = T.alloc_L0C((BLOCK_M, BLOCK_N), calc_dtype)
                for n2 in T.serial(N2):
                    for g in T.serial(G):
                        for m in T.serial(S1 // BLOCK_M):
                            for n in T.serial(S2 // BLOCK_N):
                                T.copy(Query[cid, m * BLOCK_M:(m + 1) * BLOCK_M, n2,
                                             g * D:(g + 1) * D], q_l1)
                                T.copy(Key[cid, n * BLOCK_N:(n + 1) * BLOCK_N, n2, 0:D], k_l1)
                                T.gemm_v0(q_l1, k_l1, c_l0, transpose_B=True, init=True)
                                T.copy(c_l0, QK[cid, n2, m * BLOCK_M:(m + 1) * BLOCK_M, g,
                                                n * BLOCK_N:(n + 1) * BLOCK_N], enable_relu=True)
                T.set_cross_flag("FIX", 0)
            with T.Scope("V"):
                qk_ub = T.alloc_ub((VEC_G, VEC_N), calc_dtype)
                w_ub = T.alloc_ub(VEC_G, calc_dtype)
                acc_ub = T.alloc_ub((VEC_G, VEC_N), calc_dtype)
                sum_g = T.alloc_ub(VEC_N, calc_dtype)
                scores = T.alloc_ub(S2, calc_dtype)
                pairs = T.alloc_ub(2 * TOP_K, calc_dtype)
                index_f = T.alloc_ub(TOP_K, calc_dtype)
                index_i = T.alloc_ub(TOP_K, "int")
                T.wait_cross_flag(0)
                for s1_id in T.serial(vid * per_core, vid * per_core + per_core):
                    for s2_id in T.serial(S2 // VEC_N):
                        T.tile.fill(acc_ub, 0)
                        T.tile.fill(sum_g, 0)
                        for g_id in T.serial(G // VEC_G):
                            T.copy(QK[cid, n2_id, s1_id, g_id * VEC_G:(g_id + 1) * VEC_G,
                                      s2_id * VEC_N:(s2_id + 1) * VEC_N], qk_ub)
                            T.copy(Weights[cid, s1_id, n2_id, g_id * VEC_G:(g_id + 1) * VEC_G],
                                   w_ub)
                            for i in range(VEC_G):
                                T.tile.mul(qk_ub[i, :], qk_ub[i, :], w_ub[i])
                            T.tile.add(acc_ub, qk_ub, acc_ub)
                        T.reduce_sum(acc_ub, sum_g, 0)
                        for i in range(VEC_N):
                            scores[s2_id * VEC_N + i] = sum_g[i]
                    T.tile.topk(pairs, scores, TOP_K, S2)
                    T.tile.gather_mask(index_f, pairs, "P1010")
                    T.tile.cast(index_i, index_f, "CAST_ROUND", TOP_K)
                    T.copy(index_i, Out[cid, n2_id, s1_id, 0:TOP_K])

    return main


@needs_tile_cpu
def test_lightning_indexer():
    B, N2, G, S1, S2, D, TOP_K = 2, 1, 4, 4, 32, 16, 8
    func = indexer(B, N2, G, S1, S2, D, TOP_K, 16, 2, 4, 16, 16)
    rng = np.random.default_rng(16)
    q = rng.standard_normal((B, S1, N2, G * D)).astype(np.float16)
    k = rng.standard_normal((B, S2, N2, D)).astype(np.float16)
    w = rng.standard_normal((B, S1, N2, G)).astype(np.float32)
    out = np.asarray(func(q, k, w))
    qf = q.astype(np.float32).reshape(B, S1, N2, G, D)
    score = np.maximum(np.einsum("bsmgd,btmd->bmsgt", qf, k.astype(np.float32)), 0)
    reduced = (score * w.transpose(0, 2, 1, 3)[..., None]).sum(axis=3)  # [B, N2, S1, S2]
    ref = np.argsort(-reduced, axis=-1, kind="stable")[..., :TOP_K]
    np.testing.assert_array_equal(out, ref)


# --- examples/linear_attention_and_rnn/linear_attention_normalize.py --------
# Two kernels: K^T V (cube) and the column sums of K (vector cores) into
# Acc; then Q Acc (cube, through a workspace) over Q . sum(K) (vector).

@tilelang.jit(out_idx=[-1], pass_configs=pass_configs)
def linear_attention_kv(B, H, L, D, block_L, block_D, dtype="float16", accum_dtype="float"):
    lb_num, db_num = T.ceildiv(L, block_L), T.ceildiv(D, block_D)
    cols = block_D // 2

    @T.prim_func
    def main(K: T.Tensor([B, H, L, D], dtype), V: T.Tensor([B, H, L, D], dtype),
             Acc: T.Tensor([B, H, D + 1, D], dtype)):  # rows 0..D-1: K^T V; row D: 1^T K
        with T.Kernel(B * H * db_num, is_npu=True) as (cid, vid):
            bx = cid % db_num
            by = (cid // db_num) % H
            bz = (cid // db_num) // H
            k_l1 = T.alloc_L1([block_L, block_D], dtype)
            v_l1 = T.alloc_L1([block_L, D], dtype)
            acc_l0 = T.alloc_L0C([block_D, D], accum_dtype)
            k_half = T.alloc_ub([block_L, cols], dtype)
            k_ub = T.alloc_ub([block_L, cols], accum_dtype)
            sumk = T.alloc_ub([cols], accum_dtype)
            acc_half = T.alloc_ub([cols], dtype)
            acc_ub = T.alloc_ub([cols], accum_dtype)
            with T.Scope("C"):
                for i in T.serial(lb_num):
                    T.copy(K[bz, by, i * block_L, bx * block_D], k_l1)
                    T.copy(V[bz, by, i * block_L, 0], v_l1)
                    T.gemm_v0(k_l1, v_l1, acc_l0, transpose_A=True, init=(i == 0))
                T.copy(acc_l0, Acc[bz, by, bx * block_D, 0])
            with T.Scope("V"):
                T.tile.fill(acc_ub, 0.0)
                for i in T.serial(lb_num):
                    T.copy(K[bz, by, i * block_L, bx * block_D + vid * cols], k_half)
                    T.copy(k_half, k_ub)
                    T.reduce_sum(k_ub, sumk, dim=0)
                    T.tile.add(acc_ub, acc_ub, sumk)
                T.copy(acc_ub, acc_half)
                T.copy(acc_half, Acc[bz, by, D, bx * block_D + vid * cols])

    return main


@tilelang.jit(out_idx=[-1], workspace_idx=[-2], pass_configs=pass_configs)
def linear_attention_out(B, H, L, D, block_L, block_D, dtype="float16", accum_dtype="float"):
    lb_num, db_num = T.ceildiv(L, block_L), T.ceildiv(D, block_D)
    rows = block_L // 2

    @T.prim_func
    def main(Q: T.Tensor([B, H, L, D], dtype), Acc: T.Tensor([B, H, D + 1, D], dtype),
             ws: T.Tensor([B * H * lb_num, block_L, D], accum_dtype),
             O: T.Tensor([B, H, L, D], dtype)):
        with T.Kernel(B * H * lb_num, is_npu=True) as (cid, vid):
            bx = cid % lb_num
            by = (cid // lb_num) % H
            bz = (cid // lb_num) // H
            q_l1 = T.alloc_L1([block_L, block_D], dtype)
            acc_l1 = T.alloc_L1([block_D, D], dtype)
            o_l0 = T.alloc_L0C([block_L, D], accum_dtype)
            q_half = T.alloc_ub([rows, D], dtype)
            q_ub = T.alloc_ub([rows, D], accum_dtype)
            qkv_ub = T.alloc_ub([rows, D], accum_dtype)
            sum_half = T.alloc_ub([D], dtype)
            sum_ub = T.alloc_ub([D], accum_dtype)
            denom = T.alloc_ub([rows], accum_dtype)
            o_half = T.alloc_ub([rows, D], dtype)
            o_ub = T.alloc_ub([rows, D], accum_dtype)
            with T.Scope("C"):
                for i in T.serial(db_num):
                    T.copy(Q[bz, by, bx * block_L, i * block_D], q_l1)
                    T.copy(Acc[bz, by, i * block_D, 0], acc_l1)
                    T.gemm_v0(q_l1, acc_l1, o_l0, init=(i == 0))
                T.copy(o_l0, ws[cid, 0, 0])
                T.set_cross_flag("FIX", 0)
            with T.Scope("V"):
                T.copy(Q[bz, by, bx * block_L + vid * rows, 0], q_half)
                T.copy(Acc[bz, by, D, 0], sum_half)
                T.copy(q_half, q_ub)
                T.copy(sum_half, sum_ub)
                for h_i in range(rows):
                    T.tile.mul(q_ub[h_i, :], q_ub[h_i, :], sum_ub)
                T.reduce_sum(q_ub, denom, dim=-1)
                T.wait_cross_flag(0)
                T.copy(ws[cid, vid * rows, 0], qkv_ub)
                for h_i in range(rows):
                    T.tile.div(o_ub[h_i, :], qkv_ub[h_i, :], denom[h_i])
                T.copy(o_ub, o_half)
                T.copy(o_half, O[bz, by, bx * block_L + vid * rows, 0])

    return main


@needs_tile_cpu
def test_linear_attention_normalized():
    B, H, L, D = 1, 2, 32, 32
    rng = np.random.default_rng(17)
    q, k, v = (rng.standard_normal((B, H, L, D)).astype(np.float16) for _ in range(3))
    q, k = np.abs(q), np.abs(k)
    acc = np.asarray(linear_attention_kv(B, H, L, D, 16, 16)(k, v))
    o = np.asarray(linear_attention_out(B, H, L, D, 16, 16)(q, acc)).astype(np.float32)
    qf, kf, vf = (x.astype(np.float32) for x in (q, k, v))
    ref = np.einsum("bhld,bhdv->bhlv", qf, np.einsum("bhlk,bhlv->bhkv", kf, vf))
    ref /= np.einsum("bhld,bhd->bhl", qf, kf.sum(axis=2))[..., None]
    np.testing.assert_allclose(o, ref, rtol=2e-2, atol=2e-2)

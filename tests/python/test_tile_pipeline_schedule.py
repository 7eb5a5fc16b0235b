"""TileLang's T.Pipelined(order=, stage=, group=) (Note [Scheduled
pipelines] in src/backend/cuda/pipeline_schedule.h): the schedule is
checked against the loop's body at the user's line; on sm_90a a
warp-specialised loop runs its groups in the given order, one iteration
apart, with its gemms left running until a statement needs them; the
results are the program's on every target; a schedule that would change
the program's meaning is not applied and the report says why."""

import re

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()
_HOPPER = ["--gpu-architecture=sm_90a"]
LOG2E = 1.44269504

# TileLang's example_mha_fwd_bshd_wgmma_pipelined.py: Q K^T of iteration k
# (order 0), then the rescale and P V of k - 1 (stage 1), then the softmax
# of k.
FLASH = dict(order=[-1, 0, 3, 1, -1, 2], stage=[-1, 0, 0, 1, -1, 1],
             group=[[0], [1, 2], [3, 4, 5, 6, 7, 8, 9, 10], [11], [12], [13]])


def flash(batch, heads, seq_len, dim, schedule, block=64, dtype="float16", threads=128,
          causal=False):
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = [batch, seq_len, heads, dim]
    acc = "float32"

    @T.prim_func
    def attention(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype),
                  V: T.Tensor(shape, dtype), O: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared([block, dim], dtype)
            K_s = T.alloc_shared([block, dim], dtype)
            V_s = T.alloc_shared([block, dim], dtype)
            s = T.alloc_fragment([block, block], acc)
            p = T.alloc_fragment([block, block], dtype)
            o = T.alloc_fragment([block, dim], acc)
            m = T.alloc_fragment([block], acc)
            m_prev = T.alloc_fragment([block], acc)
            r = T.alloc_fragment([block], acc)
            total = T.alloc_fragment([block], acc)
            lsum = T.alloc_fragment([block], acc)
            T.copy(Q[bz, bx * block:(bx + 1) * block, by, :], Q_s)
            T.fill(o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity(acc))
            # (causal: the blocks up to the diagonal, which leave no row all masked)
            steps = T.min(T.ceildiv(seq_len, block), bx + 1) if causal else T.ceildiv(seq_len, block)
            for k in T.Pipelined(steps, num_stages=2, **schedule):
                T.copy(K[bz, k * block:(k + 1) * block, by, :], K_s)
                if causal:
                    for i, j in T.Parallel(block, block):
                        s[i, j] = T.if_then_else(bx * block + i >= k * block + j, 0,
                                                 -T.infinity(acc))
                else:
                    T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity(acc))
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block, block):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.reduce_sum(s, total, dim=1)
                for i in T.Parallel(block):
                    lsum[i] = lsum[i] * r[i] + total[i]
                T.copy(s, p)
                for i, j in T.Parallel(block, dim):
                    o[i, j] *= r[i]
                T.copy(V[bz, k * block:(k + 1) * block, by, :], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block, dim):
                o[i, j] /= lsum[i]
            T.copy(o, O[bz, bx * block:(bx + 1) * block, by, :])
    return attention


def reference(q, k, v, causal=False):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v)


def pipelined(kernel):
    [loop] = [e for e in kernel.lowering_report()
              if e.get("kind") == "op" and e["op"] == "T.Pipelined"]
    return loop


@on_targets
@pytest.mark.parametrize("seq_len", [64, 256])
def test_a_scheduled_flash_attention_computes_the_program(target, seq_len):
    rng = np.random.default_rng(seq_len)
    q, k, v = (rng.standard_normal((2, seq_len, 2, 64)).astype(np.float16) for _ in range(3))
    kernel = tilejit.compile(flash(2, 2, seq_len, 64, FLASH), out_idx=[3], target=target)
    o = as_numpy(kernel(*(to_target(target, x) for x in (q, k, v))))
    np.testing.assert_allclose(o.astype(np.float64), reference(q, k, v), atol=2e-2, rtol=2e-2)


@on_targets
@pytest.mark.parametrize("seq_len", [128, 384])
def test_two_warpgroups_in_ping_pong_compute_the_program(target, seq_len):
    """128-row blocks over two consumer warpgroups, which take turns at
    their gemms on CUDA (Note [Warpgroup ping-pong]): one iteration (the
    first and last turns only) and three."""
    rng = np.random.default_rng(seq_len)
    q, k, v = (rng.standard_normal((2, seq_len, 2, 64)).astype(np.float16) for _ in range(3))
    kernel = tilejit.compile(flash(2, 2, seq_len, 64, FLASH, block=128, threads=256),
                             out_idx=[3], target=target)
    o = as_numpy(kernel(*(to_target(target, x) for x in (q, k, v))))
    np.testing.assert_allclose(o.astype(np.float64), reference(q, k, v), atol=2e-2, rtol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_two_warpgroups_take_turns_at_their_gemms():
    kernel = tilejit.compile(flash(1, 2, 512, 64, FLASH, block=128, threads=256), out_idx=[3],
                             target="cuda", extra_compile_flags=_HOPPER)
    assert pipelined(kernel)["path"] == ("warp_specialized, 2 stages, scheduled (order, stage), "
                                         "warpgroups in ping-pong")
    src = kernel.get_kernel_source()
    assert src.count("wg_turn_first();") == 1
    steady = src.split("for (int64_t k = 0 + 1;")[1].split("const int64_t k_last")[0]
    # The turn: from before Q K^T of k to after P V of k - 1; the softmax
    # runs outside it.
    wait, qk = steady.index("wg_turn_wait();"), steady.index("acc_gemm_wg_issue<")
    pv, hand = steady.index("acc_gemm_wg_rs_issue<"), steady.index("wg_turn_pass(false);")
    assert wait < qk < pv < hand < steady.index("T.reduce_max"), steady
    # Warpgroup 1 hands over after every turn but its last.
    last = src.split("const int64_t k_last")[1]
    assert "wg_turn_pass(true);" in last
    # One warpgroup of consumers: no turns.
    one = tilejit.compile(flash(1, 2, 512, 64, FLASH, block=64, threads=128), out_idx=[3],
                          target="cuda", extra_compile_flags=_HOPPER)
    assert "wg_turn" not in one.get_kernel_source()
    assert "ping-pong" not in pipelined(one)["path"]


@on_targets
def test_two_warpgroups_in_ping_pong_compute_a_causal_program(target):
    """Causal attention's mask is a condition decided per block on CUDA
    (Note [Conditions decided per block]): both warpgroups take its branch,
    so they keep taking turns."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 384, 2, 64)).astype(np.float16) for _ in range(3))
    kernel = tilejit.compile(flash(1, 2, 384, 64, FLASH, block=128, threads=256, causal=True),
                             out_idx=[3], target=target)
    o = as_numpy(kernel(*(to_target(target, x) for x in (q, k, v))))
    np.testing.assert_allclose(o.astype(np.float64), reference(q, k, v, causal=True),
                               atol=2e-2, rtol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_warpgroups_take_turns_across_a_branch_decided_per_block():
    kernel = tilejit.compile(flash(1, 2, 512, 64, FLASH, block=128, threads=256, causal=True),
                             out_idx=[3], target="cuda", extra_compile_flags=_HOPPER)
    assert pipelined(kernel)["path"] == ("warp_specialized, 2 stages, scheduled (order, stage), "
                                         "warpgroups in ping-pong")
    src = kernel.get_kernel_source()
    steady = src.split("for (int64_t k = 0 + 1;")[1].split("const int64_t k_last")[0]
    assert "if (" in steady.split("wg_turn_wait();")[0], steady  # the mask's branch


@on_targets
def test_an_inferred_schedule_computes_the_program(target):
    """Note [Inferred schedules]: TileLang's flash attention as written, at
    head dim 128 and 16 iterations, runs on CUDA in FlashAttention-3's
    order."""
    rng = np.random.default_rng(16)
    q, k, v = (rng.standard_normal((1, 2048, 1, 128)).astype(np.float16) for _ in range(3))
    kernel = tilejit.compile(flash(1, 1, 2048, 128, {}, block=128, threads=256), out_idx=[3],
                             target=target)
    o = as_numpy(kernel(*(to_target(target, x) for x in (q, k, v))))
    np.testing.assert_allclose(o.astype(np.float64), reference(q, k, v), atol=2e-2, rtol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_flash_attention_without_a_schedule_gets_flash_attention_3s():
    kernel = tilejit.compile(flash(1, 2, 2048, 128, {}, block=128, threads=256), out_idx=[3],
                             target="cuda", extra_compile_flags=_HOPPER)
    assert pipelined(kernel)["path"] == ("warp_specialized, 2 stages, scheduled (inferred), "
                                         "warpgroups in ping-pong")
    src = kernel.get_kernel_source()
    steady = src.split("for (int64_t k = 0 + 1;")[1].split("const int64_t k_last")[0]
    qk = steady.index("acc_gemm_wg_issue<")
    pv = steady.index("acc_gemm_wg_rs_issue<")
    assert qk < pv < steady.index(", 1>(s);") < steady.index("T.reduce_max"), steady
    # Where it does not pay: head dim 64 (128 multiply-adds per score), a
    # loop of 8 iterations, a body with a branch (the causal mask's cases);
    # there the loop keeps the program's order, and the report says why.
    for seq_len, dim, causal, why in (
            (2048, 64, False, "its gemms do 128 multiply-adds per score, under 256"),
            (1024, 128, False, "the loop runs 8 iterations at most, under 16"),
            (2048, 128, True, "the body has a branch, which a prologue would compile again")):
        plain = tilejit.compile(flash(1, 2, seq_len, dim, {}, block=128, threads=256,
                                      causal=causal),
                                out_idx=[3], target="cuda", extra_compile_flags=_HOPPER)
        loop = pipelined(plain)
        assert loop["path"] == "warp_specialized, 2 stages", loop
        assert loop["reason"] == ("FlashAttention-3's order not inferred: " + why +
                                  " (T.Pipelined's order=, stage=, group= ask for it)"), loop
        assert "k_previous" not in plain.get_kernel_source()
    assert pipelined(kernel)["reason"] == ""  # inferred: nothing to say


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_the_schedule_runs_p_v_of_the_last_iteration_beside_the_next_softmax():
    kernel = tilejit.compile(flash(1, 2, 256, 64, FLASH), out_idx=[3], target="cuda",
                             extra_compile_flags=_HOPPER)
    loop = pipelined(kernel)
    assert loop["path"] == "warp_specialized, 2 stages, scheduled (order, stage)", loop
    src = kernel.get_kernel_source()
    steady = src.split("for (int64_t k = 0 + 1;")[1].split("const int64_t k_last")[0]
    # Q K^T of k, then P V of k - 1, both left running; the softmax waits for
    # Q K^T alone, and for P V only where it writes P.
    qk = steady.index("acc_gemm_wg_issue<")
    pv = steady.index("acc_gemm_wg_rs_issue<")
    qk_done = steady.index(", 1>(s);")
    pv_done = steady.index(", 0>(o);")
    assert qk < pv < qk_done < steady.index("T.reduce_max") < pv_done < steady.index(
        "// T.copy(s[0:64, 0:64], p[0:64, 0:64])"), steady
    assert "mbar_wait(&V_s_landed[(k_previous - 0) % 2]" in steady
    # The stages: K of k handed back once Q K^T is done, V of k - 1 once P V is.
    assert steady.index("mbar_arrive(&K_s_free[(k - 0) % 2]);") > qk_done
    assert steady.index("mbar_arrive(&V_s_free[(k_previous - 0) % 2]);") > pv_done


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_a_schedule_that_changes_the_meaning_is_not_applied():
    # The softmax (statements 3-10) before the gemm that computes its input.
    wrong = dict(order=[-1, 1, 0, 2, -1, 3], stage=[-1, 0, 0, 0, -1, 0], group=FLASH["group"])
    kernel = tilejit.compile(flash(1, 2, 256, 64, wrong), out_idx=[3], target="cuda",
                             extra_compile_flags=_HOPPER)
    loop = pipelined(kernel)
    assert loop["path"] == "warp_specialized, 2 stages", loop
    assert ("order/stage not applied: it runs statement 3 before statement 1, and they touch "
            "the same buffer") in loop["reason"], loop
    ampere = tilejit.compile(flash(1, 2, 256, 64, FLASH), out_idx=[3], target="cuda",
                             extra_compile_flags=["--gpu-architecture=compute_80"])
    assert "order/stage not applied: the loop is not warp-specialised" in \
        pipelined(ampere)["reason"], pipelined(ampere)


@pytest.mark.parametrize("schedule,message", [
    (dict(order=[-1, 0, 3, 1, -1, 2], stage=[-1, 0, 0, 1, -1, 1],
          group=[[0], [1, 2], [3, 4, 5, 6, 7, 8, 9], [11], [12], [13]]),
     "group= must list the body's statements 0..13 once each, in order"),
    (dict(order=[-1, 0, 3, 1, -1, 1], stage=FLASH["stage"], group=FLASH["group"]),
     "the orders of the groups that are not prefetches must be 0..3, each once"),
    (dict(order=[0, 0, 3, 1, -1, 2], stage=FLASH["stage"], group=FLASH["group"]),
     "group 0 has order 0 and stage -1: -1 goes with -1 (a prefetch)"),
    (dict(order=[-1, 0, 3, 1, -1, 2], stage=[-1, 0, 0, 1, -1], group=FLASH["group"]),
     "order= and stage= must be lists of the same length, got 6 and 5 entries"),
    (dict(order=[0, 1]), "T.Pipelined: order= and stage= go together"),
    (dict(order=[0, 1], stage=[0, "1"]), "T.Pipelined: stage= must be a list of ints"),
])
def test_a_schedule_that_does_not_fit_the_body_is_an_error_at_its_line(schedule, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)) as e:
        tilejit.compile(flash(1, 2, 128, 64, schedule), out_idx=[3], target="cpu")
    assert "test_tile_pipeline_schedule.py" in str(e.value)

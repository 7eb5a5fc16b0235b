"""A producer warpgroup for the TMA loads of a pipelined loop (Note [Warp
specialisation] in src/backend/cuda/warp_specialize.h): on sm_90a the
block gets 128 more threads that only issue the loop's TMA copies, and the
kernel's own threads wait for each stage on an mbarrier and hand it back on
another. The results are the program's on every target; the lowering
report names the split, or says why a TMA loop keeps its loads; TileLang's
tl.disable_warp_specialized turns it off."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()
_HOPPER = ["--gpu-architecture=sm_90a"]


def gemm(m, n, k, block_m=128, block_n=128, block_k=64, stages=3, threads=256):
    @T.prim_func
    def ws_gemm(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_m, bx * block_n])
    return ws_gemm


def operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def pipelined(kernel):
    return [e for e in kernel.lowering_report()
            if e.get("kind") == "op" and e["op"] == "T.Pipelined"]


@on_targets
@pytest.mark.parametrize("threads,shape", [(256, (256, 256, 256)), (256, (200, 136, 200)),
                                           (128, (192, 72, 320))])
def test_gemm_with_a_producer_warpgroup(target, threads, shape):
    m, n, k = shape
    a, b, ref = operands(m, n, k)
    kernel = tilejit.compile(gemm(m, n, k, threads=threads), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_the_report_and_the_source_name_the_producer():
    k = tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER)
    [loop] = pipelined(k)
    assert loop["path"] == "warp_specialized, 3 stages", loop
    src = k.get_kernel_source()
    assert "__launch_bounds__(384, 1)" in src
    assert "tilejit::cuda::set_registers<false, 24>();" in src
    assert "tilejit::cuda::set_registers<true, 240>();" in src
    # The loads are the producer's alone: A's tile in one box of 128-byte
    # rows, B's in two.
    assert src.count("tilejit::cuda::tma_load(") == 1 + 2, src
    assert "__syncthreads();" not in src.split("set_registers<true, 240>();")[1]
    # Before Hopper, no producer.
    k80 = tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                          extra_compile_flags=["--gpu-architecture=compute_80"])
    assert pipelined(k80)[0]["path"] == "pipelined, 3 stages"
    assert "set_registers" not in k80.get_kernel_source()


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_a_large_gemm_tile_keeps_its_gemm_running_across_iterations():
    """128 x 256 x 64 in 3 stages: the main loop leaves each gemm running and
    hands back the stage of the one before; the last is waited for after the
    loop. A 128 x 128 x 64 tile (above) or 2 stages keep each gemm's wait,
    since the loads would run a stage less ahead."""
    k = tilejit.compile(gemm(256, 512, 256, block_n=256), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER)
    [loop] = pipelined(k)
    assert loop["path"] == "warp_specialized, 3 stages, gemm kept in flight", loop
    body = k.get_kernel_source().split("for (int64_t ko = 0;")[1]
    assert body.index("acc_gemm_wg_issue<") < body.index(", 1>(C_f);") < body.index(
        "mbar_arrive(") < body.index(", 0>(C_f);  // the loop's last gemm"), body
    two = tilejit.compile(gemm(256, 512, 256, block_n=256, stages=2), out_idx=[2],
                          target="cuda", extra_compile_flags=_HOPPER)
    assert pipelined(two)[0]["path"] == "warp_specialized, 2 stages", pipelined(two)


@on_targets
def test_a_gemm_kept_running_computes_the_product(target):
    m, n, k = 256, 512, 320
    a, b, ref = operands(m, n, k)
    kernel = tilejit.compile(gemm(m, n, k, block_n=256), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


def gemm_then_scale(m, n, k, block=128, block_k=64):
    """The accumulator read in the loop after its gemm: the gemm is waited for."""

    @T.prim_func
    def scaled(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
               C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float16")
            B_s = T.alloc_shared((block_k, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
                for i, j in T.Parallel(block, block):
                    C_f[i, j] *= 0.5
            T.copy(C_f, C[by * block, bx * block])
    return scaled


@on_targets
def test_an_accumulator_read_in_the_loop_waits_for_its_gemm(target):
    m, n, k = 256, 128, 256
    a, b, _ = operands(m, n, k)
    ref = np.zeros((m, n), np.float32)
    for ko in range(k // 64):
        ref = (ref + a[:, ko * 64:(ko + 1) * 64].astype(np.float32) @
               b[ko * 64:(ko + 1) * 64].astype(np.float32)) * 0.5
    kernel = tilejit.compile(gemm_then_scale(m, n, k), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_a_gemm_whose_accumulator_the_loop_reads_is_not_left_running():
    k = tilejit.compile(gemm_then_scale(256, 128, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER)
    [loop] = pipelined(k)
    assert loop["path"] == "warp_specialized, 2 stages", loop
    src = k.get_kernel_source()
    assert "acc_gemm_wg<" in src and "acc_gemm_wg_issue" not in src


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_tl_disable_warp_specialized_keeps_the_loads_in_the_kernel():
    k = tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER,
                        pass_configs={tilejit.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
    [loop] = pipelined(k)
    assert loop["path"] == "pipelined, 3 stages", loop
    assert loop["reason"] == "not warp-specialised: turned off (tl.disable_warp_specialized)"
    src = k.get_kernel_source()
    assert "tma_load(" in src and "set_registers" not in src
    assert "__launch_bounds__(256)" in src
    with pytest.raises(TypeError, match="must be a bool"):
        tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        pass_configs={"tl.disable_warp_specialized": "yes"})


def gemm_in_halves(m, n, k, block=64, block_k=32):
    """The pipelined loop inside another loop: it runs twice per block."""

    @T.prim_func
    def halves(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
               C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float16")
            B_s = T.alloc_shared((block_k, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            T.clear(C_f)
            for h in range(2):
                for ko in T.Pipelined(k // block_k // 2, num_stages=2):
                    T.copy(A[by * block, (h * (k // block_k // 2) + ko) * block_k], A_s)
                    T.copy(B[(h * (k // block_k // 2) + ko) * block_k, bx * block], B_s)
                    T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])
    return halves


def gemm_from_a_local_offset(m, n, k, block=64, block_k=32):
    """A region that reads a value the kernel stores: the producer cannot
    compute it."""

    @T.prim_func
    def local_offset(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                     C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float16")
            B_s = T.alloc_shared((block_k, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            row = T.alloc_local((1,), "int32")
            row[0] = by * block
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[row[0], ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])
    return local_offset


@on_targets
@pytest.mark.parametrize("program,why", [
    (gemm_in_halves, "not warp-specialised: the loop is inside another loop or a branch"),
    (gemm_from_a_local_offset,
     "not warp-specialised: the region of the copy at line {line} reads 'row', which the "
     "kernel writes"),
])
def test_a_loop_the_producer_cannot_run_alone_keeps_its_loads(target, program, why):
    m, n, k = 128, 128, 256
    a, b, ref = operands(m, n, k, seed=3)
    kernel = tilejit.compile(program(m, n, k), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)
    if target != "cuda":
        return
    hopper = tilejit.compile(program(m, n, k), out_idx=[2], target="cuda",
                             extra_compile_flags=_HOPPER)
    copies = [e for e in hopper.lowering_report() if e.get("kind") == "op" and e["op"] == "T.copy"]
    assert any(e["path"] == "tma_load" for e in copies), copies
    [loop] = pipelined(hopper)
    line = next(e["line"] for e in copies if e["path"] == "tma_load")
    assert loop["path"] == "pipelined, 2 stages", loop
    assert loop["reason"] == why.format(line=line), loop


def gemm_row_sums(m, n, k, block_m=64, block_n=128, block_k=64):
    """Two warpgroups side by side along N: the row sums of the accumulator
    meet in shared memory behind the consumers' barrier (block_sync), which
    the producer never reaches."""

    @T.prim_func
    def row_sums(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                 S: T.Tensor((m, T.ceildiv(n, block_n)), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=256) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            s_f = T.alloc_fragment((block_m,), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f)
                T.reduce_sum(C_f, s_f, dim=1)
            for i in T.Parallel(block_m):
                S[by * block_m + i, bx] = s_f[i]
    return row_sums


@on_targets
def test_reductions_across_warpgroups_in_the_consumers(target):
    m, n, k = 128, 256, 192
    a, b, ref = operands(m, n, k, seed=7)
    kernel = tilejit.compile(gemm_row_sums(m, n, k), out_idx=[2], target=target)
    s = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(s, ref.reshape(m, 2, 128).sum(axis=2), rtol=2e-2, atol=5e-2)
    if target == "cuda" and "tma_load" in kernel.get_kernel_source():
        assert pipelined(kernel)[0]["path"] == "warp_specialized, 2 stages"

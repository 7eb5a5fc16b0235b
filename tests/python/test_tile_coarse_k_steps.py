"""Two K steps per stage (Note [Coarser K steps] in
src/backend/cuda/coarse_k_steps.h): on sm_90a a warp-specialised GEMM main
loop whose K step covers 64 bytes (TileLang's README GEMM, block_K = 32)
runs two of the program's iterations per iteration. The products are the
program's bit for bit, with the step kept as written
(tl.disable_coarse_k_steps) and against a float32 reference; the report
says which."""

import warnings

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import ml_dtypes, tilejit_cuda_unavailable

_NO_CUDA = tilejit_cuda_unavailable()
_KEEP = {"tl.disable_coarse_k_steps": True}


def gemm(m, n, k, dtype, trans_b=False, block_k=32, c_dtype="float32", swizzle=0):
    b_shape = (n, k) if trans_b else (k, n)
    b_tile = (128, block_k) if trans_b else (block_k, 128)

    @T.prim_func
    def readme_gemm(A: T.Tensor((m, k), dtype), B: T.Tensor(b_shape, dtype),
                    C: T.Tensor((m, n), c_dtype)):
        with T.Kernel(T.ceildiv(n, 128), T.ceildiv(m, 128), threads=128) as (bx, by):
            if swizzle:
                T.use_swizzle(panel_size=swizzle)
            A_s = T.alloc_shared((128, block_k), dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((128, 128), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=3):
                T.copy(A[by * 128, ko * block_k], A_s)
                if trans_b:
                    T.copy(B[bx * 128, ko * block_k], B_s)
                else:
                    T.copy(B[ko * block_k, bx * 128], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=trans_b)
            T.copy(C_f, C[by * 128, bx * 128])
    return readme_gemm


def operands(m, n, k, dtype, trans_b, seed):
    """A and B on the GPU (B as [N, K] where trans_b), and A @ B in float32."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn(m, k, device="cuda", generator=g).to(tdt)
    b = torch.randn(*((n, k) if trans_b else (k, n)), device="cuda", generator=g).to(tdt)
    return a, b, a.float() @ (b.float().T if trans_b else b.float())


def loop(kernel):
    [entry] = [e for e in kernel.lowering_report()
               if e.get("kind") == "op" and e["op"] == "T.Pipelined"]
    return entry


# Pairs of blocks (bf16, 16 x 16 blocks); a grid of 64 blocks alone whose K
# (1000) ends inside a step, fp16; B as [N, K]; 7 steps, kept.
@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("shape,dtype,trans_b,coarse", [
    ((2048, 2048, 256), "bfloat16", False, True), ((1000, 1000, 1000), "float16", False, True),
    ((1024, 2048, 512), "float16", True, True), ((2048, 2048, 224), "bfloat16", False, False)])
def test_two_steps_per_stage_compute_the_programs_product(shape, dtype, trans_b, coarse):
    import torch
    m, n, k = shape
    a, b, ref = operands(m, n, k, dtype, trans_b, seed=0)
    wide = tilejit.compile(gemm(m, n, k, dtype, trans_b), out_idx=[2], target="cuda")
    kept = tilejit.compile(gemm(m, n, k, dtype, trans_b), out_idx=[2], target="cuda",
                           pass_configs=_KEEP)
    assert ("2 K steps of 32 per stage" in loop(wide)["path"]) == coarse, loop(wide)
    assert "K steps" not in loop(kept)["path"], loop(kept)
    c_wide, c_kept = wide(a, b), kept(a, b)
    assert torch.equal(c_wide, c_kept)
    torch.testing.assert_close(c_wide, ref, rtol=1e-3, atol=1e-2)


# The CPU twin runs the program's own steps; the pass config is accepted
# there (no warning) and changes nothing.
def test_the_pass_config_on_the_cpu():
    if ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known key: no "unknown pass config"
        kernel = tilejit.compile(gemm(128, 256, 64, "bfloat16"), out_idx=[2], target="cpu",
                                 pass_configs=_KEEP)
    c = np.asarray(kernel(a, b))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-2)
    assert tilejit.PassConfigKey.TL_DISABLE_COARSE_K_STEPS == "tl.disable_coarse_k_steps"


"""Pairs of blocks that load a shared tile once (Note [Cluster multicast]
in src/backend/cuda/cluster_multicast.h): on sm_90a a warp-specialised GEMM
of at least 256 blocks whose blocks bx and bx + 1 read the same tile of A
runs in clusters of two, each block loading half of A's rows into both
through TMA multicast. The results are the program's, at the tensors' edges
too; the report names the path; tl.disable_cluster_multicast launches every
block alone."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, ml_dtypes, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()
_HOPPER = ["--gpu-architecture=sm_90a"]
_ALONE = {"tl.disable_cluster_multicast": True}


def gemm(m, n, k, block_m=128, block_n=128, block_k=32, stages=3, threads=128, swizzle=0):
    @T.prim_func
    def cluster_gemm(A: T.Tensor((m, k), "bfloat16"), B: T.Tensor((k, n), "bfloat16"),
                     C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
            if swizzle:
                T.use_swizzle(panel_size=swizzle)
            A_s = T.alloc_shared((block_m, block_k), "bfloat16")
            B_s = T.alloc_shared((block_k, block_n), "bfloat16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_m, bx * block_n])
    return cluster_gemm


def operands(m, n, k, seed=0):
    """bf16 A and B on the GPU, and their product in float32."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda", generator=g).to(torch.bfloat16)
    return a, b, a.float() @ b.float()


def loop(kernel):
    [entry] = [e for e in kernel.lowering_report()
               if e.get("kind") == "op" and e["op"] == "T.Pipelined"]
    return entry


# Shapes (16 x 16 blocks or more): whole tiles; rows of A past M in the
# second half of a shared tile (M = 2000); a K that ends inside a tile
# (200); a grid of 17 columns, paired along y; 256 threads; blocks
# rasterised by T.use_swizzle(10), paired in their column of tiles (B
# shared), and by T.use_swizzle(9), alone; and a grid of 4 blocks, alone.
@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("shape,threads,swizzle,paired", [
    ((2048, 2048, 256), 128, 0, True), ((2000, 2048, 200), 128, 0, True),
    ((2048, 2176, 96), 128, 0, True), ((2048, 2048, 128), 256, 0, True),
    ((2000, 2048, 160), 128, 10, True), ((2048, 2048, 64), 128, 9, False),
    ((256, 256, 128), 128, 0, False)])
def test_pairs_compute_the_product(shape, threads, swizzle, paired):
    target = "cuda"
    m, n, k = shape
    a, b, ref = operands(m, n, k)
    kernel = tilejit.compile(gemm(m, n, k, threads=threads, swizzle=swizzle), out_idx=[2],
                             target=target)
    assert ("__cluster_dims__" in kernel.get_kernel_source()) == paired, shape
    c = kernel(a, b)
    np.testing.assert_allclose(c.cpu().numpy(), ref.cpu().numpy(), rtol=1e-3, atol=1e-2)


# The program's meaning on the CPU twin (no clusters there).
def test_the_program_on_the_cpu():
    if ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 96)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((96, 384)).astype(ml_dtypes.bfloat16)
    kernel = tilejit.compile(gemm(256, 384, 96), out_idx=[2], target="cpu")
    c = as_numpy(kernel(to_target("cpu", a), to_target("cpu", b)))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_the_report_and_the_source_name_the_pair():
    k = tilejit.compile(gemm(2048, 2048, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER)
    # (K = 256: two of the program's K steps per stage, Note [Coarser K steps])
    assert loop(k)["path"] == ("warp_specialized, 3 stages, 2 K steps of 32 per stage, pairs of "
                               "blocks along x"), loop(k)
    copies = [e["path"] for e in k.lowering_report()
              if e.get("kind") == "op" and e["op"] == "T.copy"]
    assert copies[:2] == ["tma_load_multicast", "tma_load"], copies
    src = k.get_kernel_source()
    assert "__cluster_dims__(2, 1, 1)" in src
    alone = tilejit.compile(gemm(2048, 2048, 256), out_idx=[2], target="cuda",
                            extra_compile_flags=_HOPPER, pass_configs=_ALONE)
    assert loop(alone)["path"] == "warp_specialized, 3 stages, 2 K steps of 32 per stage", \
        loop(alone)
    assert "__cluster_dims__" not in alone.get_kernel_source()


def test_the_pass_config_is_known_and_checked():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "unknown pass config" warning
        tilejit.compile(gemm(256, 384, 96), out_idx=[2], target="cpu", pass_configs=_ALONE)
    with pytest.raises(TypeError, match="tl.disable_cluster_multicast.*must be a bool"):
        tilejit.compile(gemm(256, 384, 96), out_idx=[2], target="cpu",
                        pass_configs={"tl.disable_cluster_multicast": "yes"})

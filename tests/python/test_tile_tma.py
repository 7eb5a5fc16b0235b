"""Hopper's TMA for the tile loads of pipelined loops (Note [TMA copies] in
src/backend/cuda/tma_copies.h): on sm_90a a prefetched copy into a
swizzled wgmma operand is one cp.async.bulk.tensor per panel, through a
tensor map the call encodes (Note [Tensor maps]). Tiles at the tensors'
edges (TMA's zero fill), symbolic shapes (the maps' extents are the
call's), the lowering report, a tensor TMA cannot read (an error naming
the argument), and the exported library, which encodes the maps itself."""

import ctypes

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import (DLDataType, DLDevice, DLTensor, as_numpy, on_targets,
                     tilejit_cuda_unavailable, to_target)

_NO_CUDA = tilejit_cuda_unavailable()


def gemm(m, n, k, block_m=64, block_n=64, block_k=32, stages=3):
    """C = A @ B in tiles; m, n, k ints or T.symbolic names."""
    m = T.symbolic(m) if isinstance(m, str) else m
    n = T.symbolic(n) if isinstance(n, str) else n
    k = T.symbolic(k) if isinstance(k, str) else k

    @T.prim_func
    def tma_gemm(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
             C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_m, bx * block_n])
    return tma_gemm


def operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


@on_targets
@pytest.mark.parametrize("shape", [(128, 128, 96), (200, 136, 200), (72, 264, 40)])
def test_gemm_through_tma_at_the_edges(target, shape):
    """Tiles past the tensors' ends read zeros (TMA's fill), as T.copy means."""
    m, n, k = shape
    a, b, ref = operands(m, n, k)
    kernel = tilejit.compile(gemm(m, n, k), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


@on_targets
def test_gemm_through_tma_with_a_symbolic_outer_extent(target):
    """B's extent K is outermost: its tensor map takes the call's K, while
    A's rows of K halves keep cp.async (a loop with both kinds of copy)."""
    kernel = tilejit.compile(gemm("M", 136, "K"), out_idx=[2], target=target)
    for m, k in [(128, 64), (96, 168), (200, 1000)]:
        a, b, ref = operands(m, 136, k, seed=m + k)
        c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
        np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2, err_msg=str((m, k)))


@on_targets
def test_gemm_with_symbolic_rows_keeps_cp_async(target):
    """A symbolic extent inside the outermost makes a row pitch TMA cannot
    rely on (a K of 1001 halves is 2002 bytes): those copies keep cp.async,
    and every shape runs."""
    kernel = tilejit.compile(gemm("M", "N", "K"), out_idx=[2], target=target)
    for m, n, k in [(128, 64, 64), (65, 33, 1001), (1, 1, 1)]:
        a, b, ref = operands(m, n, k, seed=m + n + k)
        c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
        np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2, err_msg=str((m, n, k)))
    if target == "cuda":
        reasons = [e["reason"] for e in kernel.lowering_report()
                   if e.get("kind") == "op" and e["op"] == "T.copy"][:2]
        for r in reasons:
            if r:  # on sm_90a: why not TMA
                assert "which need not be a multiple of 16 bytes" in r, r


def _copy_paths(arch):
    k = tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=[f"--gpu-architecture={arch}"])
    return [(e["path"], e["reason"]) for e in k.lowering_report()
            if e.get("kind") == "op" and e["op"] == "T.copy"], k


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_lowering_report_names_tma_on_hopper_only():
    paths, k = _copy_paths("sm_90a")
    assert paths[:2] == [("tma_load", ""), ("tma_load", "")], paths
    src = k.get_kernel_source()
    assert "tilejit::cuda::TensorMap tmaps[2];" in src
    # One per tile, the producer warpgroup's (Note [Warp specialisation]).
    assert src.count("tilejit::cuda::tma_load(") == 2, src
    ampere, k80 = _copy_paths("compute_80")  # PTX: it loads on a Hopper too
    assert [p for p, _ in ampere[:2]] == ["cp_async", "cp_async"], ampere
    assert "tma_load" not in k80.get_kernel_source()


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_a_copy_tma_cannot_do_says_why():
    """A row of 502 halves (1004 bytes) is not a multiple of 16 bytes: the
    copy of A stays off TMA and the report says why; B's takes TMA."""
    k = tilejit.compile(gemm(256, 256, 502), out_idx=[2], target="cuda",
                        extra_compile_flags=["--gpu-architecture=sm_90a"])
    a_copy, b_copy = [e for e in k.lowering_report()
                      if e.get("kind") == "op" and e["op"] == "T.copy"][:2]
    assert b_copy["path"] == "tma_load", b_copy
    assert a_copy["path"] != "tma_load", a_copy
    assert "not tma: a row of A is 1004 bytes, not a multiple of 16" in a_copy["reason"], a_copy


def _gpu():
    if _NO_CUDA:
        return _NO_CUDA
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return "" if torch.cuda.is_available() else "no GPU"


_NO_GPU = _gpu()


@pytest.mark.skipif(bool(_NO_GPU), reason=_NO_GPU)
def test_a_tensor_tma_cannot_read_fails_the_call_naming_it():
    """A view 2 bytes into its storage is contiguous but not 16-byte
    aligned: the call fails naming the argument, leaving nothing behind."""
    import torch
    kernel = tilejit.compile(gemm("M", 136, 200), out_idx=[2], target="cuda")
    if not any(e.get("path") == "tma_load" for e in kernel.lowering_report()):
        pytest.skip("the device is not sm_90a: no TMA")
    storage = torch.zeros(64 * 200 + 1, dtype=torch.float16, device="cuda")
    a = storage[1:].view(64, 200)
    b = torch.zeros((200, 136), dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError) as e:
        kernel(a, b)
    assert "argument 'A': the kernel reads it through TMA (cp.async.bulk.tensor), which needs " \
           "its address 16-byte aligned" in str(e.value)
    a_ok, b_ok, ref = operands(64, 136, 200)
    c = kernel(torch.from_numpy(a_ok).cuda(), torch.from_numpy(b_ok).cuda())
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=2e-2, atol=2e-2)


def _dltensor(t, code, bits):
    shape = (ctypes.c_int64 * t.dim())(*t.shape)
    d = DLTensor(t.data_ptr(), DLDevice(2, t.device.index or 0), t.dim(),
                 DLDataType(code, bits, 1), shape, None, 0)
    d._shape = shape
    return d


@pytest.mark.skipif(bool(_NO_GPU), reason=_NO_GPU)
def test_the_exported_library_encodes_the_tensor_maps(tmp_path):
    import torch
    kernel = tilejit.compile(gemm("M", 136, 200), out_idx=[2], target="cuda")
    path = tmp_path / "libtma_gemm.so"
    tilejit.export(kernel, path)
    lib = ctypes.CDLL(str(path))
    fn = lib.tma_gemm_auto
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(DLTensor)] * 3 + [ctypes.c_void_p, ctypes.c_void_p]
    lib.tma_gemm_last_error.restype = ctypes.c_char_p
    for m, n, k in [(200, 136, 200), (64, 136, 200)]:
        a, b, ref = operands(m, n, k, seed=m)
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        tc = torch.empty((m, n), dtype=torch.float32, device="cuda")
        A, B, C = _dltensor(ta, 2, 16), _dltensor(tb, 2, 16), _dltensor(tc, 2, 32)
        torch.cuda.synchronize()
        assert fn(ctypes.byref(A), ctypes.byref(B), ctypes.byref(C), None, None) == 0, \
            lib.tma_gemm_last_error()
        torch.cuda.synchronize()
        np.testing.assert_allclose(tc.cpu().numpy(), ref, rtol=2e-2, atol=2e-2)
    storage = torch.zeros(64 * 200 + 1, dtype=torch.float16, device="cuda")
    bad_a = storage[1:].view(64, 200)
    b = torch.zeros((200, 136), dtype=torch.float16, device="cuda")
    out = torch.empty((64, 136), dtype=torch.float32, device="cuda")
    A, B, C = _dltensor(bad_a, 2, 16), _dltensor(b, 2, 16), _dltensor(out, 2, 32)
    if any(e.get("path") == "tma_load" for e in kernel.lowering_report()):
        assert fn(ctypes.byref(A), ctypes.byref(B), ctypes.byref(C), None, None) == 2
        assert "argument 'A': the kernel reads it through TMA" in \
            lib.tma_gemm_last_error().decode()


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_tl_disable_tma_lower_keeps_cp_async():
    """TileLang's pass config turns TMA off, as under TileLang."""
    k = tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        extra_compile_flags=["--gpu-architecture=sm_90a"],
                        pass_configs={tilejit.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
    paths = [e["path"] for e in k.lowering_report()
             if e.get("kind") == "op" and e["op"] == "T.copy"]
    assert paths[:2] == ["cp_async", "cp_async"], paths
    assert "tma_load" not in k.get_kernel_source()
    with pytest.raises(TypeError, match="must be a bool"):
        tilejit.compile(gemm(256, 256, 256), out_idx=[2], target="cuda",
                        pass_configs={"tl.disable_tma_lower": "yes"})


def gemm_then_scale(m, n, k, block=64, block_k=32):
    """Two kernels in one program: a GEMM through TMA into a workspace, then
    a kernel without swizzled tiles that scales it (the decoding kernels'
    split-then-combine shape)."""

    @T.prim_func
    def two_kernels(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                    C: T.Tensor((m, n), "float32")):
        W = T.alloc_global((m, n), "float32")
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float16")
            B_s = T.alloc_shared((block_k, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, W[by * block, bx * block])
        with T.Kernel(m, threads=128) as row:
            for j in T.Parallel(n):
                C[row, j] = W[row, j] * 2.0
    return two_kernels


@on_targets
def test_a_unit_of_two_kernels_keeps_the_tiles_aligned(target):
    """The unit's entries declare one dynamic shared array, 1024-aligned
    for both: the first's mbarriers (static shared memory) must leave its
    swizzled tiles where TMA's and wgmma's swizzle expect them."""
    m, n, k = 128, 192, 160
    a, b, ref = operands(m, n, k, seed=5)
    kernel = tilejit.compile(gemm_then_scale(m, n, k), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, 2 * ref, rtol=2e-2, atol=4e-2)
    if target == "cuda" and "tma_load" in kernel.get_kernel_source():
        src = kernel.get_kernel_source()
        assert src.count("extern __shared__ __align__(1024) unsigned char tilejit_smem[];") == 2


def gemm_a_without_tma(m, n, k, block=64, block_k=32):
    """T.copy(..., disable_tma=True) on A's load: it stays on cp.async."""

    @T.prim_func
    def a_without_tma(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                      C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block_k), "float16")
            B_s = T.alloc_shared((block_k, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block, ko * block_k], A_s, disable_tma=True)
                T.copy(B[ko * block_k, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])
    return a_without_tma


@on_targets
def test_disable_tma_at_a_copy_keeps_that_copy_on_cp_async(target):
    m, n, k = 128, 192, 96
    a, b, ref = operands(m, n, k, seed=11)
    kernel = tilejit.compile(gemm_a_without_tma(m, n, k), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)
    script = gemm_a_without_tma(m, n, k).script()
    assert script.count("disable_tma=true") == 1, script
    if target != "cuda":
        return
    hopper = tilejit.compile(gemm_a_without_tma(m, n, k), out_idx=[2], target="cuda",
                             extra_compile_flags=["--gpu-architecture=sm_90a"])
    report = [e for e in hopper.lowering_report() if e.get("kind") == "op"]
    a_copy, b_copy = [e for e in report if e["op"] == "T.copy"][:2]
    assert a_copy["path"] == "cp_async", a_copy
    assert a_copy["reason"] == "not tma: T.copy(..., disable_tma=True)", a_copy
    assert b_copy["path"] == "tma_load", b_copy
    [loop] = [e for e in report if e["op"] == "T.Pipelined"]
    assert loop["reason"] == "not warp-specialised: a prefetch of the loop is not a TMA copy", loop


def test_disable_tma_takes_a_bool():
    m = n = k = 64
    with pytest.raises(TypeError, match="T.copy: disable_tma must be a bool, got str"):

        @T.prim_func
        def bad(A: T.Tensor((m, k), "float16"), B: T.Tensor((m, k), "float16")):
            with T.Kernel(1, threads=128) as bx:
                A_s = T.alloc_shared((m, k), "float16")
                T.copy(A, A_s, disable_tma="yes")
                T.copy(A_s, B)

"""Hopper's TMA for the stores of shared tiles to tensors (Note [TMA stores]
in src/backend/cuda/tma_copies.h): on sm_90a a T.copy from a plain shared
tile to a tensor parameter is one cp.async.bulk.tensor store by thread 0.
The results are the program's on every target, at the tensors' edges (TMA
writes nothing outside them) and for a tile stored again and again in a
loop; the lowering report names the path or says why a copy keeps the
threads' stores."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()
_HOPPER = ["--gpu-architecture=sm_90a"]


def gemm_through_shared(m, n, k, block_m=64, block_n=64, block_k=32, disable_tma=False,
                        read_tile=False, out_dtype="float16"):
    """C = A @ B, each block's result staged in C_s and stored from there
    (read_tile: and C_s's first column also summed into C's first column
    by the threads, which reads the tile element by element)."""

    @T.prim_func
    def staged_gemm(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"),
                    C: T.Tensor((m, n), out_dtype)):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            C_s = T.alloc_shared((block_m, block_n), "float16")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.copy(C_s, C[by * block_m, bx * block_n], disable_tma=disable_tma)
            if read_tile:
                for i in T.Parallel(block_m):
                    if by * block_m + i < m and bx * block_n < n:
                        C[by * block_m + i, bx * block_n] = C_s[i, 0] * 2
    return staged_gemm


def rows_scaled(m, n, block=16, steps=4):
    """Each block scales `steps` row blocks of A into one shared tile and
    stores the tile after each: every store must read the tile before the
    next step overwrites it. B is 3-D (a batch of one)."""

    @T.prim_func
    def scaled(A: T.Tensor((m, n), "float32"), B: T.Tensor((1, m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block * steps), threads=128) as bx:
            tile = T.alloc_shared((block, n), "float32")
            for s in T.serial(steps):
                for i, j in T.Parallel(block, n):
                    tile[i, j] = A[(bx * steps + s) * block + i, j] * (s + 1)
                T.copy(tile, B[0, (bx * steps + s) * block, 0])
    return scaled


def copies(kernel):
    return [e for e in kernel.lowering_report() if e.get("kind") == "op" and e["op"] == "T.copy"]


# Note [Swizzled store tiles]: 128 columns are two swizzled panels, stored
# by two TMA boxes, or by copy_from_swizzled where TMA is turned off; a
# tile the threads also read stays row-major.
EPILOGUES = {"64 columns": dict(), "128 columns": dict(block_n=128),
             "128 columns, no tma": dict(block_n=128, disable_tma=True),
             "128 columns, read": dict(block_n=128, read_tile=True),
             "128 columns, to float32": dict(block_n=128, out_dtype="float32")}


@on_targets
@pytest.mark.parametrize("shape", [(128, 128, 64), (200, 136, 96), (72, 264, 40)])
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_a_tile_stored_through_shared_memory_at_the_edges(target, shape, epilogue):
    m, n, k = shape
    options = EPILOGUES[epilogue]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    kernel = tilejit.compile(gemm_through_shared(m, n, k, **options), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    ref = a.astype(np.float32) @ b.astype(np.float32)
    if options.get("read_tile"):
        ref[:, ::options["block_n"]] *= 2
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=1e-1)


def layout_of(kernel, name):
    return next(e["layout"] for e in kernel.lowering_report()
                if e.get("kind") == "buffer" and e["name"] == name)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_an_epilogue_tile_is_swizzled_and_stored_a_panel_at_a_time_on_hopper():
    k = tilejit.compile(gemm_through_shared(200, 264, 96, block_n=128), out_idx=[2],
                        target="cuda", extra_compile_flags=_HOPPER)
    assert "swizzle 128" in layout_of(k, "C_s"), layout_of(k, "C_s")
    assert copies(k)[-1]["path"] == "tma_store", copies(k)
    src = k.get_kernel_source()
    assert "tilejit::cuda::acc_store_shared<tilejit::cuda::MmaAcc<64, 128, 4, 1, 64, 1, true>, " \
           "128, 128>(C_f, C_s);" in src, src
    assert src.count("tilejit::cuda::tma_store_box(") == 2, src
    assert "C_s + 4096, int((bx * 128)) + 64, int((by * 64)));" in src, src
    assert src.count("tilejit::cuda::tma_store_issued();") == 1, src
    # Where TMA does not store it, 16-byte chunks of the swizzled tile do.
    off = tilejit.compile(gemm_through_shared(200, 264, 96, block_n=128, disable_tma=True),
                          out_idx=[2], target="cuda", extra_compile_flags=_HOPPER)
    assert "swizzle 128" in layout_of(off, "C_s")
    assert "tilejit::cuda::copy_from_swizzled<128, 64, 128, 128>(C_s, " in off.get_kernel_source()
    # So do they where the tensor's dtype is not the tile's (converted).
    wide = tilejit.compile(gemm_through_shared(200, 264, 96, block_n=128, out_dtype="float32"),
                           out_idx=[2], target="cuda", extra_compile_flags=_HOPPER)
    assert "swizzle 128" in layout_of(wide, "C_s")
    assert "dtype conversion" in copies(wide)[-1]["reason"], copies(wide)
    assert "tilejit::cuda::copy_from_swizzled<128, 64, 128, 128>(C_s, " in wide.get_kernel_source()
    # A tile the threads read, and any tile before sm_90a, stays row-major.
    for kernel in (tilejit.compile(gemm_through_shared(200, 264, 96, block_n=128, read_tile=True),
                                   out_idx=[2], target="cuda", extra_compile_flags=_HOPPER),
                   tilejit.compile(gemm_through_shared(200, 264, 96, block_n=128), out_idx=[2],
                                   target="cuda", extra_compile_flags=["--gpu-architecture=compute_80"])):
        assert "swizzle" not in layout_of(kernel, "C_s"), layout_of(kernel, "C_s")
        assert "tma_store_box" not in kernel.get_kernel_source()


@on_targets
def test_a_tile_stored_at_each_step_of_a_loop(target):
    m, n = 256, 64
    a = np.random.default_rng(2).standard_normal((m, n)).astype(np.float32)
    kernel = tilejit.compile(rows_scaled(m, n), out_idx=[1], target=target)
    b = as_numpy(kernel(to_target(target, a)))
    scale = (np.arange(m) // 16 % 4 + 1).astype(np.float32)[:, None]
    np.testing.assert_array_equal(b[0], a * scale)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_the_report_names_tma_store_on_hopper_only():
    k = tilejit.compile(gemm_through_shared(200, 136, 96), out_idx=[2], target="cuda",
                        extra_compile_flags=_HOPPER)
    store = copies(k)[-1]
    assert (store["path"], store["reason"]) == ("tma_store", ""), store
    src = k.get_kernel_source()
    assert src.count("tilejit::cuda::tma_store(") == 1, src
    # The threads' writes of C_s are fenced for the async proxy before it.
    code = "\n".join(ln for ln in src.splitlines() if not ln.startswith("#line"))
    assert ("tilejit::cuda::async_proxy_fence();\n  tilejit::cuda::block_sync<128>();\n"
            "  // T.copy(C_s[0:64, 0:64]") in code, code
    k80 = tilejit.compile(gemm_through_shared(200, 136, 96), out_idx=[2], target="cuda",
                          extra_compile_flags=["--gpu-architecture=compute_80"])
    assert copies(k80)[-1]["path"] == "vector"
    assert "tilejit::cuda::tma_store(" not in k80.get_kernel_source()
    loop = tilejit.compile(rows_scaled(256, 64), out_idx=[1], target="cuda",
                           extra_compile_flags=_HOPPER)
    assert copies(loop)[-1]["path"] == "tma_store", copies(loop)


def store_with(disable_tma=False, cols=64, read_back=False, dtype="float16"):
    """A tile copied from A through shared memory to B."""
    m = 128

    @T.prim_func
    def through(A: T.Tensor((m, cols), dtype), B: T.Tensor((m, cols), dtype),
                S: T.Tensor((m,), dtype)):
        with T.Kernel(m // 64, threads=128) as bx:
            tile = T.alloc_shared((64, cols), dtype)
            T.copy(A[bx * 64, 0], tile)
            T.copy(tile, B[bx * 64, 0], disable_tma=disable_tma)
            if read_back:
                for i in T.Parallel(64):
                    S[bx * 64 + i] = B[bx * 64 + i, 0]
            else:
                for i in T.Parallel(64):
                    S[bx * 64 + i] = tile[i, 0]
    return through


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("options,why", [
    (dict(disable_tma=True), "not tma_store: T.copy(..., disable_tma=True)"),
    (dict(read_back=True), "not tma_store: the kernel reads B"),
    (dict(cols=6), "not tma_store: a row of the tile is 12 bytes, not a multiple of 16"),
    (dict(cols=512, dtype="int8"), "not tma_store: 512 columns (a TMA box has at most 256)"),
])
def test_a_store_tma_cannot_do_says_why(options, why):
    k = tilejit.compile(store_with(**options), out_idx=[1, 2], target="cuda",
                        extra_compile_flags=_HOPPER)
    store = copies(k)[1]
    assert store["path"] != "tma_store", store
    assert why in store["reason"], store
    assert "tilejit::cuda::tma_store(" not in k.get_kernel_source()
    ok = tilejit.compile(store_with(), out_idx=[1, 2], target="cuda", extra_compile_flags=_HOPPER)
    assert copies(ok)[1]["path"] == "tma_store", copies(ok)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("options", [dict(), dict(read_back=True)])
def test_stores_through_shared_memory_match_on_the_gpu(options):
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    k = tilejit.compile(store_with(**options), out_idx=[1, 2], target="cuda")
    a = torch.randn(128, 64, device="cuda").half()
    b, s = k(a)
    torch.testing.assert_close(b, a)
    torch.testing.assert_close(s, a[:, 0])

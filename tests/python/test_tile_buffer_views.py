"""Buffer views, ``T.Tensor(shape, dtype, X.data)``: a row-major view of a
tensor's storage with another shape and the same dtype (Note [Remapped
globals] in python/tilejit/language/remap.py), as TileLang's convolution
writes its flattened kernel and output. TileLang's convolution (the version
before its examples moved to the eager style, whose T.im2col tilejit does
not have) runs verbatim against a float64 numpy convolution; its CUDA
source compiles (NVRTC) wherever tilejit's cuda target is available."""

import numpy as np
import pytest

import tilejit as tilelang
import tilejit.language as T
from support import tilejit_cuda_unavailable
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")


def check_hopper():  # the example's, without torch: the CPU path of its loop
    return None


# --- TileLang's examples/convolution/example_convolution.py (at b9a5907a2^), verbatim ---

@tilelang.jit(out_idx=[2])
def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K, num_stages, threads, dtype=T.float16, accum_dtype=T.float32):
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    dtype = T.float16
    accum_dtype = T.float32
    is_hopper = check_hopper()

    @T.prim_func
    def main(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                if is_hopper:
                    T.c2d_im2col(data, data_shared, by, k_iter, KH, S, D, P)
                else:
                    for i, j in T.Parallel(block_M, block_K):
                        k = k_iter * block_K + j
                        m = by * block_M + i
                        access_h = m % (OH * OW) // OW * S + k // (KW * C) * D - P
                        access_w = m % OW * S + k // C % KW * D - P
                        in_bound = (access_h >= 0) and (access_w >= 0) and (access_h < H) and (access_w < W)
                        data_shared[i, j] = T.if_then_else(in_bound, data[m // (OH * OW), access_h, access_w, k % C], 0)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


def conv_reference(a, b, stride, padding, dilation):
    """NHWC data, (KH, KW, C, F) kernel -> NHWC output, in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    n, h, w, c = a.shape
    k = b.shape[0]
    oh = (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    pad = np.pad(a, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    out = np.zeros((n, oh, ow, b.shape[3]))
    for kh in range(k):
        for kw in range(k):
            hs, ws = kh * dilation, kw * dilation
            win = pad[:, hs:hs + stride * oh:stride, ws:ws + stride * ow:stride, :]
            out += win @ b[kh, kw]
    return out


@needs_tile_cpu
@pytest.mark.parametrize("S, D, P", [(1, 1, 1), (2, 1, 0)])
def test_convolution_through_views(S, D, P):
    N, C, H, W, F, K = 2, 16, 8, 8, 32, 3
    rng = np.random.default_rng(S)
    a = rng.standard_normal((N, H, W, C)).astype(np.float16)
    b = rng.standard_normal((K, K, C, F)).astype(np.float16)
    kernel = convolution.retarget("cpu")(N, C, H, W, F, K, S, D, P, 64, 32, 32, 2, 128)
    out = kernel(a, b)
    np.testing.assert_allclose(np.asarray(out, np.float64), conv_reference(a, b, S, P, D),
                               rtol=1e-2, atol=5e-2)


def flat_rows(m, n, k):
    """Y (m x n) = the rows of X (m x k x n) summed over k, X read through
    a view (m * k, n) of its storage."""
    @T.prim_func
    def main(X: T.Tensor((m, k, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=32) as bx:
            X_flat = T.Tensor((m * k, n), "float32", X.data)
            Y_flat = T.Tensor((m * n,), "float32", Y.data)
            for j in T.Parallel(n):
                Y_flat[bx * n + j] = 0
            for r in T.serial(k):
                for j in T.Parallel(n):
                    Y_flat[bx * n + j] += X_flat[bx * k + r, j]
    return main


@needs_tile_cpu
def test_views_load_and_store_through_the_storage():
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    y = np.zeros((3, 5), np.float32)
    tilelang.compile(flat_rows(3, 5, 4), target="cpu")(x, y)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-5)


@needs_tile_cpu
@pytest.mark.parametrize("shape, dtype, message", [
    ((4, 5), "float32", "T.Tensor(shape, dtype, data): a view of shape [4, 5] holds 20 elements, "
                        "but X [2, 3, 4] holds 24"),
    ((6, 4), "float16", "T.Tensor(shape, dtype, data): a float16 view over X (float32); a view "
                        "keeps its tensor's dtype"),
])
def test_a_view_of_another_size_or_dtype_is_an_error(shape, dtype, message):
    with pytest.raises(ValueError) as info:
        @T.prim_func
        def main(X: T.Tensor((2, 3, 4), "float32")):
            with T.Kernel(1, threads=32) as bx:
                v = T.Tensor(shape, dtype, X.data)
    assert str(info.value).endswith(message), info.value
    assert "test_tile_buffer_views.py" in str(info.value)


@needs_cuda_target
def test_the_convolution_compiles_for_cuda_and_reports_its_copies():
    kernel = convolution.retarget("cuda")(2, 16, 8, 8, 32, 3, 1, 1, 1, 64, 32, 32, 2, 128)
    copies = [e for e in kernel.lowering_report() if e.get("op") == "T.copy"]
    elementwise = [e for e in copies if e["path"] == "elementwise"]
    assert len(elementwise) == 2, copies
    assert "is a view of kernel" in elementwise[0]["reason"], elementwise

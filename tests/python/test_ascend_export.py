"""A TileLang-Ascend kernel with a declared workspace (workspace_idx), its
cube and vector parts exchanging data through it both ways, exported as a
standalone C library (issue 24's "pooled ... in the C ABI export"): the C
call takes the inputs and the output, the workspace is the library's
(leased from its pool), and the result is the Python call's."""

import ctypes

import numpy as np

import tilejit as tilelang
import tilejit.language as T
from support import DLDataType, DLDevice, DLTensor


@tilelang.jit(out_idx=[-1], workspace_idx=[2])
def relu_matmul_plus_one(M, N, K, block_M, dtype="float16", accum_dtype="float"):
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             ws: T.Tensor((M // block_M, block_M, K), dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(M // block_M, is_npu=True) as (cid, vid):
            a_ub = T.alloc_ub((half, K), dtype)
            c_ub = T.alloc_ub((half, N), accum_dtype)
            a_l1 = T.alloc_L1((block_M, K), dtype)
            b_l1 = T.alloc_L1((K, N), dtype)
            c_l0 = T.alloc_L0C((block_M, N), accum_dtype)
            T.copy(A[cid * block_M + vid * half, 0], a_ub)
            T.tile.relu(a_ub, a_ub)
            T.copy(a_ub, ws[cid, vid * half, 0])
            T.copy(ws[cid, :, :], a_l1)
            T.copy(B, b_l1)
            T.gemm_v0(a_l1, b_l1, c_l0, init=True)
            T.copy(c_l0[vid * half:vid * half + half, :], c_ub)
            T.tile.add(c_ub, c_ub, 1.0)
            T.copy(c_ub, C[cid * block_M + vid * half, 0])

    return main


def dltensor(array):
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    code, bits = {np.dtype(np.float16): (2, 16), np.dtype(np.float32): (2, 32)}[array.dtype]
    t = DLTensor(array.ctypes.data, DLDevice(1, 0), array.ndim, DLDataType(code, bits, 1),
                 shape, None, 0)
    t._shape = shape
    return t


def test_an_ascend_kernel_exported_keeps_its_workspace_to_itself(tmp_path):
    kernel = relu_matmul_plus_one(64, 32, 32, 32)
    path = tmp_path / "librelu_matmul.so"
    tilelang.export(kernel, path)
    header = (tmp_path / "librelu_matmul.h").read_text()
    name = kernel.name
    assert f"int {name}(const DLTensor* A, const DLTensor* B, DLTensor* C, void* workspace, " \
           "void* stream);" in header, header
    lib = ctypes.CDLL(str(path))
    call = getattr(lib, f"{name}_auto")
    call.restype = ctypes.c_int
    call.argtypes = [ctypes.POINTER(DLTensor)] * 3 + [ctypes.c_void_p, ctypes.c_void_p]
    size = getattr(lib, f"{name}_workspace_bytes")
    size.restype = ctypes.c_int64
    size.argtypes = [ctypes.POINTER(DLTensor)] * 2
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    A, B = dltensor(a), dltensor(b)
    # ws: 2 blocks x 32 rows x 32 halves
    assert size(ctypes.byref(A), ctypes.byref(B)) == kernel.workspace_bytes(a, b) >= 2 * 32 * 32 * 2
    ref = np.maximum(a.astype(np.float32), 0) @ b.astype(np.float32) + 1
    for _ in range(2):  # the library's pool serves both calls
        c = np.zeros((64, 32), np.float32)
        C = dltensor(c)
        assert call(ctypes.byref(A), ctypes.byref(B), ctypes.byref(C), None, None) == 0
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(c, np.asarray(kernel(a, b)))

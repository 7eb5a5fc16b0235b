"""tilejit.export: a kernel written out as a standalone shared library with a
C header, loaded here with ctypes and called through its C functions."""

import ctypes

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import DLDataType, DLDevice, DLTensor


_CODES = {np.dtype(np.float32): (2, 32), np.dtype(np.int64): (0, 64)}


def dltensor(array):
    """A DLTensor viewing `array` (kept alive by the caller)."""
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    code, bits = _CODES[array.dtype]
    t = DLTensor(array.ctypes.data, DLDevice(1, 0), array.ndim, DLDataType(code, bits, 1),
                 shape, None, 0)
    t._shape = shape  # the shape array lives as long as the struct
    return t


@tilejit.jit(out_idx=[1], workspace_idx=[2], workspace_init={"Acc": "zero"}, target="cpu")
def row_sums(width=8):
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n, width], "float32"), S: T.Tensor([n], "float32"),
             Acc: T.Tensor([n], "float32")):
        with T.Kernel(n, threads=1) as bx:
            T.source(cpu=f"for (int64_t j = 0; j < {width}; ++j) Acc(bx) += X(bx, j);\n"
                         "S(bx) = Acc(bx);")

    return main


def test_export_and_call_with_ctypes(tmp_path):
    k = row_sums()
    path = tmp_path / "librow_sums.so"
    tilejit.export(k, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["librow_sums.h", "librow_sums.so"]
    header = (tmp_path / "librow_sums.h").read_text()
    assert "int row_sums(const DLTensor* X, DLTensor* S, void* workspace, void* stream);" in header

    lib = ctypes.CDLL(str(path))
    lib.row_sums_auto.restype = ctypes.c_int
    lib.row_sums_auto.argtypes = [ctypes.POINTER(DLTensor), ctypes.POINTER(DLTensor),
                                  ctypes.c_void_p, ctypes.c_void_p]
    lib.row_sums_workspace_bytes.restype = ctypes.c_int64
    lib.row_sums_workspace_bytes.argtypes = [ctypes.POINTER(DLTensor)]
    lib.row_sums_last_error.restype = ctypes.c_char_p

    x = np.arange(5 * 8, dtype=np.float32).reshape(5, 8)
    s = np.zeros(5, np.float32)
    X, S = dltensor(x), dltensor(s)
    assert lib.row_sums_workspace_bytes(ctypes.byref(X)) == k.workspace_bytes(x) == 256
    for _ in range(2):  # the pool's arena is reused; Acc is zeroed on each call
        assert lib.row_sums_auto(ctypes.byref(X), ctypes.byref(S), None, None) == 0, \
            lib.row_sums_last_error()
        np.testing.assert_array_equal(s, x.sum(axis=1))
    np.testing.assert_array_equal(s, k(x))

    bad = np.zeros((5, 8), np.int64)
    B = dltensor(bad)
    assert lib.row_sums_auto(ctypes.byref(B), ctypes.byref(S), None, None) == 1
    with pytest.raises(TypeError) as jit_error:
        k(bad)
    assert lib.row_sums_last_error().decode() == str(jit_error.value) == \
        "row_sums: argument #0 'X': expected float32, got int64"


def test_export_errors(tmp_path):
    with pytest.raises(TypeError, match=r"^export: expected a tilejit.Kernel, got int$"):
        tilejit.export(3, tmp_path / "lib.so")
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "lib.so"
    with pytest.raises(RuntimeError) as e:
        tilejit.export(row_sums(), target)
    assert str(e.value) == (f"row_sums: export_library: cannot write '{tmp_path}/file/lib.h': "
                            "Not a directory")
    assert tilejit.export_c_name("my-op.v2") == "my_op_v2"

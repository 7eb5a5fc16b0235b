"""Helpers shared by the Python tests (imported after conftest.py has set
TILEJIT_CACHE_DIR)."""

import contextlib
import ctypes
import sys
from pathlib import Path

import pytest

import tilejit
from tilejit import language as T

try:
    import ml_dtypes
    HAVE_ML_DTYPES = True
except ImportError:
    ml_dtypes = None
    HAVE_ML_DTYPES = False

needs_ml_dtypes = pytest.mark.skipif(not HAVE_ML_DTYPES, reason="ml_dtypes is not installed")


def tilejit_cuda_unavailable():
    """Why tilejit's cuda target cannot run here, or "" when it can."""
    if "cuda" not in tilejit._C.registered_targets():
        return "tilejit was built without its CUDA backend"
    if not tilejit._C.target_available("cuda"):
        return "tilejit's cuda target is not available (no driver or no device)"
    return ""


# Tests that run one program on the CPU target and, where a GPU is, on
# CUDA: parametrise with @on_targets, move inputs with to_target() and read
# outputs with as_numpy().
_NO_CUDA = tilejit_cuda_unavailable()
TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA))]
on_targets = pytest.mark.parametrize("target", TARGETS)


def to_target(target, array):
    """`array` where a kernel of `target` takes it (a torch CUDA tensor)."""
    if target == "cpu":
        return array
    import numpy as np
    import torch
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":  # ml_dtypes': torch takes its bits
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(array).cuda()


def as_numpy(x):
    """A kernel's output as numpy."""
    import numpy as np
    if not hasattr(x, "cpu"):
        return np.asarray(x)
    import torch
    if x.dtype == torch.bfloat16:
        import ml_dtypes
        return x.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.cpu().numpy()


@contextlib.contextmanager
def raises_exact(kind, message):
    """Expects an exception of exactly type `kind` (a subclass does not
    count) whose message is exactly `message`."""
    with pytest.raises(kind) as info:
        yield info
    assert type(info.value) is kind, \
        f"expected {kind.__name__}, got {type(info.value).__name__}: {info.value}"
    assert str(info.value) == message, \
        f"message differs:\n  got:      {info.value}\n  expected: {message}"


def add_one_kernel(**options):
    """Y = X + 1 over a dynamic length n."""
    n = T.symbolic("n")

    @T.prim_func
    def add_one(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
        with T.Kernel(1, threads=1):
            T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = X(i) + 1.0f;")

    options.setdefault("out_idx", [1])
    options.setdefault("target", "cpu")
    return tilejit.compile(add_one, **options)


def pool_in_use():
    return tilejit.pool_stats()["bytes_in_use"]


# The examples' bodies and kernels (examples/example_kernels.py), one source
# for C++ and Python.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from example_kernels import example_body, make_kernels  # noqa: E402,F401


# DLPack's structs as an exported library's C functions take them (ctypes).
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

"""cupy arrays through tilejit's Python API on a CUDA device.

cupy publishes no DLPack C exchange table (as torch does), so the binding
reads cupy arrays through `__dlpack__` (nanobind's importer), makes the
outputs with tilejit's own CUDA allocator, and hands each to cupy.from_dlpack
(the from_dlpack of the package that defines the first tensor's type; Note
[Output frameworks] in python/src/tensor_export.h): cupy arrays in, cupy
arrays out, without a copy. Should cupy publish the table one day, the
outputs are still cupy arrays, made by cupy's allocator. The launch goes on
tilejit's current stream (the legacy default stream, which is also cupy's
default) unless stream= names one.

Every test is marked `gpu` and skipped without cupy, a CUDA device, or
tilejit's cuda target.
"""

import pytest

cupy = pytest.importorskip("cupy")

import numpy as np  # noqa: E402

import tilejit  # noqa: E402
from tilejit import language as T  # noqa: E402
from support import raises_exact, tilejit_cuda_unavailable  # noqa: E402


def _cuda_ready():
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return False, "cupy sees no CUDA device"
    except Exception as e:  # no driver, no device
        return False, f"cupy sees no CUDA device ({type(e).__name__}: {e})"
    why = tilejit_cuda_unavailable()
    return not why, why


CUDA_OK, CUDA_WHY = _cuda_ready()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUDA_OK, reason=CUDA_WHY)]

SPIN_CYCLES = 20_000_000

# One non-blocking cupy stream for the whole process, never destroyed: the
# workspace pool remembers the stream each block was last released on and
# later records an event on it (Note [Stream-ordered reuse] in
# include/tilejit/runtime/workspace_pool.h), so a stream that calls used
# must outlive the pool's use of it. A cupy.cuda.Stream destroys its CUDA
# stream when collected (torch's streams come from a pool and never are).
_STREAM = []


def side_stream():
    if not _STREAM:
        _STREAM.append(cupy.cuda.Stream(non_blocking=True))
    return _STREAM[0]


INDEX = "const int64_t i = bx * 256 + threadIdx.x;\n"


@tilejit.jit(out_idx=[1], workspace_idx=[2], workspace_init={"W": "zero"}, target="cuda")
def affine():
    """Y = a X + 1 through a zeroed workspace, after spinning `spin` cycles."""
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
             W: T.Tensor([n], "float32"), a: T.float32, spin: T.int64):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda="if (spin > 0) { const long long t0 = clock64(); "
                          "while (clock64() - t0 < spin) { } }\n" + INDEX +
                          "if (i < n) { W(i) += a * X(i); Y(i) = W(i) + 1.0f; }\n")

    return main


@tilejit.jit(out_idx=[2, 3], target="cuda")
def split():
    m, n = T.symbolic("m"), T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([m, n], "int32"), Z: T.Tensor([n], "int32"),
             Lo: T.Tensor([m, n], "int32"), Hi: T.Tensor([m, n], "int32")):
        with T.Kernel(m, threads=128):
            T.source(cuda="for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {\n"
                          "  Lo(bx, j) = X(bx, j) - Z(j); Hi(bx, j) = X(bx, j) + Z(j);\n}\n")

    return main


def check_output(out, shape, dtype):
    """The output of a call with cupy inputs: a cupy array on the inputs'
    device (module docstring)."""
    assert type(out) is cupy.ndarray
    assert out.shape == shape and out.dtype == dtype and out.flags.c_contiguous
    assert out.device.id == cupy.cuda.runtime.getDevice()
    assert cupy.asarray(out).data.ptr == out.data.ptr  # no copy
    return out


def test_cupy_in_cupy_out():
    k = affine()
    x = cupy.random.standard_normal(1000, dtype=cupy.float32)
    y = check_output(k(x, 2.0, 0), (1000,), cupy.float32)
    cupy.testing.assert_allclose(y, 2 * x + 1, rtol=1e-6)
    y[0] = 123.0  # an ordinary, writable cupy array
    assert float(y[0]) == 123.0
    assert y.data.ptr != x.data.ptr


def test_outputs_keep_their_memory():
    k = affine()
    x = cupy.arange(300, dtype=cupy.float32)
    y = k(x, 1.0, 0)  # alone holds tilejit's memory (through cupy's DLPack import)
    for _ in range(5):
        k(x, 3.0, 0)  # later outputs must not reuse y's memory
    cupy.testing.assert_allclose(y, x + 1)


def test_several_outputs_and_out_passthrough():
    k = split()
    x = cupy.arange(12, dtype=cupy.int32).reshape(3, 4)
    z = cupy.asarray([1, 2, 3, 4], dtype=cupy.int32)
    lo, hi = k(x, z)
    cupy.testing.assert_array_equal(check_output(lo, (3, 4), cupy.int32), x - z)
    cupy.testing.assert_array_equal(check_output(hi, (3, 4), cupy.int32), x + z)
    out_hi = cupy.empty((3, 4), dtype=cupy.int32)
    lo2, hi2 = k(x, z, out=[None, out_hi])
    assert hi2 is out_hi
    cupy.testing.assert_array_equal(out_hi, x + z)
    cupy.testing.assert_array_equal(cupy.asarray(lo2), x - z)


def test_explicit_cupy_stream():
    k = affine()
    x = cupy.random.standard_normal(1 << 16, dtype=cupy.float32)
    k(x, 1.0, 0)
    cupy.cuda.Device().synchronize()
    s = side_stream()
    handles = [s.ptr]
    if hasattr(s, "__cuda_stream__"):
        handles.append(s)  # the CUDA stream protocol
    for handle in handles:
        y = cupy.asarray(k(x, 1.0, SPIN_CYCLES, stream=handle))
        assert not s.done  # the kernel spins on s
        with s:
            z = y * 2  # ordered after it by s alone
        s.synchronize()
        cupy.testing.assert_allclose(z, (x + 1) * 2, rtol=1e-6)


def test_no_device_allocation_per_call_in_steady_state():
    k = affine()
    x = cupy.random.standard_normal(5000, dtype=cupy.float32)
    for _ in range(3):
        k(x, 1.0, 0)
    cupy.cuda.Device().synchronize()
    before = tilejit.pool_stats("cuda")
    outs = [k(x, 0.5, 0) for _ in range(100)]
    after = tilejit.pool_stats("cuda")
    assert after["device_allocs"] == before["device_allocs"]
    assert after["leases"] - before["leases"] == 100
    for out in outs[::25]:
        cupy.testing.assert_allclose(cupy.asarray(out), 0.5 * x + 1, rtol=1e-6)


def test_cupy_errors():
    k = affine()
    with raises_exact(TypeError, "affine: argument #0 'X': expected float32, got float64"):
        k(cupy.zeros(4, dtype=cupy.float64), 1.0, 0)
    with raises_exact(ValueError, "affine: argument #0 'X': expected a contiguous tensor, got "
                                  "strides [2] in elements ([8] in bytes) for shape [4]"):
        k(cupy.zeros(8, dtype=cupy.float32)[::2], 1.0, 0)
    with raises_exact(ValueError, "affine: argument #0 'X': expected a tensor on cuda "
                                  "(target 'cuda'), got one on cpu"):
        k(np.zeros(4, dtype=np.float32), 1.0, 0)
    k2 = split()
    with raises_exact(ValueError, "split: argument #1 'Z': is on cpu but argument #0 'X' is on "
                                  "cuda:0; all tensors must be on one device"):
        k2(cupy.zeros((2, 4), dtype=cupy.int32), np.zeros(4, dtype=np.int32))


def test_empty_workspace_is_a_cupy_arena():
    """tilejit's CUDA allocator (256-byte aligned), handed to cupy."""
    k = affine()
    x = cupy.arange(1000, dtype=cupy.float32)
    arena = k.empty_workspace(x, 2.0, 0)
    assert type(arena) is cupy.ndarray and arena.dtype == cupy.uint8
    assert arena.nbytes == k.workspace_bytes(x, 2.0, 0) == 4096
    assert arena.data.ptr % 256 == 0
    for _ in range(2):  # W is zeroed in a supplied arena on every call
        y = k(x, 2.0, 0, workspace=arena)
        cupy.testing.assert_array_equal(y, 2 * x + 1)

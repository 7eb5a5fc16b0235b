"""uint16 / uint32 / uint64 as element types (Note [Unsigned arithmetic] in
backend/common/tile_codegen.h, Note [Unsigned constants] in ir/expr.cpp):
numpy arrays of them in and out, C's unsigned arithmetic (uint32 wraps at
2^32, uint64 values at or above 2^63 compare and divide as unsigned), casts
to and from them, TVM's promotion of a signed and an unsigned operand, on
the CPU against numpy, and the CUDA source compiled by NVRTC where tilejit's
cuda target is available."""

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")

N = 256


def hash32(target):
    """A multiply-shift hash on uint32 (x * 2654435769 wraps at 2^32; `// 65536`
    is the right shift by 16 of an unsigned value)."""

    out_idx = [-1]

    def make():
        @T.prim_func
        def main(X: T.Tensor((N,), "uint32"), Y: T.Tensor((N,), "uint32")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    h = X[bx * 64 + i] * 2654435769
                    h = h + h // 65536
                    h = h * T.uint32(2246822507) - 7
                    Y[bx * 64 + i] = h + h % 1000003
        return main
    return tilejit.compile(make(), out_idx=out_idx, target=target)


def hash32_reference(x):
    m = 2**32
    h = (x.astype(np.uint64) * 2654435769) % m
    h = (h + h // 65536) % m
    h = (h * 2246822507 + m - 7) % m
    return ((h + h % 1000003) % m).astype(np.uint32)


@needs_tile_cpu
@on_targets
def test_uint32_hash_wraps(target):
    x = np.random.default_rng(0).integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    x[:4] = [0, 1, 2**32 - 1, 2**31]
    y = hash32(target)(to_target(target, x))
    y = as_numpy(y)
    assert y.dtype == np.uint32
    np.testing.assert_array_equal(y, hash32_reference(x))


def big64(target):
    """uint64 values at and above 2^63: copied, divided, compared with a
    literal above 2^63 (a uint64 constant), the larger of two taken, T.abs."""

    out_idx = [-3, -2, -1]

    def make():
        @T.prim_func
        def main(A: T.Tensor((N,), "uint64"), B: T.Tensor((N,), "uint64"),
                 Q: T.Tensor((N,), "uint64"), C: T.Tensor((N,), "int32"),
                 M: T.Tensor((N,), "uint64")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    Q[k] = A[k] // 3 + A[k] % 3
                    C[k] = T.if_then_else(A[k] > 2**63 + 5, 1, 0) + \
                        T.if_then_else(A[k] < B[k], 2, 0)
                    M[k] = T.max(A[k], B[k]) - T.abs(A[k]) // A[k]  # - 1
        return main
    return tilejit.compile(make(), out_idx=out_idx, target=target)


@needs_tile_cpu
def test_uint64_above_2_63():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**63, size=N, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, size=N, dtype=np.uint64) * np.uint64(2)
    a[:4] = [2**64 - 1, 2**63, 2**63 + 5, 2**63 + 6]
    b[:4] = [1, 2**64 - 2, 2**63 + 6, 2**63 + 5]
    assert (a >= 2**63).sum() > N // 4  # the case int64 gets wrong
    q, c, m = big64("cpu")(a, b)
    assert q.dtype == np.uint64 and m.dtype == np.uint64
    np.testing.assert_array_equal(q, a // np.uint64(3) + a % np.uint64(3))
    want = (a > np.uint64(2**63 + 5)).astype(np.int32) + 2 * (a < b).astype(np.int32)
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(m, np.maximum(a, b) - np.uint64(1))


def casts(target):
    out_idx = [-4, -3, -2, -1]

    def make():
        @T.prim_func
        def main(U: T.Tensor((N,), "uint32"), S: T.Tensor((N,), "int32"),
                 F: T.Tensor((N,), "float32"), UF: T.Tensor((N,), "float32"),
                 US: T.Tensor((N,), "uint32"), SU: T.Tensor((N,), "int32"),
                 W: T.Tensor((N,), "uint16")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    UF[k] = T.cast(U[k], "float32") + T.cast(T.cast(F[k], "uint32"), "float32")
                    US[k] = T.cast(S[k], "uint32")
                    SU[k] = T.cast(U[k], "int32")
                    W[k] = T.cast(U[k], "uint16") + T.cast(1, "uint16")
        return main
    return tilejit.compile(make(), out_idx=out_idx, target=target)


@needs_tile_cpu
def test_casts_between_uint32_float_and_int32():
    rng = np.random.default_rng(2)
    u = rng.integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(-2**31, 2**31, size=N, dtype=np.int64).astype(np.int32)
    f = rng.uniform(0, 4e9, size=N).astype(np.float32)
    u[:3] = [2**32 - 1, 2**31, 65535]
    s[:2] = [-1, -2**31]
    uf, us, su, w = casts("cpu")(u, s, f)
    np.testing.assert_array_equal(uf, u.astype(np.float32) + f.astype(np.uint32).astype(np.float32))
    np.testing.assert_array_equal(us, s.astype(np.uint32))
    np.testing.assert_array_equal(su, u.astype(np.int32))
    assert w.dtype == np.uint16
    np.testing.assert_array_equal(w, (u.astype(np.uint16) + np.uint16(1)))


def mixed(target):
    """TVM's promotion: int32 with uint32 is uint32 (one width, the unsigned
    one), so -1 converts to 2^32 - 1 and compares above every other value;
    int64 with uint32 is int64 (the wider)."""

    out_idx = [-2, -1]

    def make():
        @T.prim_func
        def main(U: T.Tensor((N,), "uint32"), S: T.Tensor((N,), "int32"),
                 LT: T.Tensor((N,), "int32"), D: T.Tensor((N,), "int64")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    LT[k] = T.if_then_else(U[k] < S[k], 1, 0)
                    D[k] = T.cast(S[k], "int64") - U[k]
        return main
    return tilejit.compile(make(), out_idx=out_idx, target=target)


@needs_tile_cpu
def test_signed_unsigned_promotion():
    u = np.arange(N, dtype=np.uint32) * np.uint32(1000)
    s = np.full(N, -1, dtype=np.int32)
    s[::2] = 5
    lt, d = mixed("cpu")(u, s)
    # numpy promotes int32 with uint32 to int64; TVM and C convert to uint32.
    np.testing.assert_array_equal(lt, (u < s.astype(np.uint32)).astype(np.int32))
    assert lt[1] == 1  # 1000 < uint32(-1)
    np.testing.assert_array_equal(d, s.astype(np.int64) - u.astype(np.int64))


def test_dtype_objects():
    assert T.uint16 == "uint16" and T.uint32.bits == 32 and T.uint64.bits == 64
    assert tilelang.DataType("uint64").is_int() and tilelang.DataType("uint16").itemsize == 2
    assert T.Tensor([4], np.uint32).dtype == "uint32"
    assert T.Tensor([4], np.uint64).dtype == "uint64"
    assert T.Tensor([4], "uint16").dtype == "uint16"


@needs_tile_cpu
def test_wrong_unsigned_dtype_is_an_argument_error():
    x = np.zeros(N, dtype=np.int32)
    with pytest.raises(TypeError, match="expected uint32, got int32"):
        hash32("cpu")(x)


@needs_cuda_target
@pytest.mark.parametrize("make", [hash32, big64, casts, mixed])
def test_the_cuda_source_compiles(make):
    source = make("cuda").get_kernel_source()
    assert "uint32_t" in source or "uint64_t" in source

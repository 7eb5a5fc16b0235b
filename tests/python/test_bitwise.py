"""Integer bitwise operators (Note [Bitwise operators] in tilejit/ir/expr.h):
& | ^ ~ << >> and T.bitwise_and / or / xor / not, T.shift_left /
shift_right, in every integer dtype (int8 to uint64) on the CPU against numpy (negative
values, arithmetic against logical right shifts, results read at a wider
dtype so that a missing wrap shows), a 4-bit dequantisation, masks staying
logical, the errors at the author's line, and the CUDA source compiled
(NVRTC) where tilejit's cuda target is available; on a GPU the kernels run
there too."""

import inspect

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, raises_exact, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")

N = 256
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
F = __file__


def operators(dtype, target):
    """Each operator on X, Y and the shift amounts S (all `dtype`), and ~X
    and X << S also read as int64, where a result not wrapped to `dtype`
    would differ."""

    def make():
        @T.prim_func
        def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), S: T.Tensor((N,), dtype),
                 AND: T.Tensor((N,), dtype), OR: T.Tensor((N,), dtype),
                 XOR: T.Tensor((N,), dtype), NOT: T.Tensor((N,), dtype),
                 SHL: T.Tensor((N,), dtype), SHR: T.Tensor((N,), dtype),
                 NOTW: T.Tensor((N,), "int64"), SHLW: T.Tensor((N,), "int64")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    AND[k] = X[k] & Y[k]
                    OR[k] = X[k] | Y[k]
                    XOR[k] = X[k] ^ Y[k]
                    NOT[k] = ~X[k]
                    SHL[k] = X[k] << S[k]
                    SHR[k] = X[k] >> S[k]
                    NOTW[k] = T.cast(~X[k], "int64")
                    SHLW[k] = T.cast(X[k] << S[k], "int64")
        return main
    return tilejit.compile(make(), out_idx=list(range(-8, 0)), target=target)


def operator_inputs(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(DTYPES.index(dtype))
    x = rng.integers(info.min, info.max, size=N, endpoint=True, dtype=dtype)
    y = rng.integers(info.min, info.max, size=N, endpoint=True, dtype=dtype)
    s = rng.integers(0, info.bits, size=N, dtype=dtype)
    x[:4] = [info.min, info.max, 0, info.min]
    s[:4] = [1, info.bits - 1, 3, info.bits - 1]
    return x, y, s


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_match_numpy(target, dtype):
    x, y, s = operator_inputs(dtype)
    out = operators(dtype, target)(*(to_target(target, a) for a in (x, y, s)))
    band, bor, bxor, bnot, shl, shr, notw, shlw = (as_numpy(o) for o in out)
    np.testing.assert_array_equal(band, x & y)
    np.testing.assert_array_equal(bor, x | y)
    np.testing.assert_array_equal(bxor, x ^ y)
    np.testing.assert_array_equal(bnot, ~x)
    np.testing.assert_array_equal(shl, x << s)
    np.testing.assert_array_equal(shr, x >> s)
    np.testing.assert_array_equal(notw, (~x).astype(np.int64))
    np.testing.assert_array_equal(shlw, (x << s).astype(np.int64))
    # The minimum shifted right by 1: arithmetic (negative) on signed
    # dtypes, logical on unsigned ones (uint's minimum is 0: its maximum >>
    # bits - 1 is 1).
    if np.issubdtype(np.dtype(dtype), np.signedinteger):
        assert shr[0] == np.iinfo(dtype).min // 2 and shr[3] == -1
        assert shl[1] == -2 ** (np.iinfo(dtype).bits - 1)  # max << (bits - 1)
    else:
        # ~0 read as int64: the dtype's maximum below 64 bits, not int64's -1.
        info = np.iinfo(dtype)
        assert shr[1] == 1 and notw[2] == (info.max if info.bits < 64 else -1)


def functions(target):
    """T.bitwise_* / T.shift_* on uint32 (a hash), with int32 operands
    promoted to uint32 and a literal taking the other operand's dtype."""

    def make():
        @T.prim_func
        def main(X: T.Tensor((N,), "uint32"), Y: T.Tensor((N,), "int32"),
                 H: T.Tensor((N,), "uint32"), M: T.Tensor((N,), "uint32")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    h = T.bitwise_xor(X[k], T.shift_right(X[k], 16)) * 2246822507
                    h = T.bitwise_or(T.shift_left(h, 5), T.shift_right(h, 27))
                    H[k] = T.bitwise_and(h, T.bitwise_not(Y[k]))
                    M[k] = 0xF0F0F0F0 & (Y[k] | 7)
        return main
    return tilejit.compile(make(), out_idx=[-2, -1], target=target)


@needs_tile_cpu
@on_targets
def test_tvm_functions_on_uint32(target):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(-2**31, 2**31, size=N, dtype=np.int64).astype(np.int32)
    x[:2] = [2**32 - 1, 2**31]
    y[:2] = [-1, -2**31]
    h, m = (as_numpy(o) for o in functions(target)(to_target(target, x), to_target(target, y)))
    u = y.astype(np.uint32)  # TVM: int32 with uint32 is uint32
    want = ((x ^ (x >> np.uint32(16))).astype(np.uint64) * 2246822507 % 2**32).astype(np.uint32)
    want = (want << np.uint32(5)) | (want >> np.uint32(27))
    np.testing.assert_array_equal(h, want & ~u)
    assert h.dtype == np.uint32 and m.dtype == np.uint32
    np.testing.assert_array_equal(m, (u | np.uint32(7)) & np.uint32(0xF0F0F0F0))


M, K = 8, 64


def dequant(target):
    """Two 4-bit values a byte, low nibble first: unsigned (minus 8) as
    float32, and signed (the nibble's top bit spread by an int8 shift)."""

    def make():
        @T.prim_func
        def main(B: T.Tensor((M, K // 2), "uint8"), U: T.Tensor((M, K), "float32"),
                 S: T.Tensor((M, K), "int8")):
            with T.Kernel(1, threads=64):
                for i, j in T.Parallel(M, K):
                    nibble = (B[i, j // 2] >> (4 * (j % 2))) & 0xF
                    U[i, j] = nibble.astype("float32") - 8
                    S[i, j] = T.cast(nibble << 4, "int8") >> 4
        return main
    return tilejit.compile(make(), out_idx=[-2, -1], target=target)


def dequant_reference(b):
    nib = np.stack([b & 0xF, b >> 4], axis=-1).reshape(b.shape[0], -1).astype(np.int32)
    return (nib - 8).astype(np.float32), np.where(nib >= 8, nib - 16, nib).astype(np.int8)


@needs_tile_cpu
@on_targets
def test_4bit_dequantisation(target):
    b = np.random.default_rng(3).integers(0, 256, size=(M, K // 2), dtype=np.uint8)
    b[0, :3] = [0x0F, 0xF0, 0x87]
    u, s = (as_numpy(o) for o in dequant(target)(to_target(target, b)))
    want_u, want_s = dequant_reference(b)
    np.testing.assert_array_equal(u, want_u)
    np.testing.assert_array_equal(s, want_s)
    assert list(s[0, :6]) == [-1, 0, 0, -1, 7, -8]


def masks(target):
    """& | ^ ~ of bool masks stay logical (^ is !=); a mask with an int
    literal too."""

    def make():
        @T.prim_func
        def main(X: T.Tensor((N,), "int32"), R: T.Tensor((N,), "int32")):
            with T.Kernel(N // 64, threads=64) as bx:
                for i in T.Parallel(64):
                    k = bx * 64 + i
                    a = X[k] > 0
                    b = (X[k] & 1) == 0
                    R[k] = T.if_then_else(a ^ b, 1, 0) + T.if_then_else(~a & b, 2, 0) + \
                        T.if_then_else((a | b) & 1, 4, 0)
        return main
    return tilejit.compile(make(), out_idx=[-1], target=target)


@needs_tile_cpu
def test_masks_stay_logical():
    x = np.arange(-N // 2, N // 2, dtype=np.int32)
    r = masks("cpu")(x)
    a, b = x > 0, (x & 1) == 0
    np.testing.assert_array_equal(r, (a ^ b) * 1 + (~a & b) * 2 + (a | b) * 4)


@needs_tile_cpu
def test_functions_of_python_ints_fold():
    @T.prim_func
    def main(X: T.Tensor((4,), "int32")):
        with T.Kernel(1):
            X[0] = T.bitwise_and(6, 3) + T.shift_left(1, 4) + T.bitwise_not(0)  # 2 + 16 - 1
            X[1] = T.bitwise_xor(5, 1) | T.shift_right(-64, 3)  # 4 | -8
            X[2] = T.bitwise_or(T.uint8(1), 2) << 6
    x = np.zeros(4, dtype=np.int32)
    tilejit.compile(main, target="cpu")(x)
    assert list(x) == [17, -4, 192, 0]
    assert "17" in main.script() and "192" in main.script()


# --- errors at the author's line --------------------------------------------

def declaration_error(kind, message, body_line_offset, col, make):
    line = inspect.getsourcelines(make)[1] + body_line_offset
    with raises_exact(kind, f"{F}:{line}:{col}: {message}"):
        make()


def test_float_operands_are_type_errors():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                A[0] = A[1] & 1
    declaration_error(TypeError, "& on a float32 operand: bitwise operators need integer "
                                 "operands (or bool masks for & | ^)", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float16"), X: T.Tensor((4,), "int32")):
            with T.Kernel(1):
                X[0] = X[1] >> A[0]
    declaration_error(TypeError, ">> on a float16 operand: bitwise operators need integer "
                                 "operands (or bool masks for & | ^)", 4, 24, make)

    def make():
        @T.prim_func
        def main(X: T.Tensor((4,), "int32")):
            with T.Kernel(1):
                X[0] = T.shift_left(X[1], 2.5)
    declaration_error(TypeError, "<< on a float32 operand: bitwise operators need integer "
                                 "operands (or bool masks for & | ^)", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                A[0] = ~A[1]
    declaration_error(TypeError, "~ on a float32 operand: bitwise operators need integer "
                                 "operands (or bool masks)", 4, 24, make)

    def make():
        @T.prim_func
        def main(X: T.Tensor((4,), "int32")):
            with T.Kernel(1):
                X[0] = T.if_then_else((X[1] > 0) << 1, 1, 0)
    declaration_error(TypeError, "<< on a bool operand: shifts need integer operands", 4, 39,
                      make)


def test_constant_shift_out_of_range_is_a_value_error():
    def make():
        @T.prim_func
        def main(X: T.Tensor((4,), "int32")):
            with T.Kernel(1):
                X[0] = X[1] << 32
    declaration_error(ValueError, "shift amount 32 is out of range for int32 (0 to 31) in "
                                  "X[1] << 32", 4, 24, make)

    def make():
        @T.prim_func
        def main(X: T.Tensor((4,), "uint8")):
            with T.Kernel(1):
                X[0] = X[1] >> -1
    declaration_error(ValueError, "shift amount -1 is out of range for uint8 (0 to 7) in "
                                  "X[1] >> -1", 4, 24, make)

    def make():
        @T.prim_func
        def main(X: T.Tensor((4,), "int32")):
            with T.Kernel(1):
                X[0] = T.shift_left(1, 40)
    declaration_error(ValueError, "shift amount 40 is out of range for int32 (0 to 31) in "
                                  "1 << 40", 4, 24, make)


def test_symbols_shift_and_mask():
    n = T.symbolic("n")
    assert repr(n >> 1) == "n >> 1" and repr(1 << n) == "1 << n"
    assert repr((n & 3) | 1) == "n & 3 | 1" and repr(~n ^ n) == "~n ^ n"


# --- CUDA -------------------------------------------------------------------

@needs_cuda_target
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_cuda_source_compiles(dtype):
    source = operators(dtype, "cuda").get_kernel_source()
    assert " << " in source and " >> " in source and "~" in source, source


@needs_cuda_target
@pytest.mark.parametrize("make, text", [(functions, " << "), (dequant, " >> "), (masks, " != ")])
def test_the_cuda_source_of_the_programs_compiles(make, text):
    source = make("cuda").get_kernel_source()
    assert text in source, source

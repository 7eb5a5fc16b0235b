"""The tile language's Python front end: what each construct records.

The prim_funcs here record into a fake builder (tile_fake.py) that prints
what it receives, so these tests check the AST rewrite and the tracing on
their own; test_tile_kernels.py runs kernels through the real builder."""

import inspect
import math

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from tile_fake import recording


def lines(f):
    return f.text.splitlines()


def here():
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


# --- the signature and the kernel ------------------------------------------

def test_signature_kernel_and_block_indices():
    M = T.symbolic("M")
    with recording():
        @T.prim_func
        def main(A: T.Tensor((M, 64), "float16"), n: T.int32, B: T.Buffer((M, 64), T.float32)):
            with T.Kernel(T.ceildiv(M, 32), 2, threads=(32, 4)) as (bx, by):
                B[bx, by] = A[bx, by] + n
    assert main.params == ["A: float16[M, 64]", "n: int32", "B: float32[M, 64]"]
    assert lines(main) == [
        "kernel(ceildiv(M, 32), 2; threads=[32, 4]) as bx, by:",
        "  B[bx, by] = float32((A[bx, by] + n))",
    ]


def test_kernel_threads_default_and_one_index():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(8) as bx:
                A[bx] = 1
            with T.Kernel(2, 3, 4, threads=64) as (bx, by, bz):
                tx = T.get_thread_binding()
                A[bx + by + bz + tx] = 2.5
    assert lines(main) == [
        "kernel(8; threads=[128]) as bx:",
        "  A[bx] = 1.0",
        "kernel(2, 3, 4; threads=[64]) as bx_1, by, bz:",
        "  A[(((bx_1 + by) + bz) + tx)] = 2.5",
    ]


def test_use_swizzle_records_its_order_and_drops_when_disabled():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(2, 4) as (bx, by):
                T.use_swizzle(panel_size=10)
                T.use_swizzle(3, order="col", enable=False)
                T.use_swizzle(3, order="column")
                A[by, bx] = 1
    assert lines(main) == [
        "kernel(2, 4; threads=[128]) as bx, by:",
        "  use_swizzle(10, order=row, enable=True)",
        "  use_swizzle(3, order=col, enable=True)",
        "  A[by, bx] = 1.0",
    ]


# --- buffers ---------------------------------------------------------------

def test_allocations_take_their_names_and_scopes():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1):
                A_s = T.alloc_shared((64, 32), "float16")
                C_f = T.alloc_fragment((64, 64), T.float)
                L = T.alloc_fragment([4], "float32", scope="local")
                R = T.alloc_local((2, 2), T.bfloat16)
                acc = T.alloc_reducer((64,), "float32", op="max")
                T.alloc_shared(8, "int32")
                A_s2 = T.alloc_shared(16, "int8")
                A_s2 = T.alloc_shared(16, "int8")
                T.finalize_reducer(acc, L)
                T.finalize_reducer(acc)
                assert (A_s.shape, A_s.dtype, A_s.ndim, A_s.scope()) == ((64, 32), "float16", 2,
                                                                         "shared")
                assert C_f.scope() == "fragment" and L.scope() == "local" and R.dtype == "bfloat16"
    assert lines(main) == [
        "kernel(1; threads=[128]) as bx:",
        "  A_s = alloc_shared(float16[64, 32])",
        "  C_f = alloc_fragment(float32[64, 64])",
        "  L = alloc_local(float32[4])",
        "  R = alloc_local(bfloat16[2, 2])",
        "  acc = alloc_fragment(float32[64])",
        "  buf = alloc_shared(int32[8])",
        "  A_s2 = alloc_shared(int8[16])",
        "  A_s2_1 = alloc_shared(int8[16])",
        "  copy(acc -> L)",
    ]


def test_alloc_var_reads_as_its_value_and_assignment_stores():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "int32")):
            with T.Kernel(1):
                x = T.alloc_var(T.int32, init=3)
                y = T.alloc_var("float32")
                z = T.alloc_var("int32", 7)
                x = x + 1
                x += A[0]
                y = T.cast(x, "float32") * 0.5
                A[x] = z
    assert lines(main) == [
        "kernel(1; threads=[128]) as bx:",
        "  x = alloc_local(int32[1])",
        "  x[0] = 3",
        "  y = alloc_local(float32[1])",
        "  z = alloc_local(int32[1])",
        "  z[0] = 7",
        "  x[0] = (x[0] + 1)",
        "  x[0] = (x[0] + A[0])",
        "  y[0] = (float32(x[0]) * 0.5)",
        "  A[x[0]] = z[0]",
    ]


def test_alloc_global_with_symbolic_shape_and_init():
    M = T.symbolic("M")
    with recording():
        @T.prim_func
        def main(A: T.Tensor((M,), "float32")):
            W = T.alloc_global((M, 4), "float32", init="zero")
            with T.Kernel(1):
                S = T.alloc_global((T.ceildiv(M, 64),), "int32", init="zero_once")
                E = T.alloc_global((8,), "float32")
                T.copy(A[0:4], W[0, :])
    assert lines(main) == [
        "W = alloc_global(float32[M, 4], init=zero)",
        "kernel(1; threads=[128]) as bx:",
        "  S = alloc_global(int32[ceildiv(M, 64)], init=zero_once)",
        "  E = alloc_global(float32[8], init=empty)",
        "  copy(A[0:+4] -> W[0:+1, 0:+4])",
    ]


# --- tile ops --------------------------------------------------------------

def test_copy_operand_forms():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((256, 128), "float16"), C: T.Tensor((256, 128), "float32")):
            with T.Kernel(2, 4) as (bx, by):
                A_s = T.alloc_shared((128, 32), "float16")
                T.copy(A[bx * 128, by * 32], A_s)                       # start corner
                T.copy(A[bx * 128:(bx + 1) * 128, by * 32:by * 32 + 32], A_s)  # slice
                T.copy(A_s, C[bx * 128:bx * 128 + 128, :32])             # open slices
                T.copy(A_s[0:64, :], C[0, 0])
                T.copy(A_s, A_s)                                         # whole buffers
    assert lines(main)[2:] == [
        "  copy(A@[(bx * 128), (by * 32)] -> A_s)",
        "  copy(A[(bx * 128):+(((bx + 1) * 128) - (bx * 128)), (by * 32):+(((by * 32) + 32) - "
        "(by * 32))] -> A_s)",
        "  copy(A_s -> C[(bx * 128):+(((bx * 128) + 128) - (bx * 128)), 0:+32])",
        "  copy(A_s[0:+64, 0:+32] -> C@[0, 0])",
        "  copy(A_s -> A_s)",
    ]


def test_gemm_fill_clear_reduce_atomic_print():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16"), O: T.Tensor((64,), "float32")):
            with T.Kernel(1):
                A_s = T.alloc_shared((64, 64), "float16")
                C = T.alloc_fragment((64, 64), "float32")
                r = T.alloc_fragment((64,), "float32")
                T.gemm(A_s, A_s, C, transpose_B=True, clear_accum=True,
                       policy=T.GemmWarpPolicy.FullRow)
                T.gemm(A_s, A_s, C, True, False)
                T.fill(C, -T.infinity("float32"))
                T.fill(r[0:32], 1)
                T.clear(r)
                T.reduce_max(C, r, dim=1, clear=False)
                T.reduce_sum(C, r, dim=-1)
                T.reduce_min(C, r, 0)
                T.reduce_abssum(C, r)
                T.reduce_absmax(C, r, dim=1)
                T.reduce(C, r, "sum", 1, True)
                T.atomic_add(O[3], r[3])
                T.atomic_add(O[0:64], r)
                T.atomic_add(O, r)
                T.print(r[0], msg="r0")
                T.print(C)
    assert lines(main)[4:] == [
        "  gemm(A_s, A_s, C, trans_a=False, trans_b=True, clear_accum=True, policy=1)",
        "  gemm(A_s, A_s, C, trans_a=True, trans_b=False, clear_accum=False, policy=0)",
        "  fill(C, (0.0 - inf))",
        "  fill(r[0:+32], 1.0)",
        "  fill(r, 0.0)",
        "  reduce_max(C -> r, dim=1, clear=False)",
        "  reduce_sum(C -> r, dim=1, clear=True)",
        "  reduce_min(C -> r, dim=0, clear=True)",
        "  reduce_abssum(C -> r, dim=1, clear=True)",
        "  reduce_absmax(C -> r, dim=1, clear=True)",
        "  reduce_sum(C -> r, dim=1, clear=True)",
        "  atomic_add(O[3:+1], r[3])",
        "  atomic_add(O[0:+64], r)",
        "  atomic_add(O, r)",
        "  print(r[0], 'r0')",
        "  print(C, '')",
    ]


# --- loops -----------------------------------------------------------------

def test_loop_kinds_and_tuple_targets():
    n = T.symbolic("n")
    with recording():
        @T.prim_func
        def main(A: T.Tensor((n, 16), "float32")):
            with T.Kernel(1):
                for i, j in T.Parallel(4, 16):
                    A[i, j] = 0
                for k in T.serial(n):
                    A[k, 0] = 1
                for k in T.serial(2, 10, 2):
                    A[k, 1] = 1
                for k in T.unroll(4):
                    A[k, 2] = 1
                for k in T.vectorized(8):
                    A[0, k] = 1
                for k in T.Pipelined(1, n, num_stages=2):
                    A[k, 3] = 1
                for k in T.Pipelined(3):
                    A[k, 4] = 1
                for k in range(n):
                    A[k, 5] = 1
                for k in range(1, 9, 4):
                    A[k, 6] = 1
                for (i,) in T.Parallel(2):
                    A[i, 7] = 1
                for ij in T.Parallel(2, 2):
                    A[ij[0], ij[1]] = 1
    assert lines(main)[1:] == [
        "  for i in parallel(0, +4):",
        "    for j in parallel(0, +16):",
        "      A[i, j] = 0.0",
        "  for k in serial(0, +n):",
        "    A[k, 0] = 1.0",
        "  for k_1 in serial(0, +4):",
        "    A[((k_1 * 2) + 2), 1] = 1.0",
        "  for k_2 in unroll(0, +4):",
        "    A[k_2, 2] = 1.0",
        "  for k_3 in vectorized(0, +8):",
        "    A[0, k_3] = 1.0",
        "  for k_4 in pipelined(1, +n - 1) stages=2:",
        "    A[k_4, 3] = 1.0",
        "  for k_5 in serial(0, +3):",
        "    A[k_5, 4] = 1.0",
        "  for k_6 in serial(0, +n):",
        "    A[k_6, 5] = 1.0",
        "  for k_7 in serial(0, +2):",
        "    A[((k_7 * 4) + 1), 6] = 1.0",
        "  for i_1 in parallel(0, +2):",
        "    A[i_1, 7] = 1.0",
        "  for ij in parallel(0, +2):",
        "    for j_1 in parallel(0, +2):",
        "      A[ij, j_1] = 1.0",
    ]


def test_python_loops_unroll_while_tracing():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            for s in [1, 2]:
                with T.Kernel(s):
                    for k in (0, 3):
                        A[k + s] = k
            with T.Kernel(1):
                count = 0
                while count < 2:
                    A[count] = 5
                    count += 1
                for q in [0, 1, 2, 3]:
                    if q == 1:
                        continue
                    if q == 3:
                        break
                    A[q] = 9
    assert lines(main) == [
        "kernel(1; threads=[128]) as bx:",
        "  A[1] = 0.0",
        "  A[4] = 3.0",
        "kernel(2; threads=[128]) as bx_1:",
        "  A[2] = 0.0",
        "  A[5] = 3.0",
        "kernel(1; threads=[128]) as bx_2:",
        "  A[0] = 5.0",
        "  A[1] = 5.0",
        "  A[0] = 9.0",
        "  A[2] = 9.0",
    ]


def test_break_and_continue_in_traced_loops():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                for k in T.serial(8):
                    if A[k] < 0:
                        break
                    if A[k] == 0:
                        continue
                    A[k] = 1
                x = T.alloc_var("int32", init=0)
                while x < 4:
                    x += 1
    assert lines(main)[1:] == [
        "  for k in serial(0, +8):",
        "    if (A[k] < 0.0):",
        "      break",
        "    if (A[k] == 0.0):",
        "      continue",
        "    A[k] = 1.0",
        "  x = alloc_local(int32[1])",
        "  x[0] = 0",
        "  while (x[0] < 4):",
        "    x[0] = (x[0] + 1)",
    ]


# --- conditions ------------------------------------------------------------

def test_static_conditions_specialise():
    def make(flag, mode):
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                if flag:
                    A[0] = 1
                else:
                    A[0] = 2
                if mode == "a":
                    A[1] = 1
                elif mode == "b" or mode == "c":
                    A[1] = 2
                elif not flag and mode != "d":
                    A[1] = 3
                else:
                    A[1] = 4
                A[2] = 7 if flag else 8
        return main

    with recording():
        got = {(f, m): lines(make(f, m))[1:] for f in (True, False) for m in "abcde"}
    assert got[(True, "a")] == ["  A[0] = 1.0", "  A[1] = 1.0", "  A[2] = 7.0"]
    assert got[(True, "c")] == ["  A[0] = 1.0", "  A[1] = 2.0", "  A[2] = 7.0"]
    assert got[(False, "e")] == ["  A[0] = 2.0", "  A[1] = 3.0", "  A[2] = 8.0"]
    assert got[(False, "d")] == ["  A[0] = 2.0", "  A[1] = 4.0", "  A[2] = 8.0"]
    assert got[(True, "e")] == ["  A[0] = 1.0", "  A[1] = 4.0", "  A[2] = 7.0"]


def test_symbolic_conditions_record_both_branches():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1) as bx:
                for i, j in T.Parallel(8, 8):
                    if i < j:
                        A[i, j] = 1
                    elif i == j:
                        A[i, j] = 2
                    else:
                        A[i, j] = 3
                    if bx == 0 and i > 2 or not j < 4:
                        A[i, j] = 4
                    if 0 < i < j <= 6:
                        A[i, j] = 5
                    A[i, j] = T.if_then_else(i > 1, A[i, j], 0.0) + (1.0 if j > 2 else 2.0)
                    A[i, j] = (i < 4) & (j > 1) | (i == 0)
                    A[i, j] = ~(i < 4)
                    if i < 4 and True:
                        A[i, j] = 6
                    if i < 4 and False:
                        A[i, j] = 7
                    if False or i < 4:
                        A[i, j] = 8
    assert lines(main)[3:] == [
        "      if (i < j):",
        "        A[i, j] = 1.0",
        "      else:",
        "        if (i == j):",
        "          A[i, j] = 2.0",
        "        else:",
        "          A[i, j] = 3.0",
        "      if (((bx == 0) and (i > 2)) or (not (j < 4))):",
        "        A[i, j] = 4.0",
        "      if (((0 < i) and (i < j)) and (j <= 6)):",
        "        A[i, j] = 5.0",
        "      A[i, j] = (select((i > 1), A[i, j], 0.0) + select((j > 2), 1.0, 2.0))",
        "      A[i, j] = float32((((i < 4) and (j > 1)) or (i == 0)))",
        "      A[i, j] = float32((not (i < 4)))",
        "      if (i < 4):",
        "        A[i, j] = 6.0",
        "      if (i < 4):",
        "        A[i, j] = 8.0",
    ]


def test_symbols_in_conditions_and_compares_with_python_values():
    n = T.symbolic("n")
    with recording():
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1):
                if n > 4:
                    A[0] = 1
                three = 3
                if three is not None and n in (n,):
                    A[1] = 2
    assert lines(main)[1:] == ["  if (n > 4):", "    A[0] = 1.0", "  A[1] = 2.0"]


# --- expressions -----------------------------------------------------------

def test_arithmetic_dtypes_and_math():
    seen = {}
    with recording():
        @T.prim_func
        def main(H: T.Tensor((4,), "float16"), F: T.Tensor((4,), "float32"),
                 I: T.Tensor((4,), "int64")):
            with T.Kernel(1) as bx:
                seen["h+1.0"] = (H[0] + 1.0).dtype
                seen["h+1"] = (H[0] + 1).dtype
                seen["i+1"] = (bx + 1).dtype
                seen["i+1.5"] = (bx + 1.5).dtype
                seen["I*2"] = (I[0] * 2).dtype
                seen["cmp"] = (bx < 2).dtype
                seen["cast"] = T.cast(bx, "float16").dtype
                seen["Cast"] = T.Cast(T.bfloat16, bx).dtype
                seen["astype"] = H[0].astype(T.float32).dtype
                seen["T.float32()"] = T.float32(bx).dtype
                seen["np"] = (F[0] + np.float32(2)).dtype
                F[0] = T.exp(F[1]) + T.exp2(F[1]) + T.log(F[1]) + T.log2(F[1])
                F[1] = T.sqrt(F[1]) - T.rsqrt(F[1]) * T.tanh(F[1]) / T.sigmoid(F[1])
                F[2] = T.max(F[0], F[1]) + T.min(F[0], 2) + T.abs(F[3]) + abs(F[2]) - -F[0]
                F[3] = bx // 2 + bx % 3 + 7 // (bx + 1) + T.ceildiv(bx, 4)
                I[0] = T.floordiv(bx, 2) + T.floormod(bx, 2) - 1
                H[0] = H[1] / 2
                F[0] = T.infinity(T.float32)
                F[1] = T.ninf("float32")
    assert seen == {"h+1.0": "float16", "h+1": "float16", "i+1": "int32", "i+1.5": "float32",
                    "I*2": "int64", "cmp": "bool", "cast": "float16", "Cast": "bfloat16",
                    "astype": "float32", "T.float32()": "float32", "np": "float32"}
    assert lines(main)[1:] == [
        "  F[0] = (((exp(F[1]) + exp2(F[1])) + log(F[1])) + log2(F[1]))",
        "  F[1] = (sqrt(F[1]) - ((rsqrt(F[1]) * tanh(F[1])) / sigmoid(F[1])))",
        "  F[2] = ((((max(F[0], F[1]) + min(F[0], 2.0)) + abs(F[3])) + abs(F[2])) - "
        "(0.0 - F[0]))",
        "  F[3] = float32(((((bx // 2) + (bx % 3)) + (7 // (bx + 1))) + ceildiv(bx, 4)))",
        "  I[0] = int64((((bx // 2) + (bx % 2)) - 1))",
        "  H[0] = (H[1] / 2.0)",
        "  F[0] = inf",
        "  F[1] = (0.0 - inf)",
    ]


def test_helpers_stay_python_outside_tile_values():
    n = T.symbolic("n")
    assert T.max(3, 5) == 5 and T.min(3, 5) == 3 and T.ceildiv(10, 4) == 3
    assert repr(T.max(n, 2)) == "max(n, 2)" and repr(T.ceildiv(n, 4)) == "ceildiv(n, 4)"
    assert T.exp(0.0) == 1.0 and T.sqrt(4.0) == 2.0 and T.abs(-3) == 3
    assert T.max(1.5, 2) == 2
    # NaN from either side, as torch.maximum and the targets' T.max (Python's
    # max keeps only a NaN that comes first).
    nan = float("nan")
    for a, b in ((nan, 1.0), (1.0, nan)):
        assert math.isnan(T.max(a, b)) and math.isnan(T.min(a, b))


def test_assignments_let_bind_loads_only():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1) as bx:
                v = A[bx]             # reads a buffer: a let
                w = bx * 2 + 1        # pure index arithmetic: inlined
                A[bx] = 0
                A[w] = v
                u: T.float32 = A[1]   # annotated
                a, b = A[2], bx       # tuple targets: Python's
                A[b] = a
                A[0] += 1
    assert lines(main)[1:] == [
        "  let v = A[bx]",
        "  A[bx] = 0.0",
        "  A[((bx * 2) + 1)] = v",
        "  let u = A[1]",
        "  A[bx] = A[2]",
        "  A[0] = (A[0] + 1.0)",
    ]


def test_macros_are_plain_functions():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            def scale(buf, i, f):
                if f != 1:
                    buf[i] = buf[i] * f
                return f

            with T.Kernel(1) as bx:
                scale(A, bx, 2)
                scale(A, bx, 1)
                r = [scale(A, k, 3) for k in range(2)]
                assert r == [3, 3]
    assert lines(main)[1:] == ["  A[bx] = (A[bx] * 2.0)", "  A[0] = (A[0] * 3.0)",
                               "  A[1] = (A[1] * 3.0)"]


def test_spans_are_the_authors_file_line_and_column():
    with recording():
        line = here()

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                A_s = T.alloc_shared((8,), "float32")
                T.copy(A, A_s); T.fill(A_s, 0)  # noqa: E702
                for i in T.serial(8):
                    if A_s[i] > 0:
                        A[i] = A_s[i]
    file = __file__
    assert main.spans == [
        ("param", (file, line + 3, 18)),
        ("kernel", (file, line + 4, 18)),
        ("alloc", (file, line + 5, 23)),
        ("copy", (file, line + 6, 17)),
        ("fill", (file, line + 6, 33)),
        ("for", (file, line + 7, 17)),
        ("if", (file, line + 8, 21)),
        ("store", (file, line + 9, 25)),
    ]


def test_t_source_bodies_still_make_phase1_prim_funcs():
    with recording():
        @T.prim_func
        def main(X: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                if 2 > 1:
                    T.source(cpu="X(0) = 1.0f;")
    assert isinstance(main, tilejit.PrimFunc)
    assert main.bodies == {"cpu": "X(0) = 1.0f;"}


def test_rewritten_bodies_are_cached_per_function():
    from tilejit.language import rewrite

    def factory(k):
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                A[0] = k
        return main

    with recording():
        first = factory(1)
        size = len(rewrite._cache)
        second = factory(2)
    assert len(rewrite._cache) == size
    assert lines(first)[1:] == ["  A[0] = 1.0"] and lines(second)[1:] == ["  A[0] = 2.0"]


def test_loop_over_tile_ranges_without_the_rewrite():
    # A body whose source is unavailable runs as written: loops over T.*
    # ranges still trace (their __iter__ records the loop).
    src = (
        "def main(A: T.Tensor((8,), 'float32')):\n"
        "    with T.Kernel(1):\n"
        "        for i in T.serial(8):\n"
        "            A[i] = 1\n")
    scope = {"T": T}
    exec(compile(src, "<generated>", "exec"), scope)
    with recording():
        f = T.prim_func(scope["main"])
    assert lines(f)[1:] == ["  for i in serial(0, +8):", "    A[i] = 1.0"]


@pytest.mark.parametrize("name", ["set_max_nreg", "alloc_barrier"])
def test_unsupported_names_are_attribute_errors(name):
    with pytest.raises(AttributeError, match=f"T.{name} is not supported by tilejit's tile "
                                             f"language"):
        getattr(T, name)


# --- a TileLang program, unchanged but for the import ------------------------

# The kernel of TileLang's README (tile-ai/tilelang, README.md, before its
# switch to the eager style; MIT licence), as its users write it.
def readme_matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float):

    @T.prim_func
    def matmul_relu_kernel(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            # Enable rasterization for better L2 cache locality (Optional)
            # T.use_swizzle(panel_size=10, enable=True)

            # Clear local accumulation
            T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                # Copy tile of A
                # This is a sugar syntax for parallelized copy
                T.copy(A[by * block_M, ko * block_K], A_shared)

                # Copy tile of B
                T.copy(B[ko * block_K, bx * block_N], B_shared)

                # Perform a tile-level GEMM on the shared buffers
                # Currently we dispatch to the cute/hip on Nvidia/AMD GPUs
                T.gemm(A_shared, B_shared, C_local)

            # relu
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)

            # Copy result back to global memory
            T.copy(C_local, C[by * block_M, bx * block_N])

    return matmul_relu_kernel


def test_tilelang_readme_gemm_traces():
    with recording():
        f = readme_matmul(1024, 512, T.symbolic("k"), 128, 128, 32)
    assert f.params == ["A: float16[1024, k]", "B: float16[k, 512]", "C: float16[1024, 512]"]
    assert lines(f) == [
        "kernel(4, 8; threads=[128]) as bx, by:",
        "  A_shared = alloc_shared(float16[128, 32])",
        "  B_shared = alloc_shared(float16[32, 128])",
        "  C_local = alloc_fragment(float32[128, 128])",
        "  fill(C_local, 0.0)",
        "  for ko in pipelined(0, +ceildiv(k, 32)) stages=3:",
        "    copy(A@[(by * 128), (ko * 32)] -> A_shared)",
        "    copy(B@[(ko * 32), (bx * 128)] -> B_shared)",
        "    gemm(A_shared, B_shared, C_local, trans_a=False, trans_b=False, clear_accum=False, "
        "policy=0)",
        "  for i in parallel(0, +128):",
        "    for j in parallel(0, +128):",
        "      C_local[i, j] = max(C_local[i, j], 0.0)",
        "  copy(C_local -> C@[(by * 128), (bx * 128)])",
    ]


@T.macro
def clamp_row(buf, i, n, limit):
    """A helper at module level: traced (and rewritten) where it is called."""
    for j in T.serial(n):
        if buf[i, j] > limit:
            buf[i, j] = limit
        elif not buf[i, j] > -limit:
            buf[i, j] = -limit


def test_macros_are_rewritten_where_called():
    with recording():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(4) as bx:
                clamp_row(A, bx, 8, 1.5)
    assert lines(main)[1:] == [
        "  for j in serial(0, +8):",
        "    if (A[bx, j] > 1.5):",
        "      A[bx, j] = 1.5",
        "    else:",
        "      if (not (A[bx, j] > -1.5)):",
        "        A[bx, j] = -1.5",
    ]
    with pytest.raises(RuntimeError, match="^the T.macro clamp_row is only callable inside a "
                                           "function decorated with @T.prim_func$"):
        clamp_row(None, 0, 1, 1.0)

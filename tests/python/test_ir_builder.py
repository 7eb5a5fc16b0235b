"""tilejit._C.TileBuilder and the tile-IR expressions, as the front end drives them."""

import pytest

from tilejit import _C
from support import raises_exact

SPAN = ("k.py", 12, 8)


def elementwise():
    b = _C.TileBuilder("add")
    n = _C.Expr.var("n")
    A = b.tensor_param("A", [n], "float32", span=("k.py", 1, 9))
    C = b.tensor_param("C", [n], "float32")
    (bx,) = b.begin_kernel([_C.ceildiv(n, 128)], [128], span=("k.py", 2, 4))
    S = b.alloc("A_s", [128], "float32", "shared")
    b.copy(A[bx * 128], S)
    i = b.begin_for("i", 0, 128, kind="parallel")
    b.store(S, [i], S[i] * 2.0)
    b.end_for()
    b.copy(S, C[bx * 128])
    b.end_kernel()
    return b


def test_builder_makes_a_tile_prim_func():
    f = elementwise().finish()
    assert f.is_tile and f.bodies == {}
    assert f.name == "add" and [p["name"] for p in f.params] == ["A", "C"]
    assert f.threads == 128 and [repr(g) for g in f.grid] == ["ceildiv(n, 128)"]
    assert f.script() == (
        "func add(A: float32[n], C: float32[n])\n"
        "kernel(bx in [ceildiv(n, 128)], threads tx in [128]):\n"
        "  alloc A_s: shared float32[128]\n"
        "  copy(A[bx * 128:bx * 128 + 128], A_s[0:128])\n"
        "  for i in parallel(0, 128):\n"
        "    A_s[i] = A_s[i] * 2.0\n"
        "  copy(A_s[0:128], C[bx * 128:bx * 128 + 128])\n")


def test_expression_operators():
    x = _C.make_var("x", "float16")
    i = _C.make_var("i")
    assert x.dtype == "float16" and i.dtype == "int32" and i.var_id > 0
    assert repr(x * 0.5 + 1) == "x * float16(0.5) + float16(1.0)"
    assert (x * 0.5).dtype == "float16"
    assert repr(2.0 * x) == "float16(2.0) * x"
    assert repr(x / 2) == "x / float16(2.0)"
    assert repr(1 - x) == "float16(1.0) - x"
    assert repr(i // 4 + i % 4) == "i // 4 + i % 4"
    assert repr((i < 4) & (i >= 0)) == "i < 4 && i >= 0"
    assert repr((i == 1) | ~(i != 2)) == "i == 1 || !(i != 2)"
    assert (i < 4).dtype == "bool" and (i < 4).kind == "LT"
    assert repr(x.astype("float32")) == "float32(x)"
    assert repr(_C.cast("int32", x)) == "int32(x)"
    assert repr(_C.select(i < 2, x, 0.0)) == "select(i < 2, x, float16(0.0))"
    assert repr(_C.call_intrinsic("exp2", [x])) == "exp2(x)"
    assert repr(_C.call_intrinsic("pow", [x, 2])) == "pow(x, float16(2.0))"
    assert repr(_C.infinity("float32")) == "inf"
    assert repr(_C.truncdiv(i, 3)) == "i / 3"
    assert repr(_C.const(3, "int8")) == "3" and _C.const(3, "int8").dtype == "int8"
    assert _C.const(1.5, "bfloat16").value == 1.5 and float(_C.const(2, "float32")) == 2.0
    assert repr(_C.logical_not(_C.logical_or(i < 1, i > 2))) == "!(i < 1 || i > 2)"


def test_phase1_equality_still_reads_as_bool():
    b, s = _C.Expr.var("b"), _C.Expr.var("s")
    assert b == _C.Expr.var("b") and b != s and not (b == s)
    assert {b * 2: 1}[_C.Expr.var("b") * 2] == 1
    assert (b == None) is False  # noqa: E711
    c = _C.Expr(3) * 4
    assert c == 12 and bool(c == 12)
    with raises_exact(TypeError, "'b < s' is symbolic: its truth value is known only when "
                                 "the kernel runs"):
        bool(b < s)


def test_buffers_loads_and_regions():
    b = _C.TileBuilder("f")
    n = _C.Expr.var("n")
    A = b.tensor_param("A", [n, 64], "bfloat16")
    assert (A.name, A.dtype, A.scope, A.param, A.ndim) == ("A", "bfloat16", "global", 0, 2)
    assert [repr(d) for d in A.shape] == ["n", "64"]
    assert repr(A) == "<Buffer A: global bfloat16[n, 64]>"
    i = _C.make_var("i")
    ld = A[i, 3]
    assert ld.kind == "Load" and ld.dtype == "bfloat16" and ld.buffer == A
    assert [repr(x) for x in ld.indices] == ["i", "3"]
    r = A[0:128, i * 32:i * 32 + 32]
    assert isinstance(r, _C.Region) and repr(r) == "A[0:128, i * 32:i * 32 + 32]"
    assert [(repr(m), repr(e)) for m, e in r.ranges] == [("0", "128"), ("i * 32", "32")]
    assert repr(A[:, 4]) == "A[0:n, 4:5]"
    assert repr(_C.region(A, [(0, 16), (i, 8)])) == "A[0:16, i:i + 8]"
    c = _C.corner(A, [i, 0])
    assert c.is_corner and not c.is_whole and c.ranges[0][1] is None
    assert _C.whole(A).is_whole
    assert repr(_C.load(A, [0, i])) == "A[0, i]"
    with raises_exact(ValueError, "A: slices with a step are not supported"):
        A[0:4:2, 0]
    with raises_exact(ValueError, "A: 1 subscripts for a buffer of rank 2"):
        A[0:4]
    with raises_exact(ValueError, "load of A: 1 indices for a buffer of rank 2"):
        A[0]


def test_every_builder_method():
    b = _C.TileBuilder("every")
    M, K = _C.Expr.var("M"), _C.Expr.var("K")
    A = b.tensor_param("A", [M, K], "float16")
    alpha = b.scalar_param("alpha", "float32")
    ws = b.alloc_global("ws", [M], "float32", init="zero_once")
    assert ws.init == "zero_once" and ws.param == -1
    bx, by = b.begin_kernel([M, 2], [32, 4])
    ty = b.thread_binding(1)
    F = b.alloc("acc", [4, 8], "float", "fragment")
    L = b.alloc("v", [4], "float32", "local")
    b.fill(F, 0)
    k = b.begin_for("k", 0, _C.ceildiv(K, 8), kind="pipelined", stages=2)
    b.copy(A[bx * 4, k * 8], F)
    b.end_for()
    b.reduce("sum", F, L, 1, clear=False)
    t = b.let("t", L[0] * alpha)
    b.begin_if(t > 0.0)
    b.atomic_add(ws[bx], t)
    b.begin_else()
    b.atomic_add(ws[0:4], F[0:4, 0:1])
    b.end_if()
    b.begin_while(ty < 2)
    b.break_loop()
    b.continue_loop()
    b.end_while()
    b.evaluate(ty)
    b.print(t, "t")
    b.print(F)
    G = b.alloc("g", [8, 8], "float32", "fragment")
    b.gemm(F, G, F, trans_b=True, clear_accum=True, policy=2)
    b.end_kernel()
    f = b.finish()
    assert "global ws: float32[M] init=zero_once\n" in f.script()
    assert ("  gemm(acc[0:4, 0:8], g[0:8, 0:8], acc[0:4, 0:8], trans_b=true, clear_accum=true, "
            "policy=2)\n") in f.script()
    assert "    atomic_add(ws[0:4], acc[0:4, 0:1])\n" in f.script()


def test_module_makers_for_the_front_end():
    i = _C.make_var("i")
    x = _C.float_imm(0.5, "float16")
    assert x.dtype == "float16" and _C.int_imm(3).dtype == "int32"
    assert repr(_C.binary("add", i, _C.int_imm(1))) == "i + 1"
    assert _C.binary("lt", i, 4).dtype == "bool"
    assert repr(_C.binary("mul", _C.make_var("y", "float16"), 2.0)) == "y * float16(2.0)"
    with raises_exact(ValueError, "unknown binary operator 'pow'"):
        _C.binary("pow", i, i)
    b = _C.TileBuilder("f")
    A = b.tensor_param("A", [8], "float32")
    assert _C.contains_load(A[i] + 1.0) and not _C.contains_load(i + 1)
    assert _C.to_string(A[i] * 2.0) == "A[i] * 2.0"
    r = _C.Region(A, [(0, 4)])
    assert repr(r) == "A[0:4]" and _C.Region(A, [(i, None)]).is_corner
    b.begin_kernel([1], [1])
    S = b.alloc("S", [4], "float32", "shared")
    b.copy((A, [(4, None)]), S)
    b.end_kernel()
    assert "copy(A[4:8], S[0:4])" in b.finish().script()


def test_finish_runs_the_verifier():
    b = _C.TileBuilder("f")
    A = b.tensor_param("A", [4], "float32")
    b.begin_kernel([1], [1])
    S = b.alloc("S", [8], "float32", "shared")
    b.copy(S, A[0:4], span=SPAN)
    b.end_kernel()
    with raises_exact(ValueError, "k.py:12:8: T.copy: source S[0:8] and destination A[0:4] "
                                  "differ in shape ([8] vs [4])"):
        b.finish()


def test_builder_errors_carry_the_span():
    b = _C.TileBuilder("f")
    with raises_exact(ValueError, "k.py:12:8: T.copy: outside a T.Kernel"):
        b.copy(b.tensor_param("A", [4], "float32"), b.tensor_param("B", [4], "float32"),
               span=SPAN)
    with raises_exact(ValueError, "f: T.Kernel: 0 grid extents; expected 1 to 3"):
        b.begin_kernel([], [128])
    with raises_exact(ValueError, "unknown scope 'texture'; expected shared, fragment or local"):
        b.alloc("S", [4], "float32", "texture")
    with raises_exact(ValueError, "unknown loop kind 'fast'; expected serial, unroll, parallel, "
                                  "vectorized or pipelined"):
        b.begin_for("i", 0, 4, kind="fast")
    with raises_exact(TypeError, "T.copy: expected a buffer or a region, got 3"):
        b.copy(3, 4)
    with raises_exact(TypeError, "span: expected (file, line, col)"):
        b.end_kernel(span=("k.py", 1))

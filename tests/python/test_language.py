"""tilejit.language: symbols, types, and what T.prim_func collects."""

import inspect

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import ml_dtypes, needs_ml_dtypes, raises_exact


# --- symbolic expressions --------------------------------------------------

def test_symbols_print_as_the_cpp_printer():
    b, s, n = T.symbolic("b"), T.symbolic("s"), T.symbolic("n")
    assert isinstance(b, T.Expr)
    assert repr(b) == "b" and str(b) == "b" and b.name == "b" and b.is_var
    assert repr(b * s) == "b * s"
    assert repr(2 * s + 1) == "2 * s + 1"
    assert repr(s * 2 - 1) == "s * 2 - 1"
    assert repr(10 - s) == "10 - s"
    assert repr(s // 2) == "s // 2"
    assert repr(s % 3) == "s % 3"
    assert repr(100 // n) == "100 // n"
    assert repr(7 % n) == "7 % n"
    assert repr(T.ceildiv(n, 64)) == "ceildiv(n, 64)"
    assert repr(T.min(n, 8)) == "min(n, 8)"
    assert repr(T.max(b, s)) == "max(b, s)"
    assert repr((b + s) * 2) == "(b + s) * 2"


def test_symbols_are_identified_by_name():
    assert T.symbolic("b") == T.symbolic("b")
    assert T.symbolic("b") != T.symbolic("s")
    assert hash(T.symbolic("b") * 2) == hash(T.symbolic("b") * 2)


def test_int_helpers_stay_ints():
    assert T.ceildiv(10, 3) == 4 and isinstance(T.ceildiv(10, 3), int)
    assert T.min(3, 5) == 3 and T.max(3, 5) == 5
    assert T.floordiv(-7, 2) == -4 and T.floormod(-7, 2) == 1


def test_constant_expressions_fold_and_convert():
    e = T.symbolic("n") * 0 + 4  # folds only what the constructor folds
    c = tilejit._C.Expr(3) * 4
    assert c.is_const and c.value == 12 and int(c) == 12 and list(range(c))[-1] == 11
    assert tilejit._C.simplify(e).value == 4


def test_symbolic_value_is_unknown_at_declaration():
    with raises_exact(TypeError, "'b' is symbolic: its value is known only when the kernel "
                                 "is called"):
        int(T.symbolic("b"))
    with raises_exact(TypeError, "'b * 2' is symbolic: its value is known only when the kernel "
                                 "is called"):
        range(T.symbolic("b") * 2)


def test_bad_symbol_name():
    with raises_exact(ValueError, "symbol name '1b' is not a C identifier"):
        T.symbolic("1b")


def test_operators_reject_other_types():
    with pytest.raises(TypeError):
        T.symbolic("b") * "x"
    with pytest.raises(TypeError):
        "x" + T.symbolic("b")
    # A float makes a float expression (tile-IR arithmetic); it is not a shape.
    assert (T.symbolic("b") * 1.5).dtype == "float32"
    with raises_exact(TypeError, "main: parameter #0 'A' dimension 0 (b * 1.5) has dtype "
                                 "float32; dimensions are integers"):
        tilejit._C.make_prim_func("main", [("A", "float32", [T.symbolic("b") * 1.5])], [1], 1,
                                  {"cpu": ""})


# --- dtypes ----------------------------------------------------------------

class _FakeTorchDtype:
    """Looks like torch.bfloat16 to tilejit (a torch dtype is recognised by
    its module, so torch is never imported)."""

    __module__ = "torch"

    def __init__(self, name):
        self._name = name

    def __str__(self):
        return f"torch.{self._name}"


_FakeTorchDtype.__module__ = "torch"


@pytest.mark.parametrize("given, expected", [
    ("float32", "float32"), ("bf16", "bfloat16"), ("fp16", "float16"), ("half", "float16"),
    ("int", "int32"), ("long", "int64"), ("bool", "bool"),
    (np.float32, "float32"), (np.dtype("int64"), "int64"), (np.uint8, "uint8"),
    (np.float16, "float16"), (np.bool_, "bool"), (T.int32, "int32"),
    (_FakeTorchDtype("bfloat16"), "bfloat16"), (_FakeTorchDtype("float16"), "float16"),
])
def test_dtype_spellings(given, expected):
    assert T.Tensor([4], given).dtype == expected


@needs_ml_dtypes
def test_ml_dtypes_bfloat16_is_a_dtype():
    assert T.Tensor([4], ml_dtypes.bfloat16).dtype == "bfloat16"


def test_unknown_dtype():
    with raises_exact(ValueError, "unknown dtype 'float8'; expected one of float64, float32, "
                                  "float16, bfloat16, int8, int16, int32, int64, uint8, uint16, "
                                  "uint32, uint64, bool"):
        T.Tensor([4], "float8")
    with raises_exact(ValueError, "unknown dtype 'complex64'; expected one of float64, float32, "
                                  "float16, bfloat16, int8, int16, int32, int64, uint8, uint16, "
                                  "uint32, uint64, bool"):
        T.Tensor([4], np.complex64)
    with raises_exact(TypeError, "unknown dtype 3.5; expected a name such as 'float32', a numpy "
                                 "dtype or a torch dtype"):
        T.Tensor([4], 3.5)


def test_bad_shapes():
    # At the caller's line (test_tile_errors.py: in an annotation, naming
    # the parameter too).
    line = inspect.currentframe().f_lineno
    with raises_exact(TypeError, f"{__file__}:{line + 4}:9: T.Tensor: dimension 1 is the float "
                                 f"1.5; a dimension is an int or a T.symbolic expression (// "
                                 f"divides ints)"):
        T.Tensor([4, 1.5], "float32")
    with raises_exact(TypeError, f"{__file__}:{line + 7}:9: T.Tensor: dimension 1 must be an "
                                 f"int or a T.symbolic expression, got str"):
        T.Tensor([4, "8"], "float32")
    with raises_exact(TypeError, f"{__file__}:{line + 10}:9: T.Tensor: the shape must be a list "
                                 f"of ints and T.symbolic expressions, got float"):
        T.Tensor(2.0, "float32")
    assert T.Tensor(8, "float32").shape == (8,)
    assert repr(T.Tensor([T.symbolic("n"), 4], "int32")) == "T.Tensor([n, 4], 'int32')"


# --- T.prim_func -----------------------------------------------------------

def test_prim_func_collects_signature_grid_threads_and_bodies():
    b, s = T.symbolic("b"), T.symbolic("s")
    seen = {}

    @T.prim_func
    def main(Q: T.Tensor([b, s, 4], "bfloat16"), n: T.int32, alpha: T.float32,
             O: T.Tensor([b * s, 4], np.float32)):
        seen["Q"] = Q
        with T.Kernel(b * s, 2, threads=64) as (bx, by):
            seen["idx"] = (bx, by)
            T.source(cpu="/* cpu */", cuda="/* cuda */")

    assert isinstance(main, tilejit.PrimFunc)
    assert main.name == "main"
    assert [p["name"] for p in main.params] == ["Q", "n", "alpha", "O"]
    assert [p["kind"] for p in main.params] == ["tensor", "scalar", "scalar", "tensor"]
    assert [p["dtype"] for p in main.params] == ["bfloat16", "int32", "float32", "float32"]
    assert [repr(d) for d in main.params[3]["shape"]] == ["b * s", "4"]
    assert [repr(g) for g in main.grid] == ["b * s", "2"]
    assert main.threads == 64
    assert main.bodies == {"cpu": "/* cpu */", "cuda": "/* cuda */"}
    assert repr(seen["idx"]) == "(bx, by)"
    assert seen["Q"].shape == (b, s, 4) and seen["Q"].dtype == "bfloat16"
    assert repr(main) == ("<tilejit.PrimFunc main(Q: bfloat16[b, s, 4], n: int32, "
                          "alpha: float32, O: float32[b * s, 4]) grid=[b * s, 2] threads=64>")


def test_prim_func_defaults_and_one_block_index():
    @T.prim_func
    def k(X: T.Tensor([4], "float32")):
        T.source(cpu="")

    assert [repr(g) for g in k.grid] == ["1"] and k.threads == 1

    @T.prim_func
    def k2(X: T.Tensor([4], "float32")):
        with T.Kernel(3) as bx:
            assert repr(bx) == "bx"
            T.source(cpu="")

    assert k2.threads == 128  # the seed's default


def test_string_annotations_resolve_where_declared():
    n = T.symbolic("n")  # noqa: F841 (named by the annotation text)

    @T.prim_func
    def main(X: "T.Tensor([n, 2], 'float32')", k: "T.int64"):
        T.source(cpu="")

    assert [repr(d) for d in main.params[0]["shape"]] == ["n", "2"]
    assert main.params[1]["dtype"] == "int64"


def test_prim_func_declaration_errors():
    with raises_exact(TypeError, "main: parameter 'X' has no annotation; annotate it with "
                                 "T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32"):
        @T.prim_func
        def main(X):
            T.source(cpu="")

    with raises_exact(TypeError, "main: parameter 'X' is annotated with <class 'int'>; expected "
                                 "T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32"):
        @T.prim_func
        def main(X: int):  # noqa: F811
            T.source(cpu="")

    with raises_exact(ValueError, "main: the prim_func gives no body; call T.source(cpu=..., "
                                  "cuda=...) inside it"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            with T.Kernel(1):
                pass

    with raises_exact(ValueError, "main: T.Kernel entered twice; a prim_func has one launch"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            with T.Kernel(1):
                pass
            with T.Kernel(2):
                T.source(cpu="")

    with raises_exact(ValueError, "main: T.source gave a cpu body twice"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            T.source(cpu="a")
            T.source(cpu="b")

    with raises_exact(ValueError, "main: T.Kernel takes 1 to 3 grid extents, got 4"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            with T.Kernel(1, 1, 1, 1):
                T.source(cpu="")

    with raises_exact(TypeError, "main: parameter 'X' must be a plain positional parameter"):
        @T.prim_func
        def main(*X: T.Tensor([4], "float32")):  # noqa: F811
            T.source(cpu="")

    with raises_exact(TypeError, "main: the annotation of parameter 'X' is the string "
                                 "'T.Tensor([nowhere], \"float32\")', which cannot be evaluated "
                                 "where the prim_func is declared (NameError: name 'nowhere' is "
                                 "not defined)"):
        @T.prim_func
        def main(X: 'T.Tensor([nowhere], "float32")'):  # noqa: F811,F821
            T.source(cpu="")


def test_prim_func_validation_errors_from_cpp():
    with raises_exact(ValueError, "main: parameter #0 name 'grid_dim' is reserved (a name the "
                                  "generated wrapper declares)"):
        @T.prim_func
        def main(grid_dim: T.Tensor([4], "float32")):
            T.source(cpu="")

    with raises_exact(ValueError, "main: parameter #0 name 'delete' is reserved (a C++ "
                                  "keyword)"):
        @T.prim_func
        def main(delete: T.Tensor([4], "float32")):  # noqa: F811
            T.source(cpu="")

    with raises_exact(ValueError, "main: grid extent 0 is 0; extents must be positive"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            with T.Kernel(0):
                T.source(cpu="")

    with raises_exact(ValueError, "main: threads = 0; expected 1 or more"):
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):  # noqa: F811
            with T.Kernel(1, threads=0):
                T.source(cpu="")

    with raises_exact(ValueError, "main: parameter #0 'X' dimension 0 is negative (-4)"):
        @T.prim_func
        def main(X: T.Tensor([-4], "float32")):  # noqa: F811
            T.source(cpu="")

    with raises_exact(TypeError, "main: scalar parameter #0 'n' has dtype bfloat16; scalars are "
                                 "int32, int64 or float32"):
        @T.prim_func
        def main(n: T.ScalarType("bfloat16")):  # noqa: F811
            T.source(cpu="")


def test_language_calls_outside_a_prim_func():
    with raises_exact(RuntimeError, "T.source is only valid inside a function decorated with "
                                    "@T.prim_func"):
        T.source(cpu="")
    with raises_exact(RuntimeError, "T.Kernel is only valid inside a function decorated with "
                                    "@T.prim_func"):
        with T.Kernel(1):
            pass


def test_prim_func_with_name():
    @T.prim_func
    def main(X: T.Tensor([4], "float32")):
        T.source(cpu="")

    renamed = main.with_name("renamed")
    assert renamed.name == "renamed" and main.name == "main"
    with raises_exact(ValueError, "prim_func name 'not ok' is not an identifier"):
        main.with_name("not ok")


# --- the front end's layers ---------------------------------------------------

def test_the_front_end_modules_import_in_layers():
    # tilejit.language's modules form layers: no import cycle, and no import
    # inside a function to hide one (the active tracer lives in the leaf
    # module `active`; dtypes is data, told how to convert by `values`).
    import ast
    from pathlib import Path
    root = Path(T.__file__).parent
    mods = {p.stem: p for p in root.glob("*.py")}
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                deps.update(n for n in names if n in mods)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [n for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) and n.level == 1]
                assert not inner, f"{name}.{fn.name} imports {inner[0].module} inside a function"
        graph[name] = deps

    def reaches(start, goal, seen=()):
        return any(d == goal or (d not in seen and reaches(d, goal, seen + (d,)))
                   for d in graph[start])

    assert not [m for m in graph if reaches(m, m)], "an import cycle in tilejit.language"
    assert graph["active"] == set() and graph["dtypes"] == set()
    assert "eager" not in {d for m, ds in graph.items() if m != "__init__" for d in ds}

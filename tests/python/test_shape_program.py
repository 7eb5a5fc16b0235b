"""Kernel.shape_program: the call plan's bindings, checks and buffer shapes
as plain data (Note [Shape program in Python] in python/src/shape_export.h),
and that evaluating it reproduces what a call computes."""

import numpy as np

import tilejit
from tilejit import language as T


def affine_kernel():
    s, b = T.symbolic("s"), T.symbolic("b")

    @T.prim_func
    def shapes(X: T.Tensor([2 * s + 1, 4], "float32"), Y: T.Tensor([s, T.ceildiv(s, 3)], "float32"),
               Z: T.Tensor([s], "float32"), W: T.Tensor([T.max(b, s) * 2], "float32"),
               b: T.int32):
        T.source(cpu="for (int64_t i = 0; i < s; ++i) Y(i, 0) = Z(i) + b;")

    return tilejit.compile(shapes, out_idx=[1], workspace_idx=[3], target="cpu")


def test_shape_program_mirrors_the_call_plan():
    k = affine_kernel()
    assert k.shape_program == {
        "symbols": ["s", "b"],
        "inputs": [
            {"name": "X", "scalar": False, "dtype": "float32", "dims": [None, 4]},
            {"name": "Z", "scalar": False, "dtype": "float32", "dims": [None]},
            {"name": "b", "scalar": True, "dtype": "int32", "dims": []},
        ],
        # The scalar first, then plain dimensions (Z's, not X's affine one).
        "bindings": [
            {"symbol": "b", "input": 2, "dim": None, "coeff": 1, "offset": 0},
            {"symbol": "s", "input": 1, "dim": 0, "coeff": 1, "offset": 0},
        ],
        "checks": [{"input": 0, "dim": 0, "value": ("add", ("mul", 2, "s"), 1)}],
        "outputs": [{"name": "Y", "dtype": "float32", "shape": ["s", ("ceildiv", "s", 3)]}],
        "workspaces": [{"name": "W", "dtype": "float32", "shape": [("mul", 2, ("max", "b", "s"))]}],
    }
    assert k.shape_program is not k.shape_program  # a fresh dict per access


def _evaluate(tree, env):
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return env[tree]
    op, a, b = tree
    a, b = _evaluate(a, env), _evaluate(b, env)
    return {"add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b if b else None,
            "floormod": a % b if b else None, "ceildiv": -(-a // b) if b else None,
            "min": min(a, b), "max": max(a, b)}[op]


def test_evaluated_shapes_match_the_call():
    k = affine_kernel()
    program = k.shape_program
    for s, b in [(1, 5), (7, 2), (10, 10)]:
        x = np.zeros((2 * s + 1, 4), np.float32)
        z = np.arange(s, dtype=np.float32)
        env = {"b": b, "s": z.shape[0]}
        y = k(x, z, b)
        assert y.shape == tuple(_evaluate(e, env) for e in program["outputs"][0]["shape"])
        assert _evaluate(program["checks"][0]["value"], env) == x.shape[0]
        ws = [_evaluate(e, env) for e in program["workspaces"][0]["shape"]]
        assert k.workspace_layout(x, z, b)[0]["shape"] == tuple(ws)
        np.testing.assert_array_equal(y[:, 0], z + b)


def test_shared_subexpressions_are_one_object():
    """The program computes a shared subexpression once; its tree is one
    Python object wherever it appears."""
    n = T.symbolic("n")

    @T.prim_func
    def two(X: T.Tensor([n], "float32"), A: T.Tensor([T.ceildiv(n, 4)], "float32"),
            B: T.Tensor([T.ceildiv(n, 4), 2], "float32")):
        T.source(cpu="")

    program = tilejit.compile(two, out_idx=[1, 2], target="cpu").shape_program
    a, b = program["outputs"][0]["shape"][0], program["outputs"][1]["shape"][0]
    assert a == ("ceildiv", "n", 4) and a is b
    assert program["outputs"][1]["shape"][1] == 2

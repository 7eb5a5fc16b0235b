"""A caller-supplied arena: kernel.empty_workspace(*inputs) (the right size
and alignment, in the inputs' framework), workspace_bytes(shapes=[...]) for
a caller with no tensors yet, and the alignment error that points to
empty_workspace."""

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import pool_in_use, raises_exact


@pytest.fixture(scope="module")
def k():
    """The seed's shapes at toy sizes: Y[b * s] sums X's rows through two
    workspaces, one of them zeroed; `scale` is a scalar input."""
    b, s = T.symbolic("b"), T.symbolic("s")

    @T.prim_func
    def rows(X: T.Tensor([b, s, 16], "float32"), scale: T.float32,
             Y: T.Tensor([b * s], "float32"), W: T.Tensor([b * s, 16], "float32"),
             Acc: T.Tensor([b * s], "float64")):
        with T.Kernel(b * s, threads=32) as bx:
            T.source(cpu="""
for (int64_t j = 0; j < 16; ++j) { W(bx, j) = scale * X(bx / s, bx % s, j); Acc(bx) += W(bx, j); }
Y(bx) = float(Acc(bx));
""")

    return tilejit.compile(rows, out_idx=[2], workspace_idx=[3, 4], target="cpu",
                           workspace_init={"Acc": "zero"})


@pytest.fixture(autouse=True)
def clean_after():
    yield
    assert pool_in_use() == 0


def test_empty_workspace_is_a_numpy_arena_of_the_right_size_and_alignment(k):
    x = np.ones((2, 3, 16), np.float32)
    arena = k.empty_workspace(x, 0.5)
    assert type(arena) is np.ndarray and arena.dtype == np.uint8 and arena.ndim == 1
    # W: 6 x 16 float32 = 384 bytes, at 0; Acc: 6 float64 = 48 bytes, at 512.
    assert arena.nbytes == k.workspace_bytes(x, 0.5) == 768
    assert arena.ctypes.data % 256 == 0
    assert arena.flags.writeable and arena.flags.c_contiguous
    before = tilejit.pool_stats()["leases"]
    for _ in range(2):  # "zero" workspaces are zeroed in a supplied arena too
        np.testing.assert_array_equal(k(x, 0.5, workspace=arena), np.full(6, 8.0))
    assert tilejit.pool_stats()["leases"] == before
    # Checked as a call's inputs are.
    with raises_exact(TypeError, "rows: argument #0 'X': expected float32, got float64"):
        k.empty_workspace(x.astype(np.float64), 0.5)
    with raises_exact(TypeError, "rows: expected 2 inputs (X, scale), got 1: missing parameter "
                                 "#1 'scale' (a parameter in neither out_idx nor workspace_idx "
                                 "is an input)"):
        k.empty_workspace(x)


def test_a_misaligned_arena_points_to_empty_workspace(k):
    x = np.ones((2, 3, 16), np.float32)
    raw = np.empty(2048, np.uint8)
    offset = (-raw.ctypes.data) % 256 + 8
    with raises_exact(ValueError, "rows: workspace=: the data pointer is not 256-byte aligned "
                                  "(address % 256 = 8); kernel.empty_workspace() with the call's "
                                  "inputs makes an arena of the right size and alignment"):
        k(x, 0.5, workspace=raw[offset:offset + 768])


def test_workspace_bytes_and_layout_from_shapes(k):
    x = np.ones((2, 3, 16), np.float32)
    assert k.workspace_bytes(shapes=[(2, 3, 16), 0.5]) == k.workspace_bytes(x, 0.5)
    assert k.workspace_bytes(shapes=([5, 7, 16], np.float32(1))) == \
        k.workspace_bytes(np.ones((5, 7, 16), np.float32), 1.0) == 2304 + 512
    assert k.workspace_bytes(shapes=[(np.int64(2), 3, 16), 1]) == 768  # an int is a fine float32
    layout = k.workspace_layout(shapes=[(2, 3, 16), 0.5])
    assert layout == k.workspace_layout(x, 0.5)
    assert [(w["name"], w["offset"], w["shape"]) for w in layout] == [
        ("W", 0, (6, 16)), ("Acc", 512, (6,))]


def test_shape_errors(k):
    x = np.ones((2, 3, 16), np.float32)
    with raises_exact(TypeError, "rows: give the inputs or shapes=, not both"):
        k.workspace_bytes(x, shapes=[(2, 3, 16), 0.5])
    with raises_exact(TypeError, "rows: shapes= must be a list with one entry per input (a shape "
                                 "for a tensor input, a value for a scalar input); got dict"):
        k.workspace_bytes(shapes={"X": (2, 3, 16)})
    with raises_exact(TypeError, "rows: expected 2 inputs (X, scale), got 1: missing parameter "
                                 "#1 'scale' (a parameter in neither out_idx nor workspace_idx "
                                 "is an input)"):
        k.workspace_bytes(shapes=[(2, 3, 16)])
    with raises_exact(TypeError, "rows: shapes[0] 'X': expected a shape (a tuple of ints) for a "
                                 "tensor input, got int"):
        k.workspace_bytes(shapes=[2, 0.5])
    with raises_exact(TypeError, "rows: shapes[0] 'X': dimension 1 must be an int, got float"):
        k.workspace_bytes(shapes=[(2, 3.0, 16), 0.5])
    with raises_exact(TypeError, "rows: shapes[1] 'scale': expected a number for a scalar "
                                 "input, got tuple"):
        k.workspace_bytes(shapes=[(2, 3, 16), (1,)])
    with raises_exact(ValueError, "rows: argument #0 'X': shape [2, -3, 16] has a negative "
                                  "extent"):
        k.workspace_bytes(shapes=[(2, -3, 16), 0.5])
    with raises_exact(ValueError, "rows: argument #0 'X': dimension 2 must be 16, got 8 (shape "
                                  "[2, 3, 8])"):
        k.workspace_layout(shapes=[(2, 3, 8), 0.5])
    with raises_exact(ValueError, "rows: argument #1 'scale': value 1e+40 does not fit in "
                                  "float32"):
        k.workspace_bytes(shapes=[(2, 3, 16), 1e40])


def test_no_workspaces_no_tensors():
    n = T.symbolic("n")

    @T.prim_func
    def fill(n: T.int64, Y: T.Tensor([n], "int64")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = i;")

    k = tilejit.compile(fill, out_idx=[1], target="cpu")
    assert k.workspace_bytes(shapes=[5]) == 0
    arena = k.empty_workspace(5)  # no tensor input: numpy on the CPU
    assert type(arena) is np.ndarray and arena.nbytes == 0
    np.testing.assert_array_equal(k(5, workspace=arena), np.arange(5))

"""Inputs by keyword (Note [Inputs by keyword] in python/src/input_keywords.h):
positional first, then by parameter name, as a Python function binds its
arguments; the errors name the input; the option keywords (stream=, out=,
workspace=; shapes= for the workspace queries) keep their meaning."""

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import pool_in_use, raises_exact


@pytest.fixture(scope="module")
def k():
    """Out = alpha * X + Yin, with Out between the inputs and a workspace."""
    n = T.symbolic("n")

    @T.prim_func
    def k(X: T.Tensor([n], "float32"), Out: T.Tensor([n], "float32"),
          Yin: T.Tensor([n], "float32"), alpha: T.float32, W: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { W(i) = alpha * X(i); Out(i) = W(i) + Yin(i); }")

    return tilejit.compile(k, out_idx=[1], workspace_idx=[4], target="cpu")


@pytest.fixture(autouse=True)
def clean_after():
    yield
    assert pool_in_use() == 0


x = np.arange(4, dtype=np.float32)
y = np.full(4, 10, np.float32)
expected = 2 * x + y


def test_any_mix_of_positional_and_keyword_inputs(k):
    np.testing.assert_array_equal(k(X=x, Yin=y, alpha=2.0), expected)
    np.testing.assert_array_equal(k(alpha=2.0, Yin=y, X=x), expected)
    np.testing.assert_array_equal(k(x, alpha=2.0, Yin=y), expected)
    np.testing.assert_array_equal(k(x, y, alpha=2.0), expected)
    np.testing.assert_array_equal(k(x, y, 2.0), expected)
    # With the options.
    out = np.empty(4, np.float32)
    assert k(x, alpha=2.0, Yin=y, out=out, stream=None) is out
    np.testing.assert_array_equal(out, expected)
    arena = k.empty_workspace(x, y, alpha=2.0)
    np.testing.assert_array_equal(k(Yin=y, X=x, alpha=2.0, workspace=arena), expected)


def test_keyword_errors_name_the_input(k):
    with raises_exact(TypeError, "k: unexpected keyword argument 'Z' (inputs: X, Yin, alpha; "
                                 "options: stream=, out=, workspace=)"):
        k(x, y, Z=1.0)
    with raises_exact(TypeError, "k: unexpected keyword argument 'Z' (inputs: X, Yin, alpha; "
                                 "options: stream=, out=, workspace=)"):
        k(x, y, 2.0, Z=1.0)  # every input given: still the unknown name
    with raises_exact(TypeError, "k: unexpected keyword argument 'Out' (inputs: X, Yin, alpha; "
                                 "options: stream=, out=, workspace=)"):
        k(x, Yin=y, alpha=2.0, Out=y)  # an output is no input
    with raises_exact(TypeError, "k: got multiple values for input #0 'X'"):
        k(x, X=x, Yin=y, alpha=2.0)
    with raises_exact(TypeError, "k: got multiple values for input #2 'alpha'"):
        k(x, y, 2.0, alpha=2.0)
    with raises_exact(TypeError, "k: expected 3 inputs (X, Yin, alpha), got 2: missing "
                                 "parameter #2 'Yin' (a parameter in neither out_idx nor "
                                 "workspace_idx is an input)"):
        k(x, alpha=2.0)
    with raises_exact(TypeError, "k: expected 3 inputs (X, Yin, alpha), got 1: missing "
                                 "parameters #0 'X', #2 'Yin' (a parameter in neither out_idx "
                                 "nor workspace_idx is an input)"):
        k(alpha=2.0, out=None)
    with raises_exact(TypeError, "k: expected 3 inputs (X, Yin, alpha), got 5"):
        k(x, y, 2.0, x, alpha=2.0)
    # The conversion errors name the input by its place, however it came.
    with raises_exact(TypeError, "k: argument #1 'Yin': expected float32, got int64"):
        k(alpha=2.0, X=x, Yin=np.zeros(4, np.int64))
    assert k(x, Yin=y, alpha=2.0) is not None


def test_the_queries_take_keywords_too(k):
    assert k.workspace_bytes(x, Yin=y, alpha=2.0) == 256
    assert k.workspace_layout(alpha=2.0, X=x, Yin=y)[0]["shape"] == (4,)
    assert k.empty_workspace(X=x, Yin=y, alpha=2.0).nbytes == 256
    with raises_exact(TypeError, "k: unexpected keyword argument 'out' (inputs: X, Yin, alpha; "
                                 "options: shapes=)"):
        k.workspace_bytes(x, y, 2.0, out=None)
    with raises_exact(TypeError, "k: unexpected keyword argument 'shapes' (inputs: X, Yin, "
                                 "alpha)"):
        k.empty_workspace(shapes=[(4,), (4,), 2.0])
    with raises_exact(TypeError, "k: expected 3 inputs (X, Yin, alpha), got 1: missing "
                                 "parameters #2 'Yin', #3 'alpha' (a parameter in neither "
                                 "out_idx nor workspace_idx is an input)"):
        k.workspace_layout(X=x)


def test_an_input_named_like_an_option_goes_positionally():
    # Decided: a keyword with an option's name is always the option, so a
    # Python caller can still pass out= to a kernel whose input is `out`.
    n = T.symbolic("n")

    @T.prim_func
    def named(stream: T.Tensor([n], "float32"), out: T.Tensor([n], "float32"),
              Y: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = stream(i) + out(i);")

    k = tilejit.compile(named, out_idx=[2], target="cpu")
    assert k.input_names == ["stream", "out"]
    np.testing.assert_array_equal(k(x, y), x + y)
    y_out = np.empty(4, np.float32)
    assert k(x, y, out=y_out) is y_out  # out= is the output buffer
    np.testing.assert_array_equal(y_out, x + y)
    with raises_exact(TypeError, "named: missing input #1 'out': the keyword out= is the option, "
                                 "not this input; pass the input positionally"):
        k(x, out=y)
    with raises_exact(TypeError, "named: missing input #0 'stream': the keyword stream= is the "
                                 "option, not this input; pass the input positionally"):
        k(out=y)
    # The queries have their own options: there, out= is the input.
    assert k.workspace_bytes(x, out=y) == 0

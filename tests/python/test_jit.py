"""tilejit.jit and tilejit.compile: the factory cache, the options, and
every error raised while making a kernel."""

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import raises_exact

_builds = []


@tilejit.jit(out_idx=-1, target="cpu")
def scaled_copy(factor, width=4):
    _builds.append((factor, width))
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n, width], "float32"), Y: T.Tensor([n, width], "float32")):
        with T.Kernel(n, threads=1) as bx:
            T.source(cpu=f"for (int64_t j = 0; j < {width}; ++j) Y(bx, j) = X(bx, j) * {factor}f;")

    return main


def test_factory_caches_kernels_by_arguments():
    _builds.clear()
    k1 = scaled_copy(2.0)
    assert scaled_copy(2.0) is k1
    assert scaled_copy(2.0, 4) is k1          # the default spelled out
    assert scaled_copy(factor=2.0) is k1      # by keyword
    assert scaled_copy(3.0) is not k1
    assert _builds == [(2.0, 4), (3.0, 4)]
    assert scaled_copy.cache_size() == 2
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(k1(x), x * 2)
    assert isinstance(k1, tilejit.Kernel) and isinstance(k1, tilejit.JITKernel)
    assert k1.name == "scaled_copy"  # the factory's name, not "main"
    assert scaled_copy.__name__ == "scaled_copy"
    assert repr(scaled_copy) == "<tilejit.jit scaled_copy>"


def test_cache_keys_are_typed():
    @tilejit.jit(out_idx=[1], target="cpu")
    def typed(value):
        @T.prim_func
        def main(X: T.Tensor([1], "float32"), Y: T.Tensor([1], "float32")):
            T.source(cpu=f"Y(0) = X(0) + {float(value)}f;  // {value!r}")
        return main

    assert typed(1) is typed(1)
    assert typed(1) is not typed(True)  # equal as keys, different as source text
    assert typed(1) is not typed(1.0)
    assert typed(True)(np.zeros(1, np.float32)).tolist() == [1.0]
    assert typed.cache_size() == 3


def test_unhashable_arguments():
    with raises_exact(TypeError, "scaled_copy: argument #0 of type list is not hashable; the "
                                 "arguments of a tilejit.jit function key its kernel cache (pass "
                                 "a tuple instead of a list)"):
        scaled_copy([2.0])
    with raises_exact(TypeError, "scaled_copy: argument 'width' of type dict is not hashable; the "
                                 "arguments of a tilejit.jit function key its kernel cache (pass "
                                 "a tuple instead of a list)"):
        scaled_copy(2.0, width={})


def test_bad_factory_arguments_and_results():
    with raises_exact(TypeError, "scaled_copy: got an unexpected keyword argument 'nope'"):
        scaled_copy(2.0, nope=1)

    @tilejit.jit
    def returns_nothing():
        return None

    with raises_exact(TypeError, "returns_nothing: a tilejit.jit function must return a "
                                 "T.prim_func, got NoneType"):
        returns_nothing()
    with raises_exact(TypeError, "tilejit.jit decorates a function returning a T.prim_func, "
                                 "got int"):
        tilejit.jit(3)


def test_jit_without_parentheses_and_on_a_prim_func():
    @tilejit.jit
    def plain():
        @T.prim_func
        def main(X: T.Tensor([2], "float32")):
            T.source(cpu="X(0) = 7.0f;")
        return main

    k = plain()
    assert k.output_names == [] and k.input_names == ["X"]
    x = np.zeros(2, np.float32)
    assert k(x) is None
    assert x[0] == 7.0

    @T.prim_func
    def direct(X: T.Tensor([2], "float32"), Y: T.Tensor([2], "float32")):
        T.source(cpu="Y(0) = X(0); Y(1) = X(1);")

    k2 = tilejit.jit(direct, out_idx=[1], target="cpu")
    assert isinstance(k2, tilejit.Kernel) and k2.name == "direct"
    np.testing.assert_array_equal(k2(np.array([1, 2], np.float32)), [1, 2])


def test_callers_index_lists_are_never_changed():
    out_idx, workspace_idx = [-2], [-1]

    @tilejit.jit(out_idx=out_idx, workspace_idx=workspace_idx, target="cpu")
    def f():
        n = T.symbolic("n")

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
                 W: T.Tensor([n], "float32")):
            T.source(cpu="for (int64_t i = 0; i < n; ++i) { W(i) = X(i); Y(i) = W(i); }")
        return main

    out_idx.append(0)  # after decoration: the factory kept its own copy
    k = f()
    assert out_idx == [-2, 0] and workspace_idx == [-1]
    assert k.output_names == ["Y"] and k.workspace_names == ["W"]
    lst = [1]
    tilejit.compile(k.prim_func, out_idx=lst, target="cpu")
    assert lst == [1]


def test_compile_and_factory_options_are_checked():
    @T.prim_func
    def main(X: T.Tensor([4], "float32"), Y: T.Tensor([4], "float32"), n: T.int32):
        T.source(cpu="")

    with raises_exact(TypeError, "tilejit.compile expects a T.prim_func, got str"):
        tilejit.compile("main")
    with raises_exact(TypeError, "main: out_idx must be None, an int or a list of ints; got str"):
        tilejit.compile(main, out_idx="1")
    with raises_exact(TypeError, "main: out_idx[0] must be an int; got float"):
        tilejit.compile(main, out_idx=[1.0])
    with raises_exact(TypeError, "main: workspace_idx must be None, an int or a list of ints; "
                                 "got bool"):
        tilejit.compile(main, workspace_idx=True)
    with raises_exact(TypeError, "main: compile_flags must be None or a list of strings; got str"):
        tilejit.compile(main, compile_flags="-O0")
    with raises_exact(TypeError, "main: extra_compile_flags must hold strings; got int"):
        tilejit.compile(main, extra_compile_flags=[1])
    with raises_exact(TypeError, "main: workspace_init must be None or a dict {name: 'empty' | "
                                 "'zero' | 'zero_once'}; got list"):
        tilejit.compile(main, workspace_init=["Y"])
    with raises_exact(ValueError, "main: workspace_init['Y'] = 'ones' is not a workspace init; "
                                  "expected 'empty', 'zero' or 'zero_once'"):
        tilejit.compile(main, workspace_idx=[1], workspace_init={"Y": "ones"})
    with raises_exact(ValueError, "main: workspace_init names 'X', which is not a workspace"):
        tilejit.compile(main, workspace_idx=[1], workspace_init={"X": "zero"})
    with raises_exact(ValueError, "main: workspace_init names 'Z', which is not a workspace (no "
                                  "parameter has that name)"):
        tilejit.compile(main, workspace_idx=[1], workspace_init={"Z": "zero"})
    with raises_exact(TypeError, "main: target must be a str, got NoneType"):
        tilejit.compile(main, target=None)
    with pytest.raises(ValueError, match="^unknown target 'tpu'|target 'tpu'"):
        tilejit.compile(main, target="tpu")


def test_index_legalisation_errors():
    @T.prim_func
    def op(A: T.Tensor([4], "float32"), n: T.int32, Output: T.Tensor([4], "float32"),
           W: T.Tensor([4], "float32")):
        T.source(cpu="")

    with raises_exact(ValueError, "op: out_idx[0] = 4 is out of range for a signature of 4 "
                                  "parameters (valid: -4 to 3)"):
        tilejit.compile(op, out_idx=4, target="cpu")
    with raises_exact(ValueError, "op: workspace_idx[1] = -5 is out of range for a signature of 4 "
                                  "parameters (valid: -4 to 3)"):
        tilejit.compile(op, workspace_idx=[3, -5], target="cpu")
    with raises_exact(ValueError, "op: out_idx[1] = -2 names parameter #2 'Output' again "
                                  "(already out_idx[0])"):
        tilejit.compile(op, out_idx=[2, -2], target="cpu")
    with raises_exact(ValueError, "op: parameter #3 'W' is named by both out_idx and "
                                  "workspace_idx"):
        tilejit.compile(op, out_idx=[2, 3], workspace_idx=[-1], target="cpu")
    with raises_exact(ValueError, "op: out_idx[0] = 1 names scalar parameter #1 'n'; only tensors "
                                  "can be outputs"):
        tilejit.compile(op, out_idx=[1], target="cpu")
    with raises_exact(ValueError, "op: workspace_idx[0] = 1 names scalar parameter #1 'n'; only "
                                  "tensors can be workspaces"):
        tilejit.compile(op, workspace_idx=1, target="cpu")


def test_unbound_symbol_is_a_jit_time_error():
    @tilejit.jit(out_idx=[1], target="cpu")
    def unbound():
        n, v = T.symbolic("n"), T.symbolic("v")

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([v], "float32")):
            T.source(cpu="")
        return main

    with raises_exact(ValueError, "unbound: symbol 'v' in the shape of output 'Y' (parameter #1, "
                                  "dimension 0: v) is not bound by any input; give an input a "
                                  "dimension 'v' (or an affine form of it such as 2 * v) or add a "
                                  "scalar parameter named 'v'"):
        unbound()


def test_compile_error_carries_the_log():
    @tilejit.jit(target="cpu")
    def broken():
        @T.prim_func
        def main(X: T.Tensor([4], "float32")):
            T.source(cpu="X(0) = 1.0f;\nthis_is_not_declared(3);\n")
        return main

    with pytest.raises(tilejit.CompileError) as info:
        broken()
    message = str(info.value)
    assert type(info.value) is tilejit.CompileError
    assert not isinstance(info.value, RuntimeError)
    assert message.startswith("broken: the CPU compiler failed (exit code 1)\ncommand: ")
    assert "this_is_not_declared" in message   # the compiler's log
    assert "broken_body" in message            # the body's numbered lines


def test_compile_flags_reach_the_compiler():
    @T.prim_func
    def flagged(X: T.Tensor([4], "float32")):
        T.source(cpu="#ifndef TILEJIT_TEST_FLAG\n#error flag missing\n#endif\n")

    with pytest.raises(tilejit.CompileError, match="flag missing"):
        tilejit.compile(flagged, target="cpu")
    k = tilejit.compile(flagged, target="cpu", extra_compile_flags=["-DTILEJIT_TEST_FLAG=1"])
    assert k(np.zeros(4, np.float32)) is None


def test_kernel_objects_are_made_by_jit_only():
    with raises_exact(TypeError, "tilejit.Kernel objects are made by tilejit.jit and "
                                 "tilejit.compile"):
        tilejit.Kernel()


# --- retarget: the same program for another target ----------------------------

_tile_builds = []


@tilejit.jit(out_idx=[1], workspace_init={}, target="cpu")
def tile_double(block=16):
    _tile_builds.append(block)
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * 2
    return main


def test_retarget_makes_a_factory_with_its_own_cache():
    _tile_builds.clear()
    original = tile_double(16)
    again = tile_double.retarget("cpu")
    assert isinstance(again, tilejit.JitFunction) and again is not tile_double
    assert again.__name__ == "tile_double" and repr(again) == "<tilejit.jit tile_double>"
    assert again.target == "cpu" and tile_double.target == "cpu"
    assert again.cache_size() == 0 and tile_double.cache_size() == 1
    kernel = again(16)
    assert kernel is not original and again(block=16) is kernel
    assert _tile_builds == [16, 16]  # traced again: the caches are separate
    assert again.cache_size() == 1 and tile_double.cache_size() == 1
    x = np.arange(37, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)
    np.testing.assert_array_equal(original(x), x * 2)
    again.cache_clear()
    assert again.cache_size() == 0 and tile_double(16) is original
    # The options are copies: everything but the target is the original's.
    assert {**again._options, "target": "cpu"} == tile_double._options
    assert again._options["out_idx"] is not tile_double._options["out_idx"]
    assert again._options["workspace_init"] is not tile_double._options["workspace_init"]


def test_retarget_takes_tilelangs_spellings():
    llvm = tile_double.retarget("llvm")
    assert llvm.target == "llvm"
    x = np.ones(5, np.float32)
    np.testing.assert_array_equal(llvm(8)(x), x * 2)
    assert tile_double.retarget({"kind": "cpu"})(8)(x).tolist() == [2.0] * 5


def test_retarget_to_an_unknown_target_fails_as_compile_does():
    targets = ", ".join(tilejit._C.registered_targets())
    message = f"unknown target 'tpu'; registered targets: {targets}"
    bad = tile_double.retarget("tpu")  # checked when it compiles, as @jit(target=...) is
    with raises_exact(ValueError, message):
        bad(16)
    with raises_exact(ValueError, message):
        tilejit.compile(tile_double._func(16), out_idx=[1], target="tpu")
    with raises_exact(ValueError, message):
        tilejit.jit(out_idx=[1], target="tpu")(tile_double._func)(16)
    assert bad.cache_size() == 0
    with raises_exact(TypeError, "tile_double: target must be a str, got int"):
        tile_double.retarget(3)

"""TVM's thread all-reduce (language/allreduce.py, Note [Thread all-reduce]):
`with T.attr(T.comm_reducer(...), "reduce_scope", ...)` around
`T.evaluate(T.tvm_thread_allreduce(...))`, on the CPU against numpy, both
lowerings (warp shuffles where a group of threads lies in a warp, a shared
scratch otherwise), its CUDA source compiled by NVRTC where tilejit's cuda
target is available, and every misuse an error at the author's line.
TileLang's own GEMV that uses it is in test_gemv_example.py."""

import re

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import raises_exact, tilejit_cuda_unavailable
from test_tile_kernels import needs_tile_cpu

F = __file__
_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")


def line_of(text):
    with open(F) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def group_reduce(threads, dims, combiner=lambda x, y: x + y, identity=0.0, cond=True,
                 loops=1):
    """X[block, tz, ty, tx] (threads (tx, ty, tz)) folded over the thread
    dimensions `dims` by every thread into Y, `loops` times (Y[...] the last
    fold, the all-reduce in a loop reusing its scratch)."""
    tx_n, ty_n, tz_n = (list(threads) + [1, 1])[:3]
    shape = (2, tz_n, ty_n, tx_n)

    @T.prim_func
    def main(X: T.Tensor(shape, "float32"), Y: T.Tensor(shape, "float32")):
        with T.Kernel(2, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1) if len(threads) > 1 else 0
            tz = T.get_thread_binding(2) if len(threads) > 2 else 0
            idx = [tx, ty, tz]
            v = T.alloc_local((1,), "float32")
            r = T.alloc_local((1,), "float32")
            for it in T.serial(loops):
                v[0] = X[bx, tz, ty, tx] + T.cast(it, "float32")
                with T.attr(T.comm_reducer(combiner, [T.cast(identity, "float32")]),
                            "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(
                        T.uint32(1), v[0], cond if cond is True else (tx % 2 == 0), r[0],
                        *[idx[d] for d in dims], dtype="handle"))
            Y[bx, tz, ty, tx] = r[0]
    return main, shape


def _expected(x, dims, fold, loops, cond):
    x = x + (loops - 1)
    if cond is not True:
        x = np.where(np.arange(x.shape[-1]) % 2 == 0, x, 0.0)
    axes = tuple(3 - d for d in dims)
    return np.broadcast_to(fold(x, axis=axes, keepdims=True), x.shape)


CASES = {
    # (threads, dims): shared scratch (a group spans warps or is not a power of two)
    "ty of (2, 32)": ((2, 32), [1]),
    "tx of (12, 3)": ((12, 3), [0]),
    "tx and tz of (4, 2, 8)": ((4, 2, 8), [0, 2]),
    # warp shuffles
    "tx of (32, 2)": ((32, 2), [0]),
    "ty of (4, 8)": ((4, 8), [1]),
    "tx of 16": ((16,), [0]),
}


@needs_tile_cpu
@pytest.mark.parametrize("case", CASES)
def test_every_thread_gets_its_groups_sum(case):
    threads, dims = CASES[case]
    prog, shape = group_reduce(threads, dims, loops=2)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = tilejit.compile(prog, out_idx=[1], target="cpu")(x)
    np.testing.assert_allclose(y, _expected(x, dims, np.sum, 2, True), rtol=1e-5, atol=1e-5)


@needs_tile_cpu
@pytest.mark.parametrize("threads,dims", [((8, 8), [1]), ((4, 8), [1])])
def test_a_max_reducer_and_a_condition(threads, dims):
    prog, shape = group_reduce(threads, dims, combiner=lambda x, y: T.max(x, y),
                               identity=-1e30, cond=False)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = tilejit.compile(prog, out_idx=[1], target="cpu")(x)
    x_masked = np.where(np.arange(x.shape[-1]) % 2 == 0, x, -1e30)
    np.testing.assert_array_equal(y, np.broadcast_to(
        x_masked.max(axis=tuple(3 - d for d in dims), keepdims=True), x.shape))


def test_the_lowerings_in_the_ir():
    shuffled = group_reduce((4, 8), [1])[0].script()
    assert "shfl_xor" in shuffled and "red_buf" not in shuffled, shuffled
    shared = group_reduce((2, 32), [1])[0].script()
    assert "red_buf" in shared and "shfl_xor" not in shared, shared
    assert len(re.findall(r"sync_threads", shared)) == 2, shared


@needs_cuda_target
@pytest.mark.parametrize("case", ["ty of (2, 32)", "ty of (4, 8)"])
def test_the_cuda_source_compiles(case):
    source = tilejit.compile(group_reduce(*CASES[case])[0], target="cuda").get_kernel_source()
    assert ("__shfl_xor_sync" in source or "shfl_xor" in source) == (case == "ty of (4, 8)")


# --- misuse ---------------------------------------------------------------------

def _traced(body):
    @T.prim_func
    def main(X: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            body(X)
    return main


RED = "T.comm_reducer(lambda x, y: x + y, [T.cast(0, 'float32')])"


def test_an_attr_key_other_than_reduce_scope():
    def body(X):
        with T.attr(T.comm_reducer(lambda x, y: x + y, [0.0]), "pragma_unroll",  # ATTR-KEY
                    T.reinterpret(T.uint64(0), dtype="handle")):
            pass
    line = line_of("# ATTR-KEY")
    with raises_exact(ValueError, f"{F}:{line}:14: T.attr: only the \"reduce_scope\" attribute "
                                  f"(of a T.tvm_thread_allreduce) is supported, got "
                                  f"'pragma_unroll'"):
        _traced(body)


def test_a_reducer_that_is_not_a_two_argument_function():
    def body(X):
        T.comm_reducer(lambda x: x, [0.0])  # ONE-ARG
    line = line_of("# ONE-ARG")
    with pytest.raises(TypeError) as info:
        _traced(body)
    assert str(info.value).startswith(
        f"{F}:{line}:9: T.comm_reducer: the combiner must be a function of two values "
        f"(lambda x, y: x + y), got function <function "), str(info.value)


def test_a_reducer_of_two_values():
    def body(X):
        T.comm_reducer(lambda x, y: x + y, [0.0, 1.0])  # TWO-IDS
    line = line_of("# TWO-IDS")
    with raises_exact(ValueError, f"{F}:{line}:9: T.comm_reducer: the identity must be a list "
                                  f"of one value (a reducer of one value), got list [0.0, 1.0]"):
        _traced(body)


def test_an_attr_of_something_else():
    def body(X):
        with T.attr(3, "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):  # NODE
            pass
    line = line_of("# NODE")
    with raises_exact(TypeError, f"{F}:{line}:14: T.attr: a \"reduce_scope\" attribute is of a "
                                 f"T.comm_reducer, got int 3"):
        _traced(body)


def test_reinterpret_of_anything_but_the_null_handle():
    def body(X):
        T.reinterpret(X[0], dtype="int32")  # REINTERPRET
    line = line_of("# REINTERPRET")
    with raises_exact(ValueError, f"{F}:{line}:9: T.reinterpret: only T.reinterpret(T.uint64(0), "
                                  f"dtype=\"handle\") (the null handle of a \"reduce_scope\" "
                                  f"T.attr) is supported, got the expression 'X[0]' as "
                                  f"'int32'"):
        _traced(body)


def test_an_allreduce_outside_its_attr():
    def body(X):
        r = T.alloc_local((1,), "float32")
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), X[0], True, r[0],  # OUTSIDE
                                          T.get_thread_binding(0), dtype="handle"))
    line = line_of("# OUTSIDE")
    with raises_exact(ValueError, f"{F}:{line}:20: T.tvm_thread_allreduce: outside a `with "
                                  f"T.attr(T.comm_reducer(...), \"reduce_scope\", ...)` block"):
        _traced(body)


@pytest.mark.parametrize("what,message", [
    ("size", "size must be 1 (one value reduced), got UnsignedConstant T.uint32(2)"),
    ("out", "out must be an element of a T.alloc_local buffer (C_reduced[0]), got the "
            "expression 'X[0]'"),
    ("thread", "argument #5 must be a thread index from T.get_thread_binding, got the "
               "expression 'tx + 1'"),
    ("twice", "the thread index of dimension 0 is listed twice"),
])
def test_allreduce_arguments(what, message):
    def body(X):
        r = T.alloc_local((1,), "float32")
        tx = T.get_thread_binding(0)
        size = T.uint32(2) if what == "size" else T.uint32(1)
        out = X[0] if what == "out" else r[0]
        threads = [tx + 1] if what == "thread" else [tx, tx] if what == "twice" else [tx]
        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]),
                    "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
            T.tvm_thread_allreduce(size, X[0], True, out, *threads, dtype="handle")  # ARGS
    line = line_of("# ARGS")
    with raises_exact(TypeError if what in ("out", "thread") else ValueError,
                      f"{F}:{line}:13: T.tvm_thread_allreduce: {message}"):
        _traced(body)


def test_evaluate_of_anything_else():
    def body(X):
        T.evaluate(X[0])  # EVALUATE
    line = line_of("# EVALUATE")
    with raises_exact(TypeError, f"{F}:{line}:9: T.evaluate: only "
                                 f"T.evaluate(T.tvm_thread_allreduce(...)) is supported, got "
                                 f"the expression 'X[0]'"):
        _traced(body)


def test_unsigned_constant_out_of_range():
    # T.uint32(c) is the all-reduce's constant and, as an operand, a uint32
    # constant (test_tile_unsigned.py); either way c must fit.
    def negative(X):
        T.uint32(-1)  # NEGATIVE
    line = line_of("# NEGATIVE")
    with raises_exact(ValueError, f"{F}:{line}:9: T.uint32: expected an int from 0 to 2**32 - 1, "
                                  f"got -1"):
        _traced(negative)

    def too_big(X):
        T.uint64(2**64)  # TOO-BIG
    line = line_of("# TOO-BIG")
    with raises_exact(ValueError, f"{F}:{line}:9: T.uint64: expected an int from 0 to 2**64 - 1, "
                                  f"got {2**64}"):
        _traced(too_big)

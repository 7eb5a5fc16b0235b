"""Errors of the tile language's Python front end: each by kind, exact
message and span (the author's file:line:col), with tilejit's own frames
gone from the traceback."""

import inspect
import os
import traceback

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import raises_exact
from tile_fake import recording

F = __file__


def here():
    return inspect.currentframe().f_back.f_lineno


def at(line, col):
    return f"{F}:{line}:{col}"


# --- constructs outside the supported set ----------------------------------

def test_try_is_not_supported():
    line = here()
    with raises_exact(ValueError, f"{at(line + 6, 17)}: main: 'try' is not supported in a "
                                  f"T.prim_func"):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                try:
                    A[0] = 1
                except ValueError:
                    pass


@pytest.mark.parametrize("construct, body", [
    ("for ... else", "    for i in range(2):\n        pass\n    else:\n        pass\n"),
    ("while ... else", "    while False:\n        pass\n    else:\n        pass\n"),
    ("global", "    global g\n"),
    ("yield", "    yield 1\n"),
    ("match", "    match 1:\n        case 1:\n            pass\n"),
])
def test_other_unsupported_constructs(tmp_path, construct, body):
    path = tmp_path / "kernel_file.py"
    path.write_text("import tilejit.language as T\n\n"
                    "def main(A: T.Tensor((4,), 'float32')):\n" + body)
    scope = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    with raises_exact(ValueError, f"{path}:4:5: main: '{construct}' is not supported in a "
                                  f"T.prim_func"):
        T.prim_func(scope["main"])


def test_a_symbolic_value_used_as_a_python_bool():
    line = here()
    with raises_exact(TypeError, f"{at(line + 10, 39)}: the symbolic value '(i < 2)' is used as "
                                 f"a Python bool; its value is known only when the kernel runs "
                                 f"(write the condition directly in an if / while / and / or / "
                                 f"not, or use T.if_then_else)"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1):
                    for i in T.serial(4):
                        A[0] = [1, 2][bool(i < 2)]


def test_a_symbolic_value_used_as_a_python_int():
    line = here()
    with raises_exact(TypeError, f"{at(line + 8, 32)}: the symbolic value 'i' is used as a "
                                 f"Python int; its value is known only when the kernel runs"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1):
                    for i in T.serial(4):
                        A[0] = [1, 2][i]


def test_break_under_a_symbolic_if_in_a_python_loop():
    line = here()
    with raises_exact(ValueError, f"{at(line + 10, 29)}: 'break' under a symbolic if cannot "
                                  f"leave a Python loop (the loop is unrolled while tracing; "
                                  f"loop over T.serial to branch at run time)"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1) as bx:
                    for k in [0, 1]:
                        if bx > k:
                            break


def test_return_inside_traced_control_flow():
    line = here()
    with raises_exact(ValueError, f"{at(line + 8, 25)}: 'return' inside a traced loop is not "
                                  f"supported; a kernel ends at the end of its body"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1):
                    for k in T.serial(4):
                        return
    line = here()
    with raises_exact(ValueError, f"{at(line + 8, 25)}: 'return' inside a symbolic if is not "
                                  f"supported; a kernel ends at the end of its body"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):  # noqa: F811
                with T.Kernel(1) as bx:
                    if bx > 0:
                        return


def test_for_over_a_symbolic_value_and_bad_unpacking():
    line = here()
    with raises_exact(TypeError, f"{at(line + 7, 21)}: a for loop over the symbolic value "
                                 f"'bx'; loop over T.serial(n), T.Parallel(...) or range(n)"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1) as bx:
                    for k in bx:
                        pass
    line = here()
    with raises_exact(ValueError, f"{at(line + 7, 21)}: T.Parallel: 2 loop variables, unpacked "
                                  f"into 3 names"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):  # noqa: F811
                with T.Kernel(1):
                    for i, j, k in T.Parallel(2, 2):
                        pass


def test_while_condition_turning_symbolic():
    line = here()
    with raises_exact(TypeError, f"{at(line + 9, 21)}: while: the condition was a Python value "
                                 f"and became symbolic; a loop is either traced or run in "
                                 f"Python"):
        with recording():
            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                with T.Kernel(1) as bx:
                    c = 0
                    while c < 1:
                        c = bx


# --- T.* argument errors ---------------------------------------------------

def kernel_error(kind, message, body_line_offset, col, make):
    """Runs make() under the fake builder; expects an error at the line
    `body_line_offset` after make's def line."""
    line = inspect.getsourcelines(make)[1] + body_line_offset
    with raises_exact(kind, f"{at(line, col)}: {message}"):
        with recording():
            make()


def test_copy_operands():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1) as bx:
                T.copy(A[0, 0] + 1, A)
    kernel_error(TypeError, "T.copy: the source must be a buffer, a slice A[i:i + n, :] or a "
                            "start corner A[i, j], got the expression '(A[0, 0] + 1.0)'",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.copy(A, 3)
    kernel_error(TypeError, "T.copy: the destination must be a buffer, a slice A[i:i + n, :] "
                            "or a start corner A[i, j], got int 3", 4, 17, make)


def test_indexing_errors():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                A[0] = 1
    kernel_error(IndexError, "A: indexed with 1 index; the buffer has 2 dimensions", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.copy(A[0:4:2], A)
    kernel_error(ValueError, "A: a slice with a step (2) is not supported; regions are "
                             "contiguous", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                A[0:2] = 1
    kernel_error(ValueError, "A: assigning to a slice is not supported; use T.fill, T.copy or "
                             "a T.Parallel loop", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                A[0] = A
    kernel_error(TypeError, "the buffer A is used as a scalar stored value; index it (e.g. "
                            "A[i])", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                A[0] = "x"
    kernel_error(TypeError, "str 'x' cannot be a tile-language stored value; expected a number "
                            "or an expression", 4, 17, make)


def test_gemm_and_reduce_arguments():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1) as bx:
                T.gemm(A, A, A, transpose_A=bx > 0)
    kernel_error(TypeError, "T.gemm: transpose_A must be a Python bool, got the expression "
                            "'(bx > 0)'", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.gemm(A, A, A, policy=7)
    kernel_error(ValueError, "T.gemm: policy must be a T.GemmWarpPolicy, got 7", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.reduce_max(A, B, dim=2)
    kernel_error(ValueError, "T.reduce_max: dim 2 is out of range for the 2-d source A",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.reduce(A, B, "prod", 1, True)
    kernel_error(ValueError, "T.reduce: unknown reduce_type 'prod'; expected one of sum, max, "
                             "min, abssum, absmax", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.reduce_sum(A, B, dim="1")
    kernel_error(TypeError, "T.reduce_sum: dim must be an int, got str '1'", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.atomic_add(A[0, 0], 1, return_prev=True)
    kernel_error(ValueError, "T.atomic_add: return_prev=True is not supported", 4, 17, make)


def test_allocation_arguments():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_shared((4, 4), "float8")
    kernel_error(ValueError, "T.alloc_shared: unknown dtype 'float8'; expected one of float64, "
                             "float32, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, "
                             "uint32, uint64, bool",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_fragment((4, 4.0), "float32")
    kernel_error(TypeError, "T.alloc_fragment: dimension 1 of the shape must be an int, got "
                            "float", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_fragment((4,), "float32", scope="registers")
    kernel_error(ValueError, "T.alloc_fragment: unknown scope 'registers'; expected 'shared', "
                             "'shared.dyn', 'local.fragment', 'fragment', 'local', 'local.var', "
                             "'global'", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            T.alloc_global((4,), "float32", init="ones")
    kernel_error(ValueError, "T.alloc_global: init must be 'empty', 'zero' or 'zero_once', got "
                             "'ones'", 3, 13, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_reducer((4,), "float32", op="prod")
    kernel_error(ValueError, "T.alloc_reducer: op must be 'sum', 'max' or 'min', got 'prod'",
                 4, 17, make)


def test_loop_arguments():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                for k in T.Pipelined(4, num_stages=-1):
                    pass
    kernel_error(ValueError, "T.Pipelined: num_stages must be an int >= 0, got -1", 4, 26, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                for k in T.serial(0, 4, 0):
                    pass
    kernel_error(ValueError, "T.serial: the step must be a nonzero int, got 0", 4, 26, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                for k in T.Parallel():
                    pass
    kernel_error(ValueError, "T.Parallel needs at least one extent", 4, 26, make)


def test_kernel_structure():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                with T.Kernel(2):
                    pass
    kernel_error(ValueError, "T.Kernel: a T.Kernel block inside another one", 4, 22, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=(1, 2, 3, 4)):
                pass
    kernel_error(TypeError, "T.Kernel: threads must be an int or a tuple of 1 to 3 ints, got "
                            "(1, 2, 3, 4)", 3, 18, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            A_s = T.alloc_shared((4,), "float32")
    kernel_error(ValueError, "T.alloc_shared is only valid inside a T.Kernel block", 3, 19, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            T.fill(A, 0)
    kernel_error(ValueError, "T.fill is only valid inside a T.Kernel block", 3, 13, make)

    def make():
        n = T.symbolic("n")

        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            if n > 2:
                pass
    kernel_error(ValueError, "a symbolic if is only valid inside a T.Kernel block", 5, 13, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.fill(A, 0)
                T.source(cpu="")
    line = inspect.getsourcelines(make)[1] + 4
    kernel_error(ValueError, f"T.source: a prim_func body is either T.source text or tile "
                             f"operations, not both (a tile operation at {at(line, 17)})",
                 5, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.source(cpu="")
                T.fill(A, 0)
    line = inspect.getsourcelines(make)[1] + 4
    kernel_error(ValueError, f"T.fill: a prim_func body is either T.source text or tile "
                             f"operations, not both (T.source at {at(line, 17)})", 5, 17, make)


def test_dtype_and_bitwise_errors():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                A[0] = T.infinity("int32")
    kernel_error(TypeError, "T.infinity: int32 is not a float dtype", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                A[0] = A[1] & bx
    kernel_error(TypeError, "& on a float32 operand: bitwise operators need integer operands "
                            "(or bool masks for & | ^)", 4, 24, make)


def test_unknown_t_name_points_at_the_use():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.set_max_nreg(240, 1)
    kernel_error(AttributeError, "T.set_max_nreg is not supported by tilejit's tile language",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.use_swizzle(panel_size=0)
    kernel_error(ValueError, "T.use_swizzle: panel_size must be a positive int, got 0",
                 4, 17, make)


def test_use_swizzle_twice_in_a_kernel():
    # The C++ builder's check, at the second call's line.
    line = here()
    with raises_exact(ValueError, f"{at(line + 8, 17)}: T.use_swizzle: the kernel already "
                                  f"has a block order (T.use_swizzle at {at(line + 7, 17)}); one "
                                  f"per kernel"):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(2, 2):
                T.use_swizzle(4)
                T.use_swizzle(2, order="col")


def test_tile_ops_outside_a_prim_func():
    with raises_exact(RuntimeError, "T.copy is only valid inside a function decorated with "
                                    "@T.prim_func"):
        T.copy(None, None)
    with raises_exact(RuntimeError, "T.serial is only valid inside a function decorated with "
                                    "@T.prim_func"):
        for _ in T.serial(4):
            pass


def test_tracebacks_end_in_the_authors_code():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.copy(A, 3)

    with pytest.raises(TypeError) as info:
        with recording():
            make()
    frames = traceback.extract_tb(info.value.__traceback__)
    package = os.path.dirname(T.__file__)
    assert frames[-1].filename == F and frames[-1].name == "main"
    assert frames[-1].lineno == inspect.getsourcelines(make)[1] + 4
    # Between the declaration and the author's line, only the frame of
    # T.prim_func itself (which raises it); none of the tracer's.
    assert [f.name for f in frames[-3:]] == ["make", "prim_func", "main"]
    assert frames[-2].filename.startswith(package) and frames[-3].filename == F


def test_more_value_and_buffer_errors():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                A[0] = ~A[1]
    kernel_error(TypeError, "~ on a float32 operand: bitwise operators need integer operands "
                            "(or bool masks)", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                A[0] = float(bx)
    kernel_error(TypeError, "the symbolic value 'bx' is used as a Python float; its value is "
                            "known only when the kernel runs", 4, 24, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                a, b = bx
    kernel_error(TypeError, "the symbolic value 'bx' is not iterable", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1):
                T.copy(A[0:2], A)
    kernel_error(IndexError, "A: sliced with 1 index; the buffer has 2 dimensions", 4, 24, make)


def test_more_op_argument_errors():
    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_shared(None, "float32")
    kernel_error(TypeError, "T.alloc_shared: the shape must be a tuple of ints, got NoneType",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.alloc_var("int32", 1, 2)
    kernel_error(TypeError, "T.alloc_var takes (dtype, init) or (dtype, init=...)", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.finalize_reducer(3)
    kernel_error(TypeError, "T.finalize_reducer: expected a buffer from T.alloc_reducer, got int",
                 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1) as bx:
                T.reduce_sum(A, B, clear=bx > 0)
    kernel_error(TypeError, "T.reduce_sum: clear must be a Python bool, got the expression "
                            "'(bx > 0)'", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.get_thread_binding(3)
    kernel_error(ValueError, "T.get_thread_binding: dim must be 0, 1 or 2, got 3", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.use_swizzle(4, order="diagonal")
    kernel_error(ValueError, "T.use_swizzle: order must be 'row', 'col' or 'column', got "
                             "'diagonal'", 4, 17, make)

    def make():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            T.use_swizzle(4)
    kernel_error(ValueError, "T.use_swizzle is only valid inside a T.Kernel block", 3, 13, make)


# --- TileLang forms not supported yet ---------------------------------------

def factory_given(name, label, kind):
    return (f"{name}: {label} is a tensor ({kind}), but {name}'s body declares no tensor "
            f"parameter; in TileLang's eager style the body declares each one (A: "
            f"T.Tensor((M, N), dtype)), in the factory style call kernel = "
            f"{name}(<configuration>), then kernel(<tensors>)")


class DLPackOnly:
    """A tensor known only by its DLPack protocol (hashable, as torch's are)."""

    def __dlpack__(self, stream=None):
        raise AssertionError("never read")

    def __dlpack_device__(self):
        return (1, 0)


def test_a_tensor_given_to_a_factory_style_function():
    # The body declares no tensor (no `A: T.Tensor(...)`): configuration only.
    # T.const and T.empty outside the eager style: test_tile_eager.py.
    ran = []

    @tilejit.jit
    def gemm(A, B=None, block=64):
        ran.append(block)
        raise RuntimeError("the factory ran")

    line = here()
    with raises_exact(TypeError, f"{at(line + 3, 9)}: "
                                 f"{factory_given('gemm', 'argument #0', 'numpy.ndarray')}"):
        gemm(np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32))
    by_name = factory_given("gemm", "argument 'B'", "test_tile_errors.DLPackOnly")
    with raises_exact(TypeError, f"{at(line + 6, 9)}: {by_name}"):
        gemm(1, B=DLPackOnly())
    assert ran == []
    # numpy's scalars are configuration, not tensors: the factory runs.
    with raises_exact(RuntimeError, "the factory ran"):
        gemm(np.int64(4), block=np.int32(32))
    assert ran == [32]


def test_a_buffer_view_over_something_else_than_a_tensor():
    # TileLang's convolution idiom, T.Tensor(shape, dtype, K.data), over a
    # value that is no tensor's storage.
    line = here()
    with raises_exact(TypeError, f"{at(line + 3, 9)}: T.Tensor(shape, dtype, data): data must "
                                 f"be a tensor's storage (X.data of a tensor X), got object"):
        T.Tensor((36, 8), "float16", object())


def test_a_float_dimension_names_the_parameter():
    M = 64
    line = here()
    with raises_exact(TypeError, f"{at(line + 4, 53)}: main: parameter 'B': T.Tensor: dimension "
                                 f"0 is the float 32.0; a dimension is an int or a T.symbolic "
                                 f"expression (// divides ints)"):
        def main(A: T.Tensor((M, 8), "float32"), B: T.Tensor((M / 2, 8), "float32")):
            pass


def test_a_float_dimension_in_a_string_annotation(tmp_path):
    path = tmp_path / "future_kernel.py"
    path.write_text("from __future__ import annotations\n"
                    "import tilejit.language as T\n"
                    "M = 64\n\n"
                    "@T.prim_func\n"
                    "def main(A: T.Tensor((M, 8), 'float32'), B: T.Tensor((M / 2, 8), 'float32')):\n"
                    "    pass\n")
    with raises_exact(TypeError, f"{path}:5:1: main: parameter 'B': T.Tensor: dimension 0 is the "
                                 f"float 32.0; a dimension is an int or a T.symbolic expression "
                                 f"(// divides ints)"):
        exec(compile(path.read_text(), str(path), "exec"), {})


# --- tile-buffer bounds (issue 20, item 4) ---------------------------------

def test_a_parallel_extent_past_its_fragment():
    line = here()
    with raises_exact(ValueError, f"{at(line + 8, 21)}: store: index i takes the values 0 to "
                                  f"63, but dimension 0 of f [32] has extent 32"):
        @T.prim_func
        def main(X: T.Tensor((64,), "float32")):
            with T.Kernel(1):
                f = T.alloc_fragment((32,), "float32")
                for i in T.Parallel(64):
                    f[i] = X[i]


def test_a_guarded_parallel_extent_past_its_fragment_compiles():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32")):
        with T.Kernel(1):
            f = T.alloc_fragment((32,), "float32")
            for i in T.Parallel(64):
                if i < 32:
                    f[i] = X[i]
    assert main.is_tile


def shift_kernel(**options):
    """Y = f[i + off] with f = X: a symbolic index that leaves f when off > 0,
    which only the run-time checks see."""
    import tilejit

    @T.prim_func
    def shift(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32"), off: T.int32):
        with T.Kernel(1, threads=1):
            f = T.alloc_fragment((32,), "float32")
            for i in T.Parallel(32):
                f[i] = X[i]
            for i in T.Parallel(32):
                Y[i] = f[i + off]
    return tilejit.compile(shift, out_idx=[1], target="cpu", **options)


def test_debug_bounds_traps_a_symbolic_index(monkeypatch):
    import numpy as np
    from tilejit import PassConfigKey
    monkeypatch.delenv("TILEJIT_DEBUG_BOUNDS", raising=False)
    x = np.arange(32, dtype=np.float32)
    for configs in ({"tl.debug_bounds": True}, {PassConfigKey.TL_DEBUG_BOUNDS: 1}):
        kernel = shift_kernel(pass_configs=configs)
        np.testing.assert_array_equal(kernel(x, 0), x)
        with raises_exact(RuntimeError, "shift: block (0, 0, 0) threw std::runtime_error: bounds "
                                        "check: index 32 lies outside f [32] in dimension 0"):
            kernel(x, 1)
    # Unchecked unless asked for (the unit has no checks at all).
    assert "checked_index" not in shift_kernel().source
    assert "checked_index" not in shift_kernel(pass_configs={"tl.debug_bounds": False}).source
    monkeypatch.setenv("TILEJIT_DEBUG_BOUNDS", "1")
    assert "checked_index" in shift_kernel().source


def test_debug_bounds_takes_a_bool():
    with raises_exact(TypeError, "shift: pass_configs['tl.debug_bounds'] must be a bool, got "
                                 "str"):
        shift_kernel(pass_configs={"tl.debug_bounds": "yes"})
    import tilejit
    with raises_exact(TypeError, "tilejit.jit: pass_configs['tl.debug_bounds'] must be a bool, "
                                 "got float"):
        tilejit.jit(pass_configs={"tl.debug_bounds": 1.0})

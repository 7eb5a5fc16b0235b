"""Calling kernels with numpy arrays: the seed's forms (outputs anywhere in
the signature, several or none, negative indices, dynamic symbols and
products of them, scalars), workspace init policies, out= and workspace=,
and what a call returns."""

import threading

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import add_one_kernel, pool_in_use, raises_exact


def aligned_bytes(nbytes, alignment=256):
    """A uint8 numpy array of `nbytes` whose data is `alignment`-aligned."""
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = (-raw.ctypes.data) % alignment
    return raw[offset:offset + nbytes]


def test_output_in_the_middle_of_the_signature():
    n = T.symbolic("n")

    @T.prim_func
    def middle(A: T.Tensor([n], "float32"), Out: T.Tensor([n], "float32"),
               B: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Out(i) = A(i) * B(i);")

    k = tilejit.compile(middle, out_idx=[1], target="cpu")
    assert k.input_names == ["A", "B"] and k.output_names == ["Out"]
    a = np.arange(5, dtype=np.float32)
    b = np.full(5, 3, np.float32)
    out = k(a, b)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (5,)
    np.testing.assert_array_equal(out, a * b)


def test_several_outputs_return_a_tuple_in_out_idx_order():
    n = T.symbolic("n")

    @T.prim_func
    def two(X: T.Tensor([n], "int32"), Sum: T.Tensor([1], "int64"), Neg: T.Tensor([n], "int32")):
        T.source(cpu="""
int64_t s = 0;
for (int64_t i = 0; i < n; ++i) { s += X(i); Neg(i) = -X(i); }
Sum(0) = s;
""")

    k = tilejit.compile(two, out_idx=[2, 1], target="cpu")
    x = np.array([1, 2, 3], np.int32)
    result = k(x)
    assert isinstance(result, tuple) and len(result) == 2
    neg, total = result
    np.testing.assert_array_equal(neg, -x)
    assert total.dtype == np.int64 and total.tolist() == [6]


def test_no_outputs_returns_none_and_writes_in_place():
    n = T.symbolic("n")

    @T.prim_func
    def inplace(X: T.Tensor([n], "float64"), alpha: T.float32):
        with T.Kernel(n, threads=1) as bx:
            T.source(cpu="X(bx) *= alpha;")

    k = tilejit.compile(inplace, target="cpu")
    x = np.arange(4, dtype=np.float64)
    assert k(x, 2.5) is None
    np.testing.assert_array_equal(x, [0, 2.5, 5, 7.5])


def test_negative_indices():
    k = add_one_kernel(out_idx=[-1])
    np.testing.assert_array_equal(k(np.zeros(3, np.float32)), [1, 1, 1])
    n = T.symbolic("n")

    @T.prim_func
    def neg(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
            W: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { W(i) = 2 * X(i); Y(i) = W(i) + 1; }")

    k2 = tilejit.compile(neg, out_idx=-2, workspace_idx=-1, target="cpu")
    assert k2.output_names == ["Y"] and k2.workspace_names == ["W"]
    np.testing.assert_array_equal(k2(np.arange(3, dtype=np.float32)), [1, 3, 5])


@tilejit.jit(out_idx=[1], workspace_idx=[2], target="cpu")
def rows_total(width):
    b, s = T.symbolic("b"), T.symbolic("s")

    @T.prim_func
    def main(X: T.Tensor([b, s, width], "float32"), Y: T.Tensor([b * s], "float32"),
             W: T.Tensor([b * s, width], "float32")):
        with T.Kernel(b * s, threads=32) as bx:
            T.source(cpu="""
float acc = 0.f;
for (int64_t j = 0; j < W.shape(1); ++j) { W(bx, j) = X(bx / s, bx % s, j); acc += W(bx, j); }
Y(bx) = acc;
""")

    return main


@pytest.mark.parametrize("b, s", [(1, 1), (2, 3), (5, 7), (3, 0)])
def test_dynamic_symbols_and_their_products(b, s):
    k = rows_total(4)
    x = np.random.default_rng(b * 10 + s).standard_normal((b, s, 4)).astype(np.float32)
    if s == 0:
        with raises_exact(ValueError, "rows_total: grid extent 0 = b * s evaluates to 0 (b = 3 "
                                      "from X.shape[0], s = 0 from X.shape[1]); every grid "
                                      "extent must be positive"):
            k(x)
        return
    y = k(x)
    assert y.shape == (b * s,)
    np.testing.assert_allclose(y, x.reshape(b * s, 4).sum(axis=1), rtol=1e-5, atol=1e-6)
    assert k.workspace_bytes(x) == ((b * s * 4 * 4 + 255) // 256) * 256
    layout = k.workspace_layout(x)
    assert layout == [{"name": "W", "offset": 0, "bytes": b * s * 4 * 4, "shape": (b * s, 4),
                       "dtype": "float32", "init": "empty"}]


def test_affine_binding_and_its_error():
    n = T.symbolic("n")

    @T.prim_func
    def halves(X: T.Tensor([2 * n + 1], "int32"), Y: T.Tensor([n], "int32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = X(2 * i) + X(2 * i + 1);")

    k = tilejit.compile(halves, out_idx=[1], target="cpu")
    np.testing.assert_array_equal(k(np.arange(7, dtype=np.int32)), [1, 5, 9])
    with raises_exact(ValueError, "halves: argument #0 'X': dimension 0 is 8, which is not "
                                  "2 * n + 1 for any integer n"):
        k(np.arange(8, dtype=np.int32))


def test_scalars():
    n = T.symbolic("n")

    @T.prim_func
    def axpb(X: T.Tensor([n], "float32"), a: T.float32, b: T.int32, n: T.int64,
             Y: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = a * X(i) + b;")

    k = tilejit.compile(axpb, out_idx=[-1], target="cpu")
    assert k.input_names == ["X", "a", "b", "n"] and k.symbols == ["n"]
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(k(x, 2.0, 1, 3), [1, 3, 5])
    np.testing.assert_array_equal(k(x, 2, np.int16(1), np.int64(3)), [1, 3, 5])  # ints are floats too
    np.testing.assert_array_equal(k(x, np.float32(0.5), 0, 3), [0, 0.5, 1])
    with raises_exact(TypeError, "axpb: argument #2 'b': expected int32 scalar, got a float "
                                 "(1.5)"):
        k(x, 2.0, 1.5, 3)
    with raises_exact(ValueError, "axpb: argument #2 'b': value 3000000000 does not fit in "
                                  "int32"):
        k(x, 2.0, 3_000_000_000, 3)
    with raises_exact(ValueError, "axpb: argument #2 'b': integer 99999999999999999999 does not "
                                  "fit in int64"):
        k(x, 2.0, 99999999999999999999, 3)
    with raises_exact(TypeError, "axpb: argument #1 'a': expected float32 scalar, got a float32 "
                                 "tensor of shape [3]"):
        k(x, x, 1, 3)
    with raises_exact(TypeError, "axpb: argument #2 'b': expected int32 scalar, got None"):
        k(x, 2.0, None, 3)
    with raises_exact(TypeError, "axpb: argument #2 'b': expected an int32 scalar, got an "
                                 "object of type str"):
        k(x, 2.0, "1", 3)
    with raises_exact(TypeError, "axpb: argument #1 'a': expected a float32 scalar, got an "
                                 "object of type list"):
        k(x, [2.0], 1, 3)
    # A float32 scalar that rounds to infinity is an error; infinity itself is not.
    with raises_exact(ValueError, "axpb: argument #1 'a': value 1e+40 does not fit in float32"):
        k(x, 1e40, 1, 3)
    with raises_exact(ValueError, "axpb: argument #1 'a': value -1e+39 does not fit in float32"):
        k(x, np.float64(-1e39), 1, 3)
    assert k(x, float("inf"), 0, 3)[1] == np.inf
    assert k(x, 3.4028234663852886e38, 0, 3)[1] == np.finfo(np.float32).max
    with raises_exact(ValueError, "axpb: symbol 'n': scalar #3 'n' = 4 but X.shape[0] = 3"):
        k(x, 2.0, 1, 4)
    assert pool_in_use() == 0


def test_workspace_init_zero_and_zero_once():
    n = T.symbolic("n")
    # Each call checks the workspace is zero (Y = its sum) and scribbles on it.
    body = "float s = 0; for (int64_t i = 0; i < n; ++i) { s += W(i); W(i) = 7; } Y(0) = s;"
    # zero_once promises to leave the workspace zeroed: clean up after use.
    body_once = ("float s = 0; for (int64_t i = 0; i < n; ++i) { s += W(i); W(i) = 7; }"
                 " Y(0) = s; for (int64_t i = 0; i < n; ++i) W(i) = 0;")

    def make(name, text):
        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([1], "float32"),
                 W: T.Tensor([n], "float32")):
            T.source(cpu=text)
        return main.with_name(name)

    scribbler = tilejit.compile(make("scribbler", body), out_idx=[1], workspace_idx=[2],
                                target="cpu")
    zero = tilejit.compile(make("zeroed", body), out_idx=[1], workspace_idx=[2], target="cpu",
                           workspace_init={"W": "zero"})
    once = tilejit.compile(make("zeroed_once", body_once), out_idx=[1], workspace_idx=[2],
                           target="cpu", workspace_init={"W": "zero_once"})
    assert zero.workspace_layout(np.zeros(64, np.float32))[0]["init"] == "zero"
    x = np.zeros(64, np.float32)
    for _ in range(3):
        scribbler(x)  # leaves 7s in the pooled block
        assert zero(x)[0] == 0
        assert zero(x)[0] == 0
        assert once(x)[0] == 0  # another layout ran in the block: zeroed again
        assert once(x)[0] == 0


def test_out_passthrough():
    k = add_one_kernel()
    x = np.arange(4, dtype=np.float32)
    y = np.empty(4, np.float32)
    assert k(x, out=y) is y
    np.testing.assert_array_equal(y, x + 1)
    y2 = np.zeros(4, np.float32)
    assert k(x, out=[y2]) is y2 and y2[0] == 1
    fresh = k(x, out=[None])
    assert fresh is not y and fresh[3] == 4
    with raises_exact(ValueError, "add_one: out[0] 'Y': expected shape [4], got [5]"):
        k(x, out=np.empty(5, np.float32))
    with raises_exact(TypeError, "add_one: out[0] 'Y': expected float32, got float64"):
        k(x, out=np.empty(4, np.float64))
    readonly = np.empty(4, np.float32)
    readonly.flags.writeable = False
    with raises_exact(ValueError, "add_one: out[0] 'Y': the array is read-only; outputs must be "
                                  "writable"):
        k(x, out=readonly)
    with raises_exact(ValueError, "add_one: out[0] 'Y': expected a contiguous tensor, got strides "
                                  "[2] in elements ([8] in bytes) for shape [4]"):
        k(x, out=np.empty(8, np.float32)[::2])
    with raises_exact(ValueError, "add_one: out= has 2 tensors; the kernel has 1 output"):
        k(x, out=[y, y])
    with raises_exact(TypeError, "add_one: out[0] 'Y': expected a float32 tensor, got an object "
                                 "of type int (tensors are numpy arrays, torch tensors or "
                                 "objects with __dlpack__)"):
        k(x, out=3)
    assert pool_in_use() == 0


def test_workspace_passthrough():
    k = rows_total(4)
    x = np.ones((2, 3, 4), np.float32)
    before = tilejit.pool_stats()["leases"]
    arena = aligned_bytes(k.workspace_bytes(x))
    np.testing.assert_array_equal(k(x, workspace=arena), np.full(6, 4.0))
    assert tilejit.pool_stats()["leases"] == before  # the pool was not asked
    assert np.frombuffer(arena.tobytes(), np.float32)[:4].tolist() == [1, 1, 1, 1]
    with raises_exact(ValueError, "rows_total: workspace=: needs 256 bytes, got a tensor of 255 "
                                  "bytes"):
        k(x, workspace=aligned_bytes(255))
    misaligned = aligned_bytes(512)[8:264]
    with raises_exact(ValueError, "rows_total: workspace=: the data pointer is not 256-byte "
                                  "aligned (address % 256 = 8); kernel.empty_workspace() with the "
                                  "call's inputs makes an arena of the right size and alignment"):
        k(x, workspace=misaligned)
    readonly = aligned_bytes(256)
    readonly.flags.writeable = False
    with raises_exact(ValueError, "rows_total: workspace=: the array is read-only; a workspace "
                                  "must be writable"):
        k(x, workspace=readonly)


def test_keywords_and_streams():
    k = add_one_kernel()
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(k(x, stream=None), [1, 1])
    np.testing.assert_array_equal(k(x, stream=0), [1, 1])  # the CPU has no streams: ignored

    class StreamProtocol:
        def __cuda_stream__(self):
            return (0, 0)

    np.testing.assert_array_equal(k(x, stream=StreamProtocol()), [1, 1])
    with raises_exact(TypeError, "stream= expects None, an int handle, or an object with "
                                 "__cuda_stream__ or cuda_stream; got an object of type str"):
        k(x, stream="default")
    with raises_exact(TypeError, "add_one: unexpected keyword argument 'outs' (inputs: X; "
                                 "options: stream=, out=, workspace=)"):
        k(x, outs=None)


def test_outputs_own_their_memory():
    k = add_one_kernel()
    y = k(np.zeros(1000, np.float32))
    assert y.flags.c_contiguous and y.flags.writeable and y.flags.owndata is False
    assert type(y.base).__name__ == "TensorOwner"
    assert y.ctypes.data % 256 == 0  # tilejit's allocator aligns to 256 bytes
    del k
    y[:] = 3  # the memory outlives the kernel
    assert y.sum() == 3000


def test_other_dlpack_and_buffer_producers_come_back_as_numpy():
    class Producer:
        """Anything with __dlpack__: here a wrapper over a numpy array."""

        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    k = add_one_kernel()
    y = k(Producer(np.arange(3, dtype=np.float32)))
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, [1, 2, 3])
    import array
    y = k(array.array("f", [1.0, 2.0]))  # the buffer protocol
    np.testing.assert_array_equal(y, [2, 3])


def test_a_producers_own_error_names_the_argument():
    class Refuses:
        def __dlpack__(self, **kwargs):
            raise BufferError("cannot export a tensor that requires grad")

        def __dlpack_device__(self):
            return (1, 0)

    k = add_one_kernel()
    with raises_exact(BufferError, "add_one: argument #0 'X': the tensor could not be read "
                                   "through DLPack: cannot export a tensor that requires grad"):
        k(Refuses())
    assert pool_in_use() == 0


def test_a_call_nested_in_a_producer_leaves_the_outer_call_alone():
    n = T.symbolic("n")

    @T.prim_func
    def add(A: T.Tensor([n], "float32"), B: T.Tensor([n], "float32"),
            C: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) C(i) = A(i) + B(i);")

    k = tilejit.compile(add, out_idx=[2], target="cpu")
    inner = []

    class Reentrant:
        """A DLPack producer whose export calls the same kernel."""

        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            inner.append(k(np.full(2, 10, np.float32), np.full(2, 20, np.float32)))
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    a = np.ones(3, np.float32)
    out = k(a, Reentrant(np.full(3, 2, np.float32)))
    np.testing.assert_array_equal(out, [3, 3, 3])
    np.testing.assert_array_equal(inner[0], [30, 30])


def test_calls_from_many_threads():
    k = rows_total(8)
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(50):
                b, s = rng.integers(1, 5, size=2)
                x = rng.standard_normal((b, s, 8)).astype(np.float32)
                np.testing.assert_allclose(k(x), x.reshape(-1, 8).sum(axis=1), rtol=1e-5,
                                           atol=1e-5)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pool_in_use() == 0


def test_many_blocks_on_many_threads():
    n = T.symbolic("n")

    @T.prim_func
    def square(X: T.Tensor([n], "int64"), Y: T.Tensor([n], "int64")):
        with T.Kernel(n, threads=1) as bx:
            T.source(cpu="Y(bx) = X(bx) * X(bx);")

    k = tilejit.compile(square, out_idx=[1], target="cpu")
    old = tilejit.get_num_threads()
    try:
        for threads in (1, 2, 3):
            tilejit.set_num_threads(threads)
            assert tilejit.get_num_threads() == threads
            x = np.arange(10_000, dtype=np.int64)
            np.testing.assert_array_equal(k(x), x * x)
    finally:
        tilejit.set_num_threads(old)
    with raises_exact(ValueError, "set_num_threads: 0 threads; expected at least 1"):
        tilejit.set_num_threads(0)

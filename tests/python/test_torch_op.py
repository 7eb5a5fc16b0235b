"""tilejit.torch.register: tilejit kernels as PyTorch operators.

Skipped without torch; the CUDA tests also without a CUDA device (or
without tilejit's CUDA backend). What is checked, on the CPU and on CUDA:

- the schema derived from the kernel's inputs and outputs, and the errors
  for what cannot be registered;
- a call of the operator equals the kernel's direct call;
- torch.library.opcheck (schema, fake tensor, autograd registration, AOT
  dispatch with dynamic shapes);
- torch.compile(fullgraph=True) of two calls: one graph, no graph break,
  the operator traced through its fake implementation (aot_eager on the
  CPU, inductor on CUDA);
- dynamic=True: three shapes (and scalar values that size the output), one
  compile, right results;
- CUDA graph capture of the operator, replayed after the inputs change in
  place.
"""

import itertools
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tilejit  # noqa: E402
import tilejit.torch  # noqa: E402
from tilejit import language as T  # noqa: E402
from support import make_kernels, raises_exact, tilejit_cuda_unavailable  # noqa: E402
import torch._dynamo.testing  # noqa: E402


def _cuda_why():
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return tilejit_cuda_unavailable()


CUDA_WHY = _cuda_why()
needs_cuda = [pytest.mark.gpu, pytest.mark.skipif(bool(CUDA_WHY), reason=CUDA_WHY)]
TARGETS = ["cpu", pytest.param("cuda", marks=needs_cuda)]

_names = itertools.count()


def qualname(stem):
    """A fresh operator name: torch's registrations last for the process."""
    return f"tilejit_test::{stem}_{next(_names)}"


# --- kernels ---------------------------------------------------------------

INDEX = "const int64_t i = bx * 256 + threadIdx.x;\n"


def repeat_kernel(target):
    """Y[i * r + j] = 2 X[i] + j through the workspace W[n]: the output's
    length n * r comes from a dimension and a scalar."""
    n, r = T.symbolic("n"), T.symbolic("r")
    cpu = ("for (int64_t i = 0; i < n; ++i) { W(i) = 2.0f * X(i);\n"
           "  for (int64_t j = 0; j < r; ++j) Y(i * r + j) = W(i) + float(j); }")
    cuda = (INDEX + "if (i < n) { W(i) = 2.0f * X(i);\n"
            "  for (int64_t j = 0; j < r; ++j) Y(i * r + j) = W(i) + float(j); }\n")

    @T.prim_func
    def repeat(X: T.Tensor([n], "float32"), Y: T.Tensor([n * r], "float32"),
               W: T.Tensor([n], "float32"), r: T.int32):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cpu=cpu, cuda=cuda)

    return tilejit.compile(repeat, out_idx=[1], workspace_idx=[2], target=target)


def repeat_reference(x, r):
    return (2 * x[:, None] + torch.arange(r, dtype=x.dtype, device=x.device)).reshape(-1)


_SPLIT_MM_CPU = """
for (int64_t s = 0; s < split; ++s) {
  const int64_t k0 = K * s / split, k1 = K * (s + 1) / split;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = k0; k < k1; ++k) acc += A(i, k) * B(k, j);
      P(s, i, j) = acc;
    }
}
for (int64_t i = 0; i < M; ++i)
  for (int64_t j = 0; j < N; ++j) {
    float acc = 0;
    for (int64_t s = 0; s < split; ++s) acc += P(s, i, j);
    C(i, j) = acc;
  }
"""


def split_mm_cpu():
    """C = A B, split-K over `split` slices of K into the workspace P."""
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    split = T.symbolic("split")  # the scalar parameter of that name binds it

    @T.prim_func
    def split_mm(A: T.Tensor([M, K], "float32"), B: T.Tensor([K, N], "float32"),
                 C: T.Tensor([M, N], "float32"), P: T.Tensor([split, M, N], "float32"),
                 split: T.int32):
        T.source(cpu=_SPLIT_MM_CPU)

    return tilejit.compile(split_mm, out_idx=[2], workspace_idx=[3], target="cpu")


def matmul_kernel(target):
    """(kernel, extra args): the CPU split-K above with split = 3, or the
    split-K matmul example's CUDA body (split_k = 4, a zero_once counter)."""
    if target == "cpu":
        return split_mm_cpu(), (3,)
    splitk_matmul = make_kernels("cuda")[0]
    return splitk_matmul(4), ()


def randn(*shape, device):
    g = torch.Generator(device=device).manual_seed(sum(shape) * 31 + len(shape))
    return torch.rand(*shape, device=device, generator=g) * 2 - 1


@pytest.fixture
def no_tf32():
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = previous


def assert_matmul(c, a, b):
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


# --- registration and schema ---------------------------------------------------

def test_importing_tilejit_does_not_import_torch():
    code = "import sys, tilejit; assert 'torch' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout == "ok\n"


def test_schema_from_the_signature():
    name = qualname("split_mm")
    op = tilejit.torch.register(split_mm_cpu(), name)
    ns, stem = name.split("::")
    assert op is getattr(getattr(torch.ops, ns), stem)
    assert str(op.default._schema) == name + "(Tensor A, Tensor B, SymInt split) -> Tensor"


def test_schema_of_several_outputs_a_float_and_a_mutated_input():
    n = T.symbolic("n")

    @T.prim_func
    def split(X: T.Tensor([n], "float32"), Lo: T.Tensor([n], "float32"),
              Hi: T.Tensor([n], "int32"), Acc: T.Tensor([n], "float32"), a: T.float32):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) {\n"
                     "  Lo(i) = X(i) - a; Hi(i) = int32_t(X(i) + a); Acc(i) += X(i); }")

    k = tilejit.compile(split, out_idx=[2, 1], target="cpu")
    name = qualname("split")
    op = tilejit.torch.register(k, name, mutates_args=["Acc"])
    assert str(op.default._schema) == (
        name + "(Tensor X, Tensor(a!) Acc, float a) -> (Tensor, Tensor)")
    x, acc = torch.tensor([1.0, 2.5]), torch.zeros(2)
    version = acc._version
    hi, lo = op(x, acc, 0.5)
    assert hi.dtype == torch.int32 and hi.tolist() == [1, 3] and lo.tolist() == [0.5, 2.0]
    assert acc.tolist() == [1.0, 2.5] and acc._version > version
    torch.library.opcheck(op, (x, torch.zeros(2), 0.5))


def test_an_operator_without_outputs_mutates_its_input():
    n = T.symbolic("n")

    @T.prim_func
    def bump(X: T.Tensor([n], "int64"), step: T.int64):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) X(i) += step;")

    name = qualname("bump")
    op = tilejit.torch.register(tilejit.compile(bump, target="cpu"), name, mutates_args=("X",))
    assert str(op.default._schema) == name + "(Tensor(a!) X, SymInt step) -> ()"
    x = torch.arange(3)
    assert op(x, 2) is None and x.tolist() == [2, 3, 4]
    torch.library.opcheck(op, (torch.arange(4), 5))

    @torch.compile(backend="aot_eager", fullgraph=True)
    def twice(x):
        op(x, 1)
        op(x, 10)
        return x * 2

    y = torch.arange(3)
    assert twice(y).tolist() == [22, 24, 26] and y.tolist() == [11, 12, 13]


def test_each_mutated_input_has_its_own_alias_set():
    n = T.symbolic("n")

    @T.prim_func
    def both(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { X(i) += 1; Y(i) *= 2; }")

    name = qualname("both")
    op = tilejit.torch.register(tilejit.compile(both, target="cpu"), name,
                                mutates_args=["Y", "X"])
    assert str(op.default._schema) == name + "(Tensor(a!) X, Tensor(b!) Y) -> ()"
    x, y = torch.ones(2), torch.ones(2)
    op(x, y)
    assert x.tolist() == [2, 2] and y.tolist() == [2, 2]
    torch.library.opcheck(op, (torch.ones(3), torch.ones(3)))


def test_a_kernel_without_tensor_inputs():
    """Its outputs are made with torch.empty on the kernel's device and passed
    through out=: a plain call would return numpy arrays."""
    n = T.symbolic("n")

    @T.prim_func
    def iota(Y: T.Tensor([n], "int64"), n: T.int64):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = i;")

    op = tilejit.torch.register(tilejit.compile(iota, out_idx=[0], target="cpu"),
                                qualname("iota"))
    y = op(4)
    assert type(y) is torch.Tensor and y.tolist() == [0, 1, 2, 3]
    torch.library.opcheck(op, (5,))


# --- errors -------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["noseparator", "a::b::c", "1ns::op", "ns::", "ns::op.default",
                                 "ns:op"])
def test_bad_qualname(bad):
    with raises_exact(ValueError, f"tilejit.torch.register: repeat: qualname '{bad}' is not of "
                                  f"the form 'namespace::name' (identifiers)"):
        tilejit.torch.register(repeat_kernel("cpu"), bad)


def test_registering_twice():
    k = repeat_kernel("cpu")
    name = qualname("twice")
    tilejit.torch.register(k, name)
    with raises_exact(RuntimeError, f"tilejit.torch.register: repeat: operator '{name}' is "
                                    f"registered already"):
        tilejit.torch.register(k, name)
    # An operator defined by other means counts too.
    other = qualname("other")
    ns, stem = other.split("::")
    lib = torch.library.Library(ns, "FRAGMENT")
    lib.define(stem + "(Tensor x) -> Tensor")
    with raises_exact(RuntimeError, f"tilejit.torch.register: repeat: operator '{other}' is "
                                    f"registered already"):
        tilejit.torch.register(k, other)


def test_registration_errors_name_the_argument():
    k = repeat_kernel("cpu")
    with raises_exact(TypeError, "tilejit.torch.register: expected a tilejit.Kernel, got "
                                 "function"):
        tilejit.torch.register(repeat_reference, qualname("f"))
    with raises_exact(ValueError, "tilejit.torch.register: repeat: mutates_args names 'Y', "
                                  "which is no input (inputs: X, r)"):
        tilejit.torch.register(k, qualname("m"), mutates_args=["Y"])
    with raises_exact(ValueError, "tilejit.torch.register: repeat: mutates_args names 'r', a "
                                  "scalar input; only tensors can be mutated"):
        tilejit.torch.register(k, qualname("m"), mutates_args=["r"])
    with raises_exact(TypeError, "tilejit.torch.register: repeat: mutates_args must be a "
                                 "sequence of input names, not a str"):
        tilejit.torch.register(k, qualname("m"), mutates_args="X")


def test_an_input_named_after_a_keyword():
    """The IR builder takes names that torch's schema parser does not."""
    b = tilejit._C.TileBuilder("kw")
    n = tilejit._C.Expr.var("n")
    x = b.tensor_param("None", [n], "float32")
    y = b.tensor_param("Y", [n], "float32")
    (bx,) = b.begin_kernel([tilejit._C.ceildiv(n, 128)], [128])
    shared = b.alloc("S", [128], "float32", "shared")
    b.copy(x[bx * 128], shared)
    b.copy(shared, y[bx * 128])
    b.end_kernel()
    k = tilejit.compile(b.finish(), out_idx=[1], target="cpu")
    with raises_exact(ValueError, "tilejit.torch.register: kw: input #0 'None' cannot name a "
                                  "schema argument (a Python keyword)"):
        tilejit.torch.register(k, qualname("kw"))


def test_fake_implementation_checks_what_the_call_checks():
    op = tilejit.torch.register(split_mm_cpu(), qualname("checked"))
    from torch._subclasses.fake_tensor import FakeTensorMode
    leases = tilejit.pool_stats()["leases"]
    with FakeTensorMode():
        a, b = torch.empty(4, 6), torch.empty(6, 5)
        c = op(a, b, 2)
        assert c.shape == (4, 5) and c.dtype == torch.float32
        with raises_exact(TypeError, "split_mm: argument #0 'A': expected float32, got "
                                     "float64"):
            op(a.double(), b, 2)
        with raises_exact(ValueError, "split_mm: argument #1 'B': expected 2 dimensions, got 1"):
            op(a, torch.empty(6), 2)
        with pytest.raises(RuntimeError, match="split_mm: argument #1 'B': dimension 0 does not "
                                               "match the symbols bound by the other inputs"):
            op(a, torch.empty(7, 5), 2)
    assert tilejit.pool_stats()["leases"] == leases  # no kernel ran
    # The real call's own messages.
    with raises_exact(ValueError, "split_mm: symbol 'K': A.shape[1] = 6 but B.shape[0] = 7"):
        op(torch.zeros(4, 6), torch.zeros(7, 5), 2)


def test_fake_implementation_solves_affine_dimensions_and_checks_static_ones():
    s = T.symbolic("s")

    @T.prim_func
    def halve(X: T.Tensor([2 * s + 1, 4], "float32"), Y: T.Tensor([s], "float32")):
        T.source(cpu="for (int64_t i = 0; i < s; ++i) Y(i) = X(2 * i + 1, 3);")

    op = tilejit.torch.register(tilejit.compile(halve, out_idx=[1], target="cpu"),
                                qualname("halve"))
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        assert op(torch.empty(9, 4)).shape == (4,)
        with pytest.raises(RuntimeError, match=r"halve: argument #0 'X': dimension 0 must be "
                                               r"2 \* s \+ 1"):
            op(torch.empty(8, 4))
        with pytest.raises(RuntimeError, match="halve: argument #0 'X': dimension 1 must be 4"):
            op(torch.empty(9, 5))
    x = torch.arange(36, dtype=torch.float32).reshape(9, 4)
    assert op(x).tolist() == x[1::2, 3].tolist()

    @torch.compile(backend="aot_eager", fullgraph=True, dynamic=True)
    def f(x):
        return op(x)

    for rows in (5, 7, 11):
        x = torch.randn(rows, 4)
        torch.testing.assert_close(f(x), x[1::2, 3])


# --- calls, opcheck, torch.compile (CPU and CUDA) -------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_call_equals_the_direct_call(target, no_tf32):
    k, extra = matmul_kernel(target)
    op = tilejit.torch.register(k, qualname("mm"))
    for m, n, kk in [(5, 7, 9), (64, 33, 200)]:
        a, b = randn(m, kk, device=target), randn(kk, n, device=target)
        c = op(a, b, *extra)
        assert type(c) is torch.Tensor and c.device == a.device and c.shape == (m, n)
        torch.testing.assert_close(c, k(a, b, *extra), rtol=0, atol=0)
        assert_matmul(c, a, b)
    r = repeat_kernel(target)
    rop = tilejit.torch.register(r, qualname("repeat"))
    x = randn(300, device=target)
    torch.testing.assert_close(rop(x, 3), r(x, 3), rtol=0, atol=0)
    torch.testing.assert_close(rop(x, 3), repeat_reference(x, 3))


@pytest.mark.parametrize("target", TARGETS)
def test_opcheck(target, no_tf32):
    k, extra = matmul_kernel(target)
    op = tilejit.torch.register(k, qualname("mm"))
    a, b = randn(6, 10, device=target), randn(10, 3, device=target)
    result = torch.library.opcheck(op, (a, b, *extra))
    assert set(result.values()) == {"SUCCESS"}, result
    rop = tilejit.torch.register(repeat_kernel(target), qualname("repeat"))
    result = torch.library.opcheck(rop, (randn(5, device=target), 4))
    assert set(result.values()) == {"SUCCESS"}, result


def backend_for(target):
    # aot_eager on the CPU: fake tensors and functionalisation without
    # inductor's compiler; inductor on CUDA.
    return "aot_eager" if target == "cpu" else "inductor"


@pytest.mark.parametrize("target", TARGETS)
def test_compile_fullgraph_two_calls_one_graph(target, no_tf32):
    k, extra = matmul_kernel(target)
    op = tilejit.torch.register(k, qualname("mm"))
    ns, stem = op.default.name().split("::")

    def f(a, b, c):
        return op(op(a, b, *extra), c, *extra) + 1

    a, b, c = randn(8, 16, device=target), randn(16, 12, device=target), randn(12, 4,
                                                                              device=target)
    explained = torch._dynamo.explain(f)(a, b, c)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    calls = [n for n in explained.graphs[0].graph.nodes if n.op == "call_function"
             and n.target in (op, op.default)]
    assert len(calls) == 2
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounterWithBackend(backend_for(target))
    compiled = torch.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        torch.testing.assert_close(compiled(a, b, c), (a @ b) @ c + 1, rtol=1e-4, atol=1e-4)
    assert counter.frame_count == 1


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_shapes_compile_once(target, no_tf32):
    k, extra = matmul_kernel(target)
    op = tilejit.torch.register(k, qualname("mm"))
    rop = tilejit.torch.register(repeat_kernel(target), qualname("repeat"))

    def f(a, b, x, r):
        return op(a, b, *extra), rop(x, r)

    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounterWithBackend(backend_for(target))
    compiled = torch.compile(f, backend=counter, fullgraph=True, dynamic=True)
    # No two sizes alike within a call, none 0 or 1: torch specialises those.
    for m, n, kk, length, r in [(5, 7, 9, 11, 2), (13, 6, 20, 17, 3), (40, 24, 33, 300, 5)]:
        a, b = randn(m, kk, device=target), randn(kk, n, device=target)
        x = randn(length, device=target)
        c, y = compiled(a, b, x, r)
        assert c.shape == (m, n) and y.shape == (length * r,)
        assert_matmul(c, a, b)
        torch.testing.assert_close(y, repeat_reference(x, r))
    assert counter.frame_count == 1


# --- CUDA only -----------------------------------------------------------------

@pytest.mark.parametrize("target", [pytest.param("cuda", marks=needs_cuda)])
def test_outputs_from_torchs_caching_allocator_on_the_current_stream(target):
    rop = tilejit.torch.register(repeat_kernel(target), qualname("repeat"))
    x = randn(1 << 16, device=target)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = rop(x, 4)
        z = y * 1  # ordered after the kernel on `side`, no synchronisation
    torch.cuda.current_stream().wait_stream(side)
    assert torch.cuda.memory_allocated() - before >= y.numel() * 4
    torch.testing.assert_close(z, repeat_reference(x, 4))


@pytest.mark.parametrize("target", [pytest.param("cuda", marks=needs_cuda)])
def test_cuda_graph_capture_and_replay(target, no_tf32):
    k, _ = matmul_kernel(target)  # its zero_once counter must be re-armed at each replay
    op = tilejit.torch.register(k, qualname("mm"))
    rop = tilejit.torch.register(repeat_kernel(target), qualname("repeat"))
    a, b = randn(96, 200, device=target), randn(200, 48, device=target)
    d, x = randn(48, 16, device=target), randn(1000, device=target)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch recommends
        for _ in range(2):
            op(op(a, b), d)
            rop(x, 3)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = op(op(a, b), d)
        y = rop(x, 3)
    for i in range(3):
        a.copy_(randn(96, 200 + i, device=target)[:, :200])
        x.copy_(randn(1000 + i, device=target)[:1000])
        graph.replay()
        # Calls between replays leave the graph's arena and counters alone.
        e = randn(32, 200 + i, device=target)[:, :200].contiguous()
        assert_matmul(op(e, b), e, b)
        torch.testing.assert_close(c, (a @ b) @ d, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(y, repeat_reference(x, 3))
    torch.cuda.synchronize()
    del graph

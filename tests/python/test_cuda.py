"""tilejit on a CUDA device through the Python API, with torch CUDA tensors.

Every test is marked `gpu` and skipped unless torch is installed, torch sees
a CUDA device, and tilejit was built with its CUDA backend and finds a driver
(tilejit itself never imports torch). What is checked:

- outputs are torch CUDA tensors on the inputs' device, made by torch's
  caching allocator (torch.cuda.memory_allocated() grows by their size while
  they live), and out= / workspace= take torch CUDA tensors;
- the default stream is torch's current stream (a kernel that spins, then
  writes, is ordered before a later torch op on the same stream with no
  synchronisation in between), and stream= takes a torch.cuda.Stream or a
  raw handle;
- workspaces: zero device allocations per call in steady state (the pool's
  counters), and the zero / zero_once policies;
- errors: CPU or mixed-device tensors, with the library's exact messages;
- the three examples' CUDA bodies (read from examples/kernels/*.h, so that
  the C++ and Python runs exercise the same text) against torch references:
  split-K matmul (float32), sparse attention forward and flash-decoding
  (bfloat16);
- CUDA graph capture and replay with new inputs;
- calls from two Python threads on two streams (the GIL is released then).
"""

import gc
import threading

import pytest

torch = pytest.importorskip("torch")

import tilejit  # noqa: E402
from tilejit import language as T  # noqa: E402
from support import (example_body, make_kernels, raises_exact,  # noqa: E402
                     tilejit_cuda_unavailable)


def _cuda_ready():
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    why = tilejit_cuda_unavailable()
    return not why, why


CUDA_OK, CUDA_WHY = _cuda_ready()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUDA_OK, reason=CUDA_WHY)]


# Cycles a spinning kernel waits before it writes: about 10 ms at the H200's
# boost clock, longer at lower clocks; a host call returns in microseconds.
SPIN_CYCLES = 20_000_000

SPIN = "if (spin > 0) { const long long t0 = clock64(); while (clock64() - t0 < spin) { } }\n"
INDEX = "const int64_t i = bx * 256 + threadIdx.x;\n"


# The examples' bodies, read from their C++ headers (one source for both).
cuda_body = example_body


def rel_error(out, ref):
    """||out - ref|| / ||ref|| in float64, as examples/cuda_examples.cpp."""
    out, ref = out.double(), ref.double()
    den = ref.norm().item()
    num = (out - ref).norm().item()
    return num / den if den > 0 else num


def pool(device="cuda"):
    return tilejit.pool_stats(device)


# --- kernels ---------------------------------------------------------------

@tilejit.jit(out_idx=[1], target="cuda")
def add_one():
    """Y = X + 1, after spinning `spin` cycles (0: none)."""
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"), spin: T.int64):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda=SPIN + INDEX + "if (i < n) Y(i) = X(i) + 1.0f;\n")

    return main


@tilejit.jit(out_idx=[2], target="cuda")
def add2():
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n], "float32"), Z: T.Tensor([n], "float32"),
             Y: T.Tensor([n], "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda=INDEX + "if (i < n) Y(i) = X(i) + Z(i);\n")

    return main


@tilejit.jit(out_idx=[1], target="cuda")
def scale_bf16():
    m, n = T.symbolic("m"), T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([m, n], "bfloat16"), Y: T.Tensor([m, n], "bfloat16"), a: T.float32):
        with T.Kernel(m, threads=128):
            T.source(cuda="for (int64_t j = threadIdx.x; j < n; j += blockDim.x) "
                          "Y(bx, j) = tilejit::bfloat16(float(X(bx, j)) * a);\n")

    return main


def scratch_body(accumulate):
    """Y = 2 X + 3 through two workspaces. With `accumulate`, W1 is added to
    rather than written, so the result is right only if W1 was zeroed first."""
    op = "+=" if accumulate else "="
    return (INDEX + "if (i < n) {\n"
            f"  W1(i) {op} 2.0f * X(i);\n"
            "  W2(2 * i) = 1; W2(2 * i + 1) = 2;\n"
            "  Y(i) = W1(i) + float(W2(2 * i) + W2(2 * i + 1));\n"
            "}\n")


@tilejit.jit(out_idx=[1], workspace_idx=[2, 3], target="cuda")
def scratch():
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
             W1: T.Tensor([n], "float32"), W2: T.Tensor([2 * n], "int32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda=scratch_body(accumulate=False))

    return main


@tilejit.jit(out_idx=[1], workspace_idx=[2, 3], workspace_init={"W1": "zero"}, target="cuda")
def scratch_zeroed():
    """scratch with W1 accumulated into and zeroed before every call."""
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
             W1: T.Tensor([n], "float32"), W2: T.Tensor([2 * n], "int32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda=scratch_body(accumulate=True))

    return main


def dirty(init):
    """Y = W + X, then W = 7: shows whether W was zeroed before the call."""
    n = T.symbolic("n")

    @T.prim_func
    def dirty(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
              W: T.Tensor([n], "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cuda=INDEX + "if (i < n) { Y(i) = W(i) + X(i); W(i) = 7.0f; }\n")

    return tilejit.compile(dirty, out_idx=[1], workspace_idx=[2], workspace_init={"W": init},
                           target="cuda")


# The examples, with the CUDA bodies of examples/kernels/*.h and the
# signatures and options of their C++ builders (examples/example_kernels.py).
splitk_matmul, sparse_attention_fwd, flash_decoding = make_kernels("cuda")


# --- torch references -------------------------------------------------------

def sparse_attention_reference(q, kv, idx):
    """softmax(q k^T / sqrt(dim)) v over each query's valid indices (-1 and
    out-of-range ones skipped; a query with none gives zeros), in float32."""
    b, s, heads, dim = q.shape
    s_kv = kv.shape[1]
    valid = (idx >= 0) & (idx < s_kv)
    rows = torch.where(valid, idx, torch.zeros_like(idx)).long()
    g = kv.float()[torch.arange(b, device=kv.device).view(b, 1, 1), rows]  # [b, s, topk, dim]
    scores = torch.einsum("bshd,bstd->bsht", q.float(), g) / dim ** 0.5
    scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
    p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)  # all -inf rows: 0
    return torch.einsum("bsht,bstd->bshd", p, g)


def flash_decoding_reference(q, k, v):
    """softmax(q k^T / sqrt(dim)) v per (batch, head), in float32."""
    dim = q.shape[-1]
    scores = torch.einsum("bhd,bthd->bht", q.float(), k.float()) / dim ** 0.5
    return torch.einsum("bht,bthd->bhd", torch.softmax(scores, dim=-1), v.float())


@pytest.fixture
def no_tf32():
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = previous


def in_caching_allocator(ptr):
    """Whether `ptr` lies in a segment of torch's CUDA caching allocator."""
    for seg in torch.cuda.memory_snapshot():
        if seg["address"] <= ptr < seg["address"] + seg["total_size"]:
            return True
    return False


# --- torch tensors in and out ------------------------------------------------

def test_torch_cuda_in_torch_cuda_out():
    k = add_one()
    assert k.target == "cuda"
    x = torch.randn(1000, device="cuda")
    y = k(x, 0)
    assert type(y) is torch.Tensor
    assert y.device == x.device and y.dtype == torch.float32 and y.shape == (1000,)
    assert y.is_contiguous()
    torch.testing.assert_close(y, x + 1)
    y.add_(1)  # an ordinary, writable torch tensor
    torch.testing.assert_close(y, x + 2)


def test_bfloat16_2d_and_a_float_scalar():
    k = scale_bf16()
    x = torch.randn(37, 300, device="cuda").to(torch.bfloat16)
    y = k(x, 0.5)
    assert y.dtype == torch.bfloat16 and y.shape == (37, 300) and y.device == x.device
    torch.testing.assert_close(y, (x.float() * 0.5).to(torch.bfloat16))
    x2 = torch.nn.Parameter(x.clone())  # a torch.Tensor subclass
    torch.testing.assert_close(k(x2, 2.0), (x.float() * 2).to(torch.bfloat16))


def test_outputs_come_from_torchs_caching_allocator():
    k = add_one()
    n = 4096  # 16 KiB: a multiple of the caching allocator's 512-byte rounding
    x = torch.randn(n, device="cuda")
    k(x, 0)  # warm: compile, module, pool
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    y = k(x, 0)
    assert torch.cuda.memory_allocated() - base == n * 4
    assert in_caching_allocator(y.data_ptr())
    storage = y.untyped_storage()
    assert storage.data_ptr() == y.data_ptr() and storage.nbytes() == n * 4
    assert storage.device == x.device
    torch.testing.assert_close(y.view(64, 64).t().contiguous().t(), (x + 1).view(64, 64))
    del storage, y
    assert torch.cuda.memory_allocated() == base
    # The workspaces are tilejit's own (its pool), not torch's: a kernel with
    # workspaces still adds only its output to torch's count.
    k2 = scratch()
    k2(x)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    y = k2(x)
    assert torch.cuda.memory_allocated() - base == n * 4
    del y
    assert torch.cuda.memory_allocated() == base


def test_output_on_the_inputs_device_and_pool_of_that_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    k = scratch()
    x = torch.randn(1000, device="cuda:1")
    before = pool("cuda:1")["leases"]
    y = k(x)
    assert y.device == torch.device("cuda:1")
    torch.testing.assert_close(y, 2 * x + 3)
    assert pool("cuda:1")["leases"] == before + 1


# --- streams -----------------------------------------------------------------

def test_default_stream_is_torchs_current_stream():
    k = add_one()
    x = torch.randn(1 << 16, device="cuda")
    k(x, 0)  # warm
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = k(x, SPIN_CYCLES)
        busy = not s.query()  # the kernel spins on s ...
        default_idle = torch.cuda.default_stream().query()  # ... and not on the default stream
        z = y * 2  # ordered after the kernel by s alone: no synchronisation
    assert busy and default_idle
    s.synchronize()
    torch.testing.assert_close(z, (x + 1) * 2)
    torch.testing.assert_close(y, x + 1)


def test_output_correct_on_a_non_default_stream():
    k = scratch()
    x = torch.randn(5000, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        outs = [k(x) for _ in range(3)]
        w = torch.stack(outs).sum(0)
    s.synchronize()
    torch.testing.assert_close(w, 3 * (2 * x + 3))


@pytest.mark.parametrize("as_handle", [False, True], ids=["torch_stream", "int_handle"])
def test_explicit_stream(as_handle):
    k = add_one()
    x = torch.randn(1 << 16, device="cuda")
    k(x, 0)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    y = k(x, SPIN_CYCLES, stream=s.cuda_stream if as_handle else s)
    assert not s.query()  # launched on s ...
    assert torch.cuda.current_stream().query()  # ... not on the current stream
    with torch.cuda.stream(s):
        z = y * 2
    s.synchronize()
    torch.testing.assert_close(z, (x + 1) * 2)
    # stream=None is the current stream.
    torch.testing.assert_close(k(x, 0, stream=None), x + 1)


def test_bad_stream_argument():
    k = add_one()
    x = torch.randn(8, device="cuda")
    with raises_exact(TypeError, "stream= expects None, an int handle, or an object with "
                                 "__cuda_stream__ or cuda_stream; got an object of type str"):
        k(x, 0, stream="s")


# --- out= and workspace= -----------------------------------------------------

def test_out_and_workspace_with_torch_cuda_tensors():
    k = scratch()
    x = torch.randn(1000, device="cuda")
    out = torch.empty(1000, device="cuda")
    y = k(x, out=out)
    assert y is out
    torch.testing.assert_close(out, 2 * x + 3)
    nbytes = k.workspace_bytes(x)
    assert nbytes == 12288  # W1: 4000 bytes at 0; W2: 8000 bytes at 4096; rounded to 256
    layout = k.workspace_layout(x)
    assert [(w["name"], w["offset"], w["bytes"]) for w in layout] == [("W1", 0, 4000),
                                                                      ("W2", 4096, 8000)]
    arena = torch.zeros(nbytes, dtype=torch.uint8, device="cuda")
    leases = pool()["leases"]
    torch.testing.assert_close(k(x, workspace=arena), 2 * x + 3)
    assert pool()["leases"] == leases  # the caller's arena, not the pool's
    with raises_exact(ValueError, "scratch: out[0] 'Y': expected a tensor on cuda:0, got one on cpu"):
        k(x, out=torch.empty(1000))
    with raises_exact(ValueError, "scratch: workspace=: expected a tensor on cuda:0, got one on cpu"):
        k(x, workspace=torch.zeros(nbytes, dtype=torch.uint8))


def test_empty_workspace_with_torch_cuda_tensors():
    """A torch CUDA arena from torch's caching allocator (512-byte blocks, so
    already 256-aligned), on the inputs' device."""
    k = scratch()
    x = torch.randn(1000, device="cuda")
    allocated = torch.cuda.memory_allocated()
    arena = k.empty_workspace(x)
    assert type(arena) is torch.Tensor and arena.dtype == torch.uint8
    assert arena.device == x.device and arena.numel() == k.workspace_bytes(x) == 12288
    assert arena.data_ptr() % 256 == 0
    assert torch.cuda.memory_allocated() >= allocated + 12288  # torch's own memory
    leases = pool()["leases"]
    torch.testing.assert_close(k(x, workspace=arena), 2 * x + 3)
    assert pool()["leases"] == leases
    assert k.workspace_bytes(shapes=[(1000,)]) == 12288
    sizes = {k.empty_workspace(torch.randn(n, device="cuda")).data_ptr() % 256
             for n in (1, 3, 100, 1001, 4097)}
    assert sizes == {0}


# --- workspaces ----------------------------------------------------------------

def test_no_device_allocation_per_call_in_steady_state():
    k = scratch_zeroed()
    x = torch.randn(10000, device="cuda")
    for _ in range(3):
        k(x)
    torch.cuda.synchronize()
    before = pool()
    calls = 200
    outs = [k(x) for _ in range(calls)]
    after = pool()
    assert after["device_allocs"] - before["device_allocs"] == 0
    assert after["leases"] - before["leases"] == calls
    assert after["hits"] - before["hits"] == calls
    assert after["bytes_in_use"] == before["bytes_in_use"]
    expected = 2 * x + 3
    for y in outs[:: calls // 10]:
        torch.testing.assert_close(y, expected)


def test_workspace_init_zero():
    k = dirty("zero")
    x = torch.randn(3000, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(k(x), x)  # W zeroed before every call


def test_workspace_init_zero_once():
    k = dirty("zero_once")
    n = 3333  # an arena size no other test uses
    x = torch.randn(n, device="cuda")
    torch.cuda.synchronize()
    tilejit.empty_cache()  # no cached block: the first call gets a new one
    torch.testing.assert_close(k(x), x)  # zeroed once, when the arena is first used ...
    for _ in range(2):
        # ... then trusted: the same block comes back on the same stream with
        # what the kernel left there.
        torch.testing.assert_close(k(x), x + 7)


# --- errors ----------------------------------------------------------------------

def test_cpu_and_mixed_device_errors():
    k = add_one()
    x = torch.randn(4, device="cuda")
    # Earlier tests' garbage is freed now, not by a collection in the middle.
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    in_use = pool()["bytes_in_use"]
    with raises_exact(ValueError, "add_one: argument #0 'X': expected a tensor on cuda "
                                  "(target 'cuda'), got one on cpu"):
        k(torch.zeros(4), 0)
    k2 = add2()
    with raises_exact(ValueError, "add2: argument #1 'Z': is on cpu but argument #0 'X' is on "
                                  "cuda:0; all tensors must be on one device"):
        k2(x, torch.zeros(4))
    with raises_exact(ValueError, "add2: argument #0 'X': expected a tensor on cuda "
                                  "(target 'cuda'), got one on cpu"):
        k2(torch.zeros(4), x)
    if torch.cuda.device_count() >= 2:
        with raises_exact(ValueError, "add2: argument #1 'Z': is on cuda:1 but argument #0 'X' "
                                      "is on cuda:0; all tensors must be on one device"):
            k2(x, torch.zeros(4, device="cuda:1"))
    with raises_exact(TypeError, "add_one: argument #0 'X': expected float32, got float64"):
        k(x.double(), 0)
    with raises_exact(ValueError, "add_one: argument #0 'X': expected a contiguous tensor, got "
                                  "strides [2] in elements ([8] in bytes) for shape [4]"):
        k(torch.zeros(8, device="cuda")[::2], 0)
    # A failed call leaves nothing behind, and the next one works.
    gc.collect()
    assert torch.cuda.memory_allocated() == base
    assert pool()["bytes_in_use"] == in_use
    torch.testing.assert_close(k(x, 0), x + 1)


# --- the examples ------------------------------------------------------------------

@pytest.mark.parametrize("m,n,k", [(256, 256, 4096), (100, 37, 999), (1, 1, 1), (1024, 512, 2048)])
def test_splitk_matmul_example(m, n, k, no_tf32):
    op = splitk_matmul(4)
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
    ref = torch.matmul(a.double(), b.double())
    torch_f32 = torch.matmul(a, b)
    assert rel_error(torch_f32, ref) < 1e-5
    for _ in range(2):  # the second call reuses the arena and its re-armed counters
        c = op(a, b)
        assert c.shape == (m, n) and c.dtype == torch.float32
        assert rel_error(c, ref) < 1e-5
        assert rel_error(c, torch_f32) < 1e-5


@pytest.mark.parametrize("b,s,s_kv", [(1, 4, 1000), (2, 33, 4096), (1, 1, 64)])
def test_sparse_attention_example(b, s, s_kv):
    heads, dim, topk = 16, 128, 512
    op = sparse_attention_fwd(heads, dim, topk)
    g = torch.Generator(device="cuda").manual_seed(b * 1000 + s * 10 + s_kv)
    q = torch.randn(b, s, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    kv = torch.randn(b, s_kv, dim, device="cuda", generator=g).to(torch.bfloat16)
    idx = torch.randint(-1, s_kv, (b, s, topk), device="cuda", generator=g, dtype=torch.int32)
    out = op(q, kv, idx)
    assert out.shape == (b, s, heads, dim) and out.dtype == torch.bfloat16
    assert rel_error(out, sparse_attention_reference(q, kv, idx)) < 1e-2


def test_sparse_attention_example_all_masked_and_other_config():
    heads, dim, topk = 8, 64, 128
    op = sparse_attention_fwd(heads, dim, topk)
    q = torch.randn(1, 3, heads, dim, device="cuda").to(torch.bfloat16)
    kv = torch.randn(1, 300, dim, device="cuda").to(torch.bfloat16)
    idx = torch.randint(0, 300, (1, 3, topk), device="cuda", dtype=torch.int32)
    idx[0, 1] = -1  # a query with no valid index: zeros
    idx[0, 2, ::2] = 1000  # out of range: skipped
    out = op(q, kv, idx)
    ref = sparse_attention_reference(q, kv, idx)
    assert torch.count_nonzero(out[0, 1]).item() == 0
    assert rel_error(out, ref) < 1e-2


@pytest.mark.parametrize("b,s_kv", [(1, 1), (2, 1000), (4, 8192), (1, 50000)])
def test_flash_decoding_example(b, s_kv):
    heads, dim, splits = 32, 128, 16
    op = flash_decoding(heads, dim, splits)
    g = torch.Generator(device="cuda").manual_seed(b * 100003 + s_kv)
    q = torch.randn(b, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(b, s_kv, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(b, s_kv, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    ref = flash_decoding_reference(q, k, v)
    for _ in range(2):  # the second call trusts the counters the first re-armed
        out = op(q, k, v)
        assert out.shape == (b, heads, dim) and out.dtype == torch.bfloat16
        assert rel_error(out, ref) < 1e-2


def test_cuda_body_extraction_matches_the_headers():
    body = cuda_body("flash_decoding.h", "kFlashDecodingCudaBody")
    assert body.startswith("\nconstexpr int TILE = 128") and body.rstrip().endswith("}")
    assert "kFlashDecodingCpuBody" not in body and 'R"(' not in body
    with pytest.raises(LookupError):
        cuda_body("flash_decoding.h", "kNoSuchBody")


# --- CUDA graphs -------------------------------------------------------------------

def test_cuda_graph_capture_and_replay():
    k = scratch_zeroed()  # W1 is zeroed by a memset that the graph must replay too
    n = 1 << 14
    static_x = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch recommends
        for _ in range(3):
            k(static_x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = k(static_x)
    assert static_y.device == static_x.device
    for i in range(5):
        fresh = torch.randn(n, device="cuda")
        static_x.copy_(fresh)
        graph.replay()
        torch.testing.assert_close(static_y, 2 * fresh + 3)
    # Other calls between replays do not disturb the graph's arena.
    y = k(torch.ones(n, device="cuda"))
    fresh = torch.randn(n, device="cuda")
    static_x.copy_(fresh)
    graph.replay()
    torch.testing.assert_close(static_y, 2 * fresh + 3)
    torch.testing.assert_close(y, torch.full((n,), 5.0, device="cuda"))
    torch.cuda.synchronize()
    del graph
    torch.testing.assert_close(k(static_x), 2 * static_x + 3)


def test_cuda_graph_of_an_example_with_zero_once():
    op = flash_decoding(32, 128, 16)
    q = torch.randn(2, 32, 128, device="cuda").to(torch.bfloat16)
    k = torch.randn(2, 3000, 32, 128, device="cuda").to(torch.bfloat16)
    v = torch.randn(2, 3000, 32, 128, device="cuda").to(torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        op(q, k, v)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = op(q, k, v)
    for _ in range(3):  # every replay finds its counters re-armed by the last
        q.copy_(torch.randn_like(q, dtype=torch.float32).to(torch.bfloat16))
        graph.replay()
        assert rel_error(out, flash_decoding_reference(q, k, v)) < 1e-2


# --- threads -------------------------------------------------------------------------

def test_calls_from_two_threads_on_two_streams():
    k = scratch_zeroed()
    k(torch.randn(4, device="cuda"))  # compiled before the threads start
    errors = []

    def work(seed):
        try:
            s = torch.cuda.Stream()
            g = torch.Generator(device="cuda").manual_seed(seed)
            with torch.cuda.stream(s):
                x = torch.randn(20000, device="cuda", generator=g)
                ys = [k(x) for _ in range(100)]
                total = torch.stack(ys).sum(0)
            s.synchronize()
            torch.testing.assert_close(total, 100 * (2 * x + 3), rtol=1e-4, atol=1e-3)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

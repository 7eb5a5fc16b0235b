"""The tile programs of the CPU suites on a CUDA device, from the same source.

Every program here is imported from where the CPU tests take it (the
factories of examples/tile/*.py, and those defined in test_tile_kernels.py
and test_tile_frontend.py), retargeted with ``factory.retarget("cuda")``,
run on torch CUDA tensors and compared against float64 references (torch's
on the device, or the examples' numpy ``reference`` functions on host
copies), at shapes that do and do not divide the tiles:

- GEMM: TileLang's README program in bfloat16, float16 and float32 over
  symbolic M, N, K, and as the README runs it (static shapes, C given); the
  symbolic-shape GEMM of test_tile_kernels.py; TileLang's autotuning GEMM
  (examples/tile/gemm.py) in the benchmark's configurations; T.use_swizzle
  in both orders on a grid that does not divide the panel (each tile
  computed by exactly one block);
- split-K: T.atomic_add into a zeroed C; the partials in a workspace_idx
  parameter; in a T.alloc_global workspace; in a T.alloc_global workspace
  with a zero_once per-tile counter (two calls: the counter re-arms);
- RMSNorm and row softmax (static and symbolic rows);
- flash attention forward, causal and not (bfloat16; float16 as TileLang
  writes it);
- flash-decoding, its partials in compiler-made workspaces (GQA in
  bfloat16; MHA with splits that walk no block; float16);
- the seed's sparse attention with its four declared workspaces (bfloat16
  at the seed's heads 16, dim 128, topk 512; float32 with top-k that does
  not divide the block), against the phase-1 CUDA text version too, and
  with an arena full of garbage;
- the chunked gated delta rule (no outputs, three declared workspaces);
- a T.Pipelined copy of the rows an index tensor names, through a value
  the loop computes (test_tile_pipelined.py), against the CPU kernel;
- two kernels with compiler-made workspaces launched on two torch.cuda
  streams, interleaved many times with no synchronisation between them,
  each result checked: the workspace leases of concurrent calls never
  overlap.

Every test is marked `gpu` and skipped unless torch imports and sees a CUDA
device and tilejit's cuda target is available. Each program compiles once
per module where its shapes are symbolic; the file is sized to run in well
under two minutes on one H200.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilejit  # noqa: E402
import tilejit as tilelang  # noqa: E402
from tilejit import language as T  # noqa: E402
from support import make_kernels, tilejit_cuda_unavailable  # noqa: E402
from test_tile_frontend import readme_matmul  # noqa: E402
import test_tile_pipelined as pipelined  # noqa: E402
from test_tile_kernels import (rms_norm, softmax_rows, softmax_symbolic_rows,  # noqa: E402
                               splitk_gemm, splitk_gemm_counted, splitk_gemm_global,
                               splitk_gemm_workspace, swizzled_gemm, symbolic_gemm)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
import flash_attention as fa  # noqa: E402
import flash_decoding as fd  # noqa: E402
import gated_delta_rule as gd  # noqa: E402
import gemm as autotune_gemm  # noqa: E402
import sparse_attention as sa  # noqa: E402


def _cuda_ready():
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    why = tilejit_cuda_unavailable()
    return not why, why


CUDA_OK, CUDA_WHY = _cuda_ready()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUDA_OK, reason=CUDA_WHY)]

DEV = "cuda"
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
# Tolerances against a float64 reference: the output's rounding and, for
# attention, the probabilities cast to the input dtype before the second
# product. float32 allows for a TF32 tensor-core GEMM.
TOL = {BF16: 2e-2, F16: 1e-2, F32: 1e-2}
TORCH_DTYPE = {"bfloat16": BF16, "float16": F16, "float32": F32}

# TileLang's README GEMM, decorated as the CPU tests compile it.
readme_gemm = tilelang.jit(readme_matmul, out_idx=[-1], target="cpu")
readme_gemm_c = tilelang.jit(readme_matmul, target="cpu")  # C given, as the README calls it

# The CUDA factories, one per program (retarget checks nothing until a
# factory compiles, so this module imports anywhere).
cuda = {name: factory.retarget("cuda") for name, factory in {
    "readme_gemm": readme_gemm, "readme_gemm_c": readme_gemm_c, "symbolic_gemm": symbolic_gemm,
    "splitk_gemm": splitk_gemm, "splitk_gemm_workspace": splitk_gemm_workspace,
    "splitk_gemm_global": splitk_gemm_global, "splitk_gemm_counted": splitk_gemm_counted,
    "rms_norm": rms_norm, "softmax_rows": softmax_rows,
    "softmax_symbolic_rows": softmax_symbolic_rows, "flashattn": fa.flashattn,
    "flashdecode": fd.flashdecode, "sparse_attention_fwd": sa.sparse_attention_fwd,
    "chunk_gated_delta_rule_fwd": gd.chunk_gated_delta_rule_fwd,
    "swizzled_gemm": swizzled_gemm, "autotune_gemm": autotune_gemm.matmul}.items()}


def rand(*shape, dtype=F32, seed=0, scale=1.0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    x = torch.rand(shape, generator=g, device=DEV, dtype=F32) * 2 - 1
    return (x * scale).to(dtype)


def randn(*shape, dtype=F32, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return torch.randn(shape, generator=g, device=DEV, dtype=F32).to(dtype)


def check(out, ref, tol, what=""):
    """out (any dtype, any device) against a float64 reference: |out - ref|
    <= tol + tol |ref| everywhere."""
    out = torch.as_tensor(out).to("cpu", torch.float64)
    ref = torch.as_tensor(ref).to("cpu", torch.float64)
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} vs {tuple(ref.shape)}"
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol, msg=lambda m: f"{what}: {m}")


def host(*tensors):
    """float32 numpy copies (the exact values of bfloat16 / float16 inputs),
    for the examples' numpy references."""
    return [t.detach().float().cpu().numpy() for t in tensors]


def cuda_tensor(array, dtype):
    return torch.from_numpy(np.ascontiguousarray(array)).to(DEV).to(dtype)


# --- A pipelined copy of the rows an index tensor names ----------------------

gather_rows_cuda = tilejit.jit(pipelined.gather_rows, out_idx=[2], target="cuda")


@pytest.mark.parametrize("num_stages", [2, 3, 4])
@pytest.mark.parametrize("form", pipelined.FORMS)
def test_a_pipelined_copy_reads_the_rows_of_its_own_iteration(form, num_stages):
    a, idx = pipelined.inputs(blocks=37, m=5, seed=num_stages)
    want = pipelined.gather_rows_cpu(form, num_stages)(a, idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tilejit.PerformanceWarning)  # "conditional"'s
        kernel = gather_rows_cuda(form, num_stages)
    out = kernel(cuda_tensor(a, F32), cuda_tensor(idx, torch.int32))
    check(out, want, 1e-4, f"{form}, {num_stages} stages")


# --- GEMM --------------------------------------------------------------------

GEMM_SHAPES = [(128, 128, 32), (256, 384, 96), (200, 130, 100), (129, 257, 33), (1, 1, 1),
               (520, 260, 1000)]


@pytest.fixture(scope="module", params=["bfloat16", "float16", "float32"])
def symbolic_readme_gemm(request):
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    kernel = cuda["readme_gemm"](M, N, K, 128, 128, 32, request.param)
    return TORCH_DTYPE[request.param], kernel


@pytest.mark.parametrize("m, n, k", GEMM_SHAPES)
def test_readme_gemm_over_symbolic_shapes(symbolic_readme_gemm, m, n, k):
    dtype, kernel = symbolic_readme_gemm
    a, b = rand(m, k, dtype=dtype, seed=m), rand(k, n, dtype=dtype, seed=n)
    c = kernel(a, b)
    assert c.device.type == "cuda" and c.dtype == dtype and c.shape == (m, n)
    check(c, torch.relu(a.double() @ b.double()), TOL[dtype], f"{dtype} M={m} N={n} K={k}")


def test_readme_gemm_as_the_readme_runs_it():
    kernel = cuda["readme_gemm_c"](1024, 512, 256, 128, 128, 32)  # float16
    a, b = rand(1024, 256, dtype=F16, seed=1), rand(256, 512, dtype=F16, seed=2)
    c = torch.empty(1024, 512, dtype=F16, device=DEV)
    assert kernel(a, b, c) is None
    check(c, torch.relu(a.double() @ b.double()), TOL[F16])
    assert readme_gemm_c.cache_size() == 0  # the CPU factory compiled nothing
    assert cuda["readme_gemm_c"].target == "cuda"


def test_symbolic_gemm_at_random_shapes():
    kernel = cuda["symbolic_gemm"]()
    shapes = [(32, 32, 16), (50, 70, 30), (100, 33, 17), (513, 257, 129)]
    rng = np.random.default_rng(2026)
    shapes += [tuple(int(v) for v in rng.integers(1, 300, size=3)) for _ in range(4)]
    for m, n, k in shapes:
        a, b = rand(m, k, seed=m), rand(k, n, seed=k)
        check(kernel(a, b), a.double() @ b.double(), TOL[F32], f"M={m} N={n} K={k}")


# Grid 7 x 5 with panel 3: the last panel is partial in either order. C starts
# as NaN and Count as 0, so a tile no block took, or two blocks took, shows.
@pytest.mark.parametrize("order", ["row", "col"])
def test_swizzled_gemm_where_the_grid_does_not_divide_the_panel(order):
    m, n, k = 5 * 32 - 3, 7 * 32 - 5, 70
    kernel = cuda["swizzled_gemm"](m, n, k, 3, order)
    assert f"rasterize_{'rows' if order == 'row' else 'columns'}(" in kernel.get_kernel_source()
    a, b = rand(m, k, dtype=BF16, seed=1), rand(k, n, dtype=BF16, seed=2)
    c = torch.full((m, n), float("nan"), device=DEV)
    count = torch.zeros((5, 7), dtype=torch.int32, device=DEV)
    assert kernel(a, b, c, count) is None
    check(c, a.double() @ b.double(), TOL[BF16], order)
    assert torch.equal(count.cpu(), torch.ones((5, 7), dtype=torch.int32))


# bench/bench_tile_cuda.py's configurations (block_M, block_N, block_K,
# stages, threads, rasterised) at a shape none divides.
@pytest.mark.parametrize("config", [(128, 128, 64, 3, 128, False), (128, 128, 64, 3, 128, True),
                                    (128, 256, 64, 3, 256, True), (256, 128, 64, 3, 256, True),
                                    (128, 256, 32, 4, 256, True), (128, 128, 32, 4, 128, True),
                                    (128, 128, 64, 2, 128, True), (128, 128, 64, 3, 256, True)],
                         ids=str)
def test_autotune_example_gemm(config):
    m, n, k = 1000, 1200, 520
    kernel = cuda["autotune_gemm"](m, n, k, *config, dtype="bfloat16")
    a, b = rand(m, k, dtype=BF16, seed=3), rand(n, k, dtype=BF16, seed=4)
    c = kernel(a, b)
    assert c.dtype == BF16 and c.shape == (m, n)
    check(c, a.double() @ b.double().T, TOL[BF16], str(config))


# --- split-K -----------------------------------------------------------------

# This program's slices are K // split_k wide in whole K tiles and its atomic
# adds are not masked at C's edges: its shapes divide the tiles (the other
# split-K forms cover those that do not).
@pytest.mark.parametrize("m, n, k, split_k", [(64, 64, 128, 4), (128, 96, 192, 3)])
def test_splitk_gemm_with_atomic_add(m, n, k, split_k):
    kernel = cuda["splitk_gemm"](m, n, k, split_k)
    a, b = rand(m, k, seed=1), rand(k, n, seed=2)
    for _ in range(2):
        c = torch.zeros(m, n, device=DEV)
        assert kernel(a, b, c) is None
        check(c, a.double() @ b.double(), TOL[F32])


@pytest.mark.parametrize("factory", ["splitk_gemm_workspace", "splitk_gemm_global"],
                         ids=["workspace_idx", "alloc_global"])
def test_splitk_gemm_with_the_partials_in_a_workspace(factory):
    kernel = cuda[factory](3)
    assert kernel.workspace_names == ["Partial"] and kernel.input_names == ["A", "B"]
    for m, n, k in [(70, 50, 100), (64, 64, 96), (5, 3, 7), (300, 200, 1000)]:
        a, b = rand(m, k, seed=m), rand(k, n, seed=n)
        check(kernel(a, b), a.double() @ b.double(), TOL[F32], f"M={m} N={n} K={k}")
        assert kernel.workspace_layout(a, b) == [
            {"name": "Partial", "offset": 0, "bytes": 3 * m * n * 4, "shape": (3, m, n),
             "dtype": "float32", "init": "empty"}]


@pytest.mark.parametrize("m, n, k, split_k", [(64, 64, 128, 4), (50, 70, 45, 3), (33, 17, 100, 2)])
def test_splitk_gemm_with_compiler_made_workspaces_and_a_tile_counter(m, n, k, split_k):
    kernel = cuda["splitk_gemm_counted"](m, n, k, split_k)
    assert kernel.workspace_names == ["Partial", "Count"]
    # Twice with new inputs: the second call finds the counters re-armed.
    for seed in range(2):
        a, b = rand(m, k, seed=seed), rand(k, n, seed=seed + 10)
        check(kernel(a, b), a.double() @ b.double(), TOL[F32], f"call {seed}")


# --- RMSNorm, softmax --------------------------------------------------------

@pytest.mark.parametrize("m, n", [(6, 32), (7, 100), (64, 1024)])
def test_rms_norm(m, n):
    x = rand(m, n, seed=n)
    xd = x.double()
    ref = xd / torch.sqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-6)
    check(cuda["rms_norm"](m, n)(x), ref, 1e-4)


def softmax_reference(x):
    return torch.softmax(x.double(), dim=1)


@pytest.mark.parametrize("m, n", [(10, 24), (13, 256)])
def test_softmax_rows(m, n):
    x = rand(m, n, seed=m, scale=4)
    check(cuda["softmax_rows"](m, n)(x), softmax_reference(x), 1e-5)


def test_softmax_over_symbolic_rows():
    kernel = cuda["softmax_symbolic_rows"](37)
    for m in (1, 4, 5, 49, 1000):
        x = rand(m, 37, seed=m, scale=4)
        check(kernel(x), softmax_reference(x), 1e-5, f"M={m}")


# --- flash attention ---------------------------------------------------------

HEADS, DIM = 4, 64


@pytest.fixture(scope="module", params=[False, True], ids=["full", "causal"])
def flash(request):
    causal = request.param
    kernel = cuda["flashattn"](T.symbolic("batch"), HEADS, T.symbolic("seq_len"),
                                           DIM, causal, dtype="bfloat16")
    return causal, kernel


@pytest.mark.parametrize("batch, seq_len", [(1, 64), (2, 100), (1, 1), (3, 129), (1, 1024)])
def test_flash_attention_bfloat16(flash, batch, seq_len):
    causal, kernel = flash
    q, k, v = (randn(batch, seq_len, HEADS, DIM, dtype=BF16, seed=seq_len + i) for i in range(3))
    out = kernel(q, k, v)
    assert out.dtype == BF16 and out.shape == q.shape and out.device.type == "cuda"
    check(out, fa.reference(*host(q, k, v), causal), TOL[BF16], f"b={batch} seq={seq_len}")


def test_flash_attention_float16_as_tilelang_writes_it():
    kernel = cuda["flashattn"](1, 2, 200, 128, True, block_M=32, block_N=64)
    q, k, v = (randn(1, 200, 2, 128, dtype=F16, seed=7 + i) for i in range(3))
    out = kernel(q, k, v)
    assert out.dtype == F16
    check(out, fa.reference(*host(q, k, v), True), TOL[F16])


# --- flash-decoding ----------------------------------------------------------

D_HEADS, D_KV_HEADS, D_DIM, D_SPLITS = 8, 2, 128, 4


@pytest.fixture(scope="module")
def decoding():
    """GQA in bfloat16; one kernel serves every batch and sequence length."""
    return cuda["flashdecode"](T.symbolic("batch"), D_HEADS, D_KV_HEADS,
                                           T.symbolic("seqlen_kv"), D_DIM, num_split=D_SPLITS,
                                           block_N=32, dtype="bfloat16")


def decoding_inputs(batch, seqlen_kv, heads=D_HEADS, kv_heads=D_KV_HEADS, dim=D_DIM, dtype=BF16,
                    seed=0):
    q = randn(batch, heads, dim, dtype=dtype, seed=seed)
    k = randn(batch, seqlen_kv, kv_heads, dim, dtype=dtype, seed=seed + 1)
    v = randn(batch, seqlen_kv, kv_heads, dim, dtype=dtype, seed=seed + 2)
    return q, k, v


@pytest.mark.parametrize("batch, seqlen_kv", [(1, 1), (2, 100), (1, 64), (3, 129), (2, 4096)])
def test_flash_decoding_bfloat16(decoding, batch, seqlen_kv):
    q, k, v = decoding_inputs(batch, seqlen_kv, seed=seqlen_kv)
    out = decoding(q, k, v)
    assert out.dtype == BF16 and out.shape == (batch, D_HEADS, D_DIM)
    check(out, fd.reference(*host(q, k, v)), TOL[BF16], f"b={batch} s_kv={seqlen_kv}")
    # The partials are compiler-made workspaces: the caller never passes them.
    assert decoding.workspace_names == ["glse", "Output_partial"]
    layout = decoding.workspace_layout(q, k, v)
    assert [(w["name"], w["shape"]) for w in layout] == [
        ("glse", (batch, D_HEADS, D_SPLITS)), ("Output_partial", (batch, D_HEADS, D_SPLITS, D_DIM))]


@pytest.mark.parametrize("num_split, seqlen_kv", [(7, 40), (16, 3)])
def test_flash_decoding_with_splits_that_walk_no_block(num_split, seqlen_kv):
    kernel = cuda["flashdecode"](2, 2, 2, seqlen_kv, 32, num_split=num_split,
                                             block_N=16, dtype="float32")
    q, k, v = decoding_inputs(2, seqlen_kv, 2, 2, 32, F32, seed=num_split)
    check(kernel(q, k, v), fd.reference(*host(q, k, v)), TOL[F32])


@pytest.mark.parametrize("threads", [64, 128])
def test_flash_decoding_of_one_query_head_per_kv_head(threads):
    """Multi-head attention: one-row accumulators on the tensor cores as the
    first row of an mma tile (Note [Short accumulators])."""
    kernel = cuda["flashdecode"](2, 4, 4, 1000, 128, num_split=3, block_N=64, threads=threads,
                                 dtype="bfloat16")
    q, k, v = decoding_inputs(2, 1000, 4, 4, 128, BF16, seed=threads)
    check(kernel(q, k, v), fd.reference(*host(q, k, v)), TOL[BF16])


def test_flash_decoding_float16_as_tilelang_writes_it():
    kernel = cuda["flashdecode"](1, 8, 1, 300, 64, num_split=4)
    q, k, v = decoding_inputs(1, 300, 8, 1, 64, F16, seed=3)
    out = kernel(q, k, v)
    assert out.dtype == F16
    check(out, fd.reference(*host(q, k, v)), TOL[F16])


# --- the seed's sparse attention ---------------------------------------------

@pytest.fixture(scope="module")
def sparse_seed():
    """The seed's shape (heads 16, dim 128, topk 512) in bfloat16."""
    return cuda["sparse_attention_fwd"](16, 128, 512, dtype="bfloat16")


def sparse_inputs(seed, b, s, s_kv, heads, dim, topk, dtype):
    q, kv, indices = sa.make_inputs(np.random.default_rng(seed), b, s, s_kv, heads, dim, topk,
                                    np.float32)
    return cuda_tensor(q, dtype), cuda_tensor(kv, dtype), cuda_tensor(indices, torch.int32)


@pytest.mark.parametrize("b, s, s_kv", [(2, 3, 200), (1, 5, 64), (1, 1, 1), (2, 16, 8192)])
def test_sparse_attention_in_the_seed_signature(sparse_seed, b, s, s_kv):
    op = sparse_seed
    assert op.input_names == ["Q", "KV", "Indices"] and op.output_names == ["Output"]
    assert op.workspace_names == ["ws_kv", "ws_s", "ws_p", "ws_o"]
    q, kv, indices = sparse_inputs(s_kv, b, s, s_kv, 16, 128, 512, BF16)
    out = op(q, kv, indices)
    assert out.shape == (b, s, 16, 128) and out.dtype == BF16 and out.device.type == "cuda"
    check(out, sa.reference(*host(q, kv), indices.cpu().numpy()), TOL[BF16],
          f"b={b} s={s} s_kv={s_kv}")
    assert torch.all(out[0, 0] == 0)  # query (0, 0) attends to nothing
    layout = op.workspace_layout(q, kv, indices)
    assert [w["shape"] for w in layout] == [(b * s, 64, 128), (b * s, 16, 64), (b * s, 16, 64),
                                            (b * s, 16, 128)]
    assert [w["bytes"] for w in layout] == [b * s * 64 * 128 * 2, b * s * 16 * 64 * 4,
                                            b * s * 16 * 64 * 2, b * s * 16 * 128 * 4]


def test_sparse_attention_matches_the_phase1_cuda_text_operator(sparse_seed):
    _, text_fwd, _ = make_kernels("cuda")
    text = text_fwd(16, 128, 512)
    assert text.input_names == sparse_seed.input_names
    assert text.workspace_names == sparse_seed.workspace_names
    q, kv, indices = sparse_inputs(5, 2, 8, 1000, 16, 128, 512, BF16)
    assert text.workspace_layout(q, kv, indices) == sparse_seed.workspace_layout(q, kv, indices)
    check(sparse_seed(q, kv, indices), text(q, kv, indices).double(), TOL[BF16])


def test_sparse_attention_does_not_depend_on_what_the_workspace_held(sparse_seed):
    q, kv, indices = sparse_inputs(9, 2, 3, 300, 16, 128, 512, BF16)
    expected = sparse_seed(q, kv, indices)
    for garbage in (0xFF, 0x7F, 0x00):  # NaN, huge values, zeros in every float
        arena = sparse_seed.empty_workspace(q, kv, indices)
        assert arena.device.type == "cuda" and arena.dtype == torch.uint8
        arena.fill_(garbage)
        assert torch.equal(sparse_seed(q, kv, indices, workspace=arena), expected)


@pytest.mark.parametrize("topk, block", [(100, 16), (8, 64)])
def test_sparse_attention_topk_that_does_not_divide_the_block(topk, block):
    op = cuda["sparse_attention_fwd"](4, 32, topk, block=block, dtype="float32")
    for b, s, s_kv in [(2, 3, 40), (1, 2, 5)]:
        q, kv, indices = sparse_inputs(topk, b, s, s_kv, 4, 32, topk, F32)
        check(op(q, kv, indices), sa.reference(*host(q, kv), indices.cpu().numpy()), TOL[F32])


# --- the chunked gated delta rule --------------------------------------------

# float32 throughout; the forward substitution over a chunk may amplify a
# TF32 GEMM's rounding.
DELTA_TOL = 2e-2


def run_delta_rule(kernel, inputs, heads, dv, dk):
    q, k, v, g, beta = (cuda_tensor(x, F32) for x in inputs)
    b, seq = q.shape[:2]
    o = torch.full((b, seq, heads, dv), float("nan"), device=DEV)  # every element is written
    s = torch.full((b, heads, dk, dv), float("nan"), device=DEV)
    assert kernel(q, k, v, g, beta, o, s) is None
    return o, s


@pytest.mark.parametrize("b, seq", [(1, 16), (2, 37), (1, 1), (3, 64), (1, 500)])
def test_chunked_gated_delta_rule(b, seq):
    heads, dk, dv = 2, 32, 16
    kernel = cuda["chunk_gated_delta_rule_fwd"](heads, dk, dv, chunk_size=16)
    assert kernel.workspace_names == ["ws_w", "ws_u", "ws_kd"] and kernel.output_names == []
    inputs = gd.make_inputs(np.random.default_rng(seq), b, seq, heads, dk, dv)
    o, s = run_delta_rule(kernel, inputs, heads, dv, dk)
    want_o, want_s = gd.reference(*inputs)
    check(o, want_o, DELTA_TOL, "o")
    check(s, want_s, DELTA_TOL, "state")


def test_the_delta_rule_chunk_of_its_authors():
    kernel = cuda["chunk_gated_delta_rule_fwd"](1, 64, 64)
    inputs = gd.make_inputs(np.random.default_rng(3), 1, 300, 1, 64, 64)
    o, s = run_delta_rule(kernel, inputs, 1, 64, 64)
    want_o, want_s = gd.reference(*inputs)
    check(o, want_o, DELTA_TOL, "o")
    check(s, want_s, DELTA_TOL, "state")


# --- two streams at once -----------------------------------------------------

def _stream_case(name):
    """(kernel, inputs for stream A, inputs for stream B, reference)."""
    if name == "flash_decoding":
        kernel = cuda["flashdecode"](T.symbolic("batch"), D_HEADS, D_KV_HEADS,
                                                 T.symbolic("seqlen_kv"), D_DIM,
                                                 num_split=16, block_N=32, dtype="bfloat16")
        a, b = decoding_inputs(4, 8192, seed=1), decoding_inputs(4, 8192, seed=2)

        def reference(q, k, v):
            return torch.as_tensor(fd.reference(*host(q, k, v)))
        return kernel, a, b, reference, TOL[BF16]
    if name == "splitk_alloc_global":
        kernel = cuda["splitk_gemm_global"](4)
        a = (rand(512, 2048, seed=1), rand(2048, 256, seed=2))
        b = (rand(512, 2048, seed=3), rand(2048, 256, seed=4))
    else:
        kernel = cuda["splitk_gemm_counted"](256, 256, 1024, 4)
        a = (rand(256, 1024, seed=1), rand(1024, 256, seed=2))
        b = (rand(256, 1024, seed=3), rand(1024, 256, seed=4))

    def reference(x, y):
        return x.double() @ y.double()
    return kernel, a, b, reference, TOL[F32]


@pytest.mark.parametrize("name", ["flash_decoding", "splitk_alloc_global", "splitk_counter"])
def test_two_streams_interleaved_never_share_a_workspace(name):
    kernel, inputs_a, inputs_b, reference, tol = _stream_case(name)
    want_a, want_b = reference(*inputs_a), reference(*inputs_b)
    # The two input sets differ enough that a result computed from the
    # other stream's partials cannot pass.
    assert not torch.allclose(want_a.double().cpu(), want_b.double().cpu(), rtol=tol, atol=tol)
    stream_a, stream_b = torch.cuda.Stream(), torch.cuda.Stream()
    current = torch.cuda.current_stream()
    stream_a.wait_stream(current)
    stream_b.wait_stream(current)
    outs_a, outs_b = [], []
    for _ in range(100):  # no synchronisation until the end
        with torch.cuda.stream(stream_a):
            outs_a.append(kernel(*inputs_a))
        with torch.cuda.stream(stream_b):
            outs_b.append(kernel(*inputs_b))
    torch.cuda.synchronize()
    for i, (out_a, out_b) in enumerate(zip(outs_a, outs_b)):
        check(out_a, want_a, tol, f"stream A, call {i}")
        check(out_b, want_b, tol, f"stream B, call {i}")

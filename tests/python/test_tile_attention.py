"""The attention programs of examples/tile/ end to end on the CPU, against
float64 numpy: flash attention forward (causal and not; sequence lengths
that do not divide the tiles; the online softmax at a 2048 sequence) and
the seed's sparse attention in the tile language (its exact signature, the
phase-1 operator's results, skip and sentinel indices, workspaces whose
previous contents do not matter). Each program compiles once per module."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import HAVE_ML_DTYPES, ml_dtypes, pool_in_use

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
import flash_attention as fa  # noqa: E402
import sparse_attention as sa  # noqa: E402

HEADS, DIM = 2, 64


@pytest.fixture(scope="module", params=[False, True], ids=["full", "causal"])
def flash(request):
    """One kernel per causal flag serves every batch and sequence length."""
    causal = request.param
    kernel = fa.flashattn(T.symbolic("batch"), HEADS, T.symbolic("seq_len"), DIM, causal,
                          dtype="float32")
    return causal, kernel


def qkv(rng, batch, seq_len, dtype=np.float32):
    return [rng.standard_normal((batch, seq_len, HEADS, DIM)).astype(np.float32).astype(dtype)
            for _ in range(3)]


@pytest.mark.parametrize("batch, seq_len", [(1, 64), (2, 100), (1, 1), (3, 129), (1, 2048)])
def test_flash_attention_against_float64(flash, batch, seq_len):
    causal, kernel = flash
    q, k, v = qkv(np.random.default_rng(seq_len), batch, seq_len)
    out = kernel(q, k, v)
    assert out.shape == q.shape and out.dtype == np.float32
    # float32 throughout: the online softmax over up to 32 K/V blocks stays
    # at float32 rounding of the float64 result.
    np.testing.assert_allclose(out, fa.reference(q, k, v, causal), rtol=2e-5, atol=2e-5)


def test_flash_attention_float16_as_tilelang_writes_it():
    # TileLang's defaults: float16 tensors, float32 accumulators, static shapes.
    kernel = fa.flashattn(1, 1, 200, 32, True, block_M=32, block_N=64)
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 200, 1, 32)).astype(np.float16) for _ in range(3))
    out = kernel(q, k, v)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), fa.reference(q, k, v, True),
                               rtol=5e-3, atol=5e-3)
    # The program is TileLang's idiom: the macros inline, the running max folds in.
    script = kernel.prim_func.script()
    assert "reduce_max(acc_s[0:32, 0:64], scores_max[0:32], dim=1, clear=false)" in script
    assert "copy(acc_s[0:32, 0:64], acc_s_cast[0:32, 0:64])" in script


# --- sparse attention --------------------------------------------------------

DTYPES = [pytest.param("float32", np.float32, 1e-4, id="float32")]
if HAVE_ML_DTYPES:
    DTYPES.append(pytest.param("bfloat16", ml_dtypes.bfloat16, 3e-2, id="bfloat16"))


@pytest.fixture(scope="module")
def seed_ops():
    """The seed's shape (heads 16, dim 128, topk 512) per dtype, compiled once."""
    return {}


def seed_op(cache, name):
    if name not in cache:
        cache[name] = sa.sparse_attention_fwd(16, 128, 512, dtype=name)
    return cache[name]


@pytest.mark.parametrize("name, np_dtype, tol", DTYPES)
def test_sparse_attention_in_the_seed_signature(seed_ops, name, np_dtype, tol):
    op = seed_op(seed_ops, name)
    assert op.input_names == ["Q", "KV", "Indices"]
    assert op.output_names == ["Output"]
    assert op.workspace_names == ["ws_kv", "ws_s", "ws_p", "ws_o"]
    assert [repr(x) for x in op.prim_func.grid] == ["b * s"]
    rng = np.random.default_rng(0)
    for b, s, s_kv in [(2, 3, 200), (1, 5, 64), (1, 1, 1)]:
        q, kv, indices = sa.make_inputs(rng, b, s, s_kv, 16, 128, 512, np_dtype)
        out = op(q, kv, indices)
        assert out.shape == (b, s, 16, 128) and out.dtype == np_dtype
        np.testing.assert_allclose(out.astype(np.float64), sa.reference(q, kv, indices),
                                   rtol=tol, atol=tol)
        assert np.all(out[0, 0].astype(np.float64) == 0)  # nothing to attend to
        itemsize = np.dtype(np_dtype).itemsize
        layout = op.workspace_layout(q, kv, indices)
        assert [w["shape"] for w in layout] == [(b * s, 64, 128), (b * s, 16, 64),
                                                (b * s, 16, 64), (b * s, 16, 128)]
        assert [w["bytes"] for w in layout] == [b * s * 64 * 128 * itemsize, b * s * 16 * 64 * 4,
                                                b * s * 16 * 64 * itemsize, b * s * 16 * 128 * 4]
    assert pool_in_use() == 0


def test_sparse_attention_matches_the_phase1_text_operator(seed_ops):
    from test_sparse_attention import sparse_attention_fwd as text_fwd
    tile, text = seed_op(seed_ops, "float32"), text_fwd(16, 128, 512, dtype="float32")
    assert text.input_names == tile.input_names and text.workspace_names == tile.workspace_names
    q, kv, indices = sa.make_inputs(np.random.default_rng(5), 2, 2, 300, 16, 128, 512,
                                    np.float32)
    assert text.workspace_layout(q, kv, indices) == tile.workspace_layout(q, kv, indices)
    np.testing.assert_allclose(tile(q, kv, indices), text(q, kv, indices), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("topk, block", [(100, 16), (8, 64), (48, 16)])
def test_sparse_attention_topk_that_does_not_divide_the_block(topk, block):
    op = sa.sparse_attention_fwd(4, 32, topk, block=block, dtype="float32")
    rng = np.random.default_rng(topk)
    for b, s, s_kv in [(2, 3, 40), (1, 2, 5)]:
        q, kv, indices = sa.make_inputs(rng, b, s, s_kv, 4, 32, topk, np.float32)
        np.testing.assert_allclose(op(q, kv, indices), sa.reference(q, kv, indices),
                                   rtol=1e-5, atol=1e-5)


def test_sparse_attention_does_not_depend_on_what_the_workspace_held():
    op = sa.sparse_attention_fwd(4, 32, 64, block=16, dtype="float32")
    q, kv, indices = sa.make_inputs(np.random.default_rng(9), 2, 3, 50, 4, 32, 64, np.float32)
    expected = op(q, kv, indices)
    np.testing.assert_allclose(expected, sa.reference(q, kv, indices), rtol=1e-5, atol=1e-5)
    for garbage in (0xFF, 0x7F, 0x00):  # NaN, huge values, zeros in every float
        arena = op.empty_workspace(q, kv, indices)
        arena[...] = garbage
        np.testing.assert_array_equal(op(q, kv, indices, workspace=arena), expected)
    # And through the pool, after another call left its own values in the lease.
    other = sa.make_inputs(np.random.default_rng(10), 2, 3, 50, 4, 32, 64, np.float32)
    op(*other)
    np.testing.assert_array_equal(op(q, kv, indices), expected)

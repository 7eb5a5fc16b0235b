"""Flash-decoding (examples/tile/flash_decoding.py) end to end on the CPU
against float64 numpy: a split kernel and a combine kernel in one program,
their partials in compiler-planned workspaces that the caller never sees
(listed once: one lease for both kernels), GQA and MHA, sequence lengths
that do not divide the block (1, 100, 129) and a long one (4096), more
splits than blocks, and an arena whose previous contents do not matter.
Each program compiles once per module."""

import sys
from pathlib import Path

import numpy as np
import pytest

from tilejit import language as T
from support import pool_in_use

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
import flash_decoding as fd  # noqa: E402

HEADS, KV_HEADS, DIM, SPLITS, BLOCK = 4, 2, 64, 4, 32


@pytest.fixture(scope="module")
def gqa():
    """One kernel serves every batch and sequence length."""
    return fd.flashdecode(T.symbolic("batch"), HEADS, KV_HEADS, T.symbolic("seqlen_kv"), DIM,
                          num_split=SPLITS, block_N=BLOCK, dtype="float32")


def qkv(rng, batch, seqlen_kv, heads=HEADS, kv_heads=KV_HEADS, dim=DIM, dtype=np.float32):
    q = rng.standard_normal((batch, heads, dim))
    k, v = (rng.standard_normal((batch, seqlen_kv, kv_heads, dim)) for _ in range(2))
    return [x.astype(np.float32).astype(dtype) for x in (q, k, v)]


def aligned(nbytes):
    return (nbytes + 255) // 256 * 256


@pytest.mark.parametrize("batch, seqlen_kv", [(1, 1), (2, 100), (1, 64), (3, 129), (2, 4096)])
def test_flash_decoding_against_float64(gqa, batch, seqlen_kv):
    q, k, v = qkv(np.random.default_rng(seqlen_kv), batch, seqlen_kv)
    out = gqa(q, k, v)
    assert out.shape == (batch, HEADS, DIM) and out.dtype == np.float32
    # Up to 32 blocks per split, then 4 splits combined: float32 rounding.
    np.testing.assert_allclose(out, fd.reference(q, k, v), rtol=2e-5, atol=2e-5)
    assert pool_in_use() == 0


def test_the_partials_are_workspaces_of_one_lease(gqa):
    assert gqa.input_names == ["Q", "K", "V"]
    assert gqa.output_names == ["Output"]
    # The partials are planned workspaces: the caller never passes them.
    assert gqa.workspace_names == ["glse", "Output_partial"]
    q, k, v = qkv(np.random.default_rng(1), 3, 129)
    layout = gqa.workspace_layout(q, k, v)
    assert [(w["name"], w["shape"], w["dtype"], w["init"]) for w in layout] == [
        ("glse", (3, HEADS, SPLITS), "float32", "empty"),
        ("Output_partial", (3, HEADS, SPLITS, DIM), "float32", "empty"),
    ]
    lse_bytes, partial_bytes = 3 * HEADS * SPLITS * 4, 3 * HEADS * SPLITS * DIM * 4
    assert [w["bytes"] for w in layout] == [lse_bytes, partial_bytes]
    assert [w["offset"] for w in layout] == [0, aligned(lse_bytes)]
    # Both kernels use the same arena: its size counts each partial once.
    assert gqa.workspace_bytes(q, k, v) == aligned(lse_bytes) + aligned(partial_bytes)
    assert gqa.workspace_bytes(shapes=[(3, HEADS, DIM), (3, 7, KV_HEADS, DIM),
                                       (3, 7, KV_HEADS, DIM)]) == \
        aligned(lse_bytes) + aligned(partial_bytes)  # independent of seqlen_kv
    script = gqa.prim_func.script()
    assert script.count("kernel(") == 2
    assert [repr(x) for x in gqa.prim_func.grid] == ["batch", "2", "4"]  # the first launch


def test_flash_decoding_does_not_depend_on_what_the_arena_held(gqa):
    q, k, v = qkv(np.random.default_rng(2), 2, 77)
    expected = gqa(q, k, v)
    for garbage in (0xFF, 0x7F, 0x00):  # NaN, huge values, zeros
        arena = gqa.empty_workspace(q, k, v)
        arena[...] = garbage
        np.testing.assert_array_equal(gqa(q, k, v, workspace=arena), expected)


@pytest.mark.parametrize("num_split, seqlen_kv", [(1, 200), (7, 40), (16, 3)])
def test_mha_and_splits_that_walk_no_block(num_split, seqlen_kv):
    # 40 keys are 3 blocks of 16 over 7 splits: splits 3..6 walk none; their
    # lse is -inf and their weight 0.
    kernel = fd.flashdecode(2, 2, 2, seqlen_kv, 32, num_split=num_split, block_N=16,
                            dtype="float32")
    q, k, v = qkv(np.random.default_rng(num_split), 2, seqlen_kv, 2, 2, 32)
    np.testing.assert_allclose(kernel(q, k, v), fd.reference(q, k, v), rtol=2e-5, atol=2e-5)


def test_flash_decoding_float16_as_tilelang_writes_it():
    # TileLang's defaults: float16 tensors, float32 accumulators, static shapes.
    kernel = fd.flashdecode(1, 8, 1, 300, 64, num_split=4)
    q, k, v = qkv(np.random.default_rng(3), 1, 300, 8, 1, 64, np.float16)
    out = kernel(q, k, v)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), fd.reference(q, k, v), rtol=5e-3,
                               atol=5e-3)

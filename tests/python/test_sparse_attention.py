"""The seed operator end to end on the CPU: DeepSeek-style top-k sparse
attention declared exactly as TileLang-Ascend's authors wrote it (out_idx=[3],
four workspaces, symbols b, s, s_kv, grid b * s), called with numpy arrays
and checked against a numpy reference. bfloat16 as in the seed when
ml_dtypes gives numpy a bfloat16; the float32 variant always."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import HAVE_ML_DTYPES, example_body, ml_dtypes, pool_in_use

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
import sparse_attention as tile_example  # noqa: E402  (one reference for both versions)

reference = tile_example.reference

# One block per query position (bx = bi * s + si) walks the top-k rows in
# steps of `block` with an online softmax; the workspaces hold one step's
# gathered rows, scores and probabilities, and the running output.
CPU_BODY = example_body("sparse_attention.h", "kSparseAttentionCpuBody")
PROLOGUE = "constexpr int64_t heads = {heads}, dim = {dim}, topk = {topk}, block = {block};\n"


@tilejit.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7], target="cpu")
def sparse_attention_fwd(heads, dim, topk, block=64, dtype="bfloat16"):
    b, s, s_kv = T.symbolic("b"), T.symbolic("s"), T.symbolic("s_kv")
    block_num = b * s

    @T.prim_func
    def main(Q: T.Tensor([b, s, heads, dim], dtype),
             KV: T.Tensor([b, s_kv, dim], dtype),
             Indices: T.Tensor([b, s, topk], "int32"),
             Output: T.Tensor([b, s, heads, dim], dtype),
             ws_kv: T.Tensor([block_num, block, dim], dtype),
             ws_s: T.Tensor([block_num, heads, block], "float32"),
             ws_p: T.Tensor([block_num, heads, block], dtype),
             ws_o: T.Tensor([block_num, heads, dim], "float32")):
        with T.Kernel(block_num, threads=128) as bx:
            T.source(cpu=PROLOGUE.format(heads=heads, dim=dim, topk=topk, block=block) + CPU_BODY)

    return main


def make_inputs(rng, b, s, s_kv, heads, dim, topk, dtype):
    """The tile example's inputs without its one-past-the-end indices; query
    (0, 0) attends to nothing."""
    q, kv, indices = tile_example.make_inputs(rng, b, s, s_kv, heads, dim, topk, dtype,
                                              sentinels=False)
    indices[0, 0] = -1
    return q, kv, indices


DTYPES = [pytest.param("float32", np.float32, 1e-4, id="float32")]
if HAVE_ML_DTYPES:
    DTYPES.append(pytest.param("bfloat16", ml_dtypes.bfloat16, 3e-2, id="bfloat16"))


@pytest.mark.parametrize("name, np_dtype, tol", DTYPES)
def test_seed_operator_against_numpy(name, np_dtype, tol):
    heads, dim, topk = 16, 128, 512
    op = sparse_attention_fwd(heads, dim, topk, dtype=name)
    assert op.input_names == ["Q", "KV", "Indices"]
    assert op.output_names == ["Output"]
    assert op.workspace_names == ["ws_kv", "ws_s", "ws_p", "ws_o"]
    rng = np.random.default_rng(0)
    for b, s, s_kv in [(2, 3, 200), (1, 5, 64)]:
        q, kv, indices = make_inputs(rng, b, s, s_kv, heads, dim, topk, np_dtype)
        out = op(q, kv, indices)  # workspaces are invisible
        assert out.shape == (b, s, heads, dim) and out.dtype == np_dtype
        np.testing.assert_allclose(out.astype(np.float64), reference(q, kv, indices),
                                   rtol=tol, atol=tol)
        assert np.all(out[0, 0].astype(np.float64) == 0)
        # The arena: four workspaces, each 256-byte aligned in one block.
        itemsize = np.dtype(np_dtype).itemsize
        sizes = [b * s * 64 * dim * itemsize, b * s * heads * 64 * 4,
                 b * s * heads * 64 * itemsize, b * s * heads * dim * 4]
        layout = op.workspace_layout(q, kv, indices)
        assert [w["bytes"] for w in layout] == sizes
        assert [w["shape"] for w in layout] == [(b * s, 64, dim), (b * s, heads, 64),
                                                (b * s, heads, 64), (b * s, heads, dim)]
        assert all(w["offset"] % 256 == 0 for w in layout)
        assert op.workspace_bytes(q, kv, indices) == \
            (layout[-1]["offset"] + sizes[-1] + 255) // 256 * 256
    assert pool_in_use() == 0


def test_steady_state_calls_allocate_no_workspace():
    op = sparse_attention_fwd(4, 32, 64, block=16, dtype="float32")
    q, kv, indices = make_inputs(np.random.default_rng(1), 2, 2, 32, 4, 32, 64, np.float32)
    expected = op(q, kv, indices)
    before = tilejit.pool_stats()
    for _ in range(5):
        np.testing.assert_array_equal(op(q, kv, indices), expected)
    after = tilejit.pool_stats()
    assert after["leases"] - before["leases"] == 5
    assert after["hits"] - before["hits"] == 5
    assert after["device_allocs"] == before["device_allocs"]
    assert after["bytes_in_use"] == 0
    assert "tilejit_entry" in op.get_source() and op.source == op.get_source()
    assert op.target == "cpu" and op.name == "sparse_attention_fwd"
    assert [repr(x) for x in op.prim_func.grid] == ["b * s"]

"""TileLang-Ascend's sparse flash attention (tile-ai/tilelang-ascend, branch
ascendc_pto, examples/sparse_flash_attention/example_sparse_flash_attn.py),
run on the CPU emulation with only the import changed and checked against
numpy. The program's one copy is examples/ascend/sparse_flash_attention.py,
which scripts/demo.sh also runs: these tests run its kernel at small shapes,
and its demo step (main) as the demo runs it, with --quick."""

import sys
from pathlib import Path

import numpy as np

from test_tile_kernels import needs_tile_cpu

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "ascend"))
import sparse_flash_attention as sfa  # noqa: E402


@needs_tile_cpu
def test_sparse_flash_attention():
    heads, dim, tail_dim, topk, block_I, seq_len = 16, 64, 16, 64, 32, 4
    func = sfa.sparse_attention_fwd(heads, dim, tail_dim, topk, 1, block_I=block_I,
                                    seq_len=seq_len, seq_len_kv=128)
    q, kv, indices = sfa.inputs(seq_len, 128, heads, dim, tail_dim, topk, seed=20)
    out = np.asarray(func(q, kv, indices)).astype(np.float32)
    ref = sfa.reference(q, kv, indices, dim, (1.0 / (dim + tail_dim)) ** 0.5)
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2)
    # The five workspaces of the signature, as declared (block_num is
    # seq_len here), leased by the call: the caller passed the inputs alone.
    layout = func.workspace_layout(q, kv, indices)
    assert [(w["name"], w["shape"], w["dtype"]) for w in layout] == [
        ("workspace_1", (seq_len, block_I, dim), "float16"),
        ("workspace_2", (seq_len, block_I, tail_dim), "float16"),
        ("workspace_3", (seq_len, heads, block_I), "float32"),
        ("workspace_4", (seq_len, heads, block_I), "float16"),
        ("workspace_5", (seq_len, heads, dim), "float32"),
    ]
    assert func.workspace_bytes(q, kv, indices) == sum(w["bytes"] for w in layout)


@needs_tile_cpu
def test_two_batches_and_replicated_heads():
    # 128 heads: each query's heads split over two blocks of 64 (REPLICATE_H),
    # and a second batch, as the demo's sizes have them.
    heads, dim, tail_dim, topk = 128, 64, 16, 64
    func = sfa.sparse_attention_fwd(heads, dim, tail_dim, topk, 1, block_I=32, batch=2,
                                    seq_len=2, seq_len_kv=96)
    q, kv, indices = sfa.inputs(2, 96, heads, dim, tail_dim, topk, seed=21, batch=2)
    out = np.asarray(func(q, kv, indices)).astype(np.float32)
    ref = sfa.reference(q, kv, indices, dim, (1.0 / (dim + tail_dim)) ** 0.5)
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2)


@needs_tile_cpu
def test_demo_step_quick(capsys):
    assert sfa.main(["--quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sparse_flash_attention (TileLang-Ascend, emulated on the CPU)")
    assert "none of the five workspaces" in lines[1]
    arena = next(i for i, line in enumerate(lines) if line.startswith("workspace arena"))
    assert lines[arena].endswith(", 5 slices")
    assert [line.split()[0] for line in lines[arena + 1:arena + 6]] == [
        f"workspace_{i}" for i in range(1, 6)]
    assert lines[-1] == "OK: matches its numpy reference"


@needs_tile_cpu
def test_demo_step_fails_on_a_mismatch(capsys, monkeypatch):
    reference = sfa.reference
    monkeypatch.setattr(sfa, "reference", lambda *args: reference(*args) + 0.1)
    assert sfa.main(["--quick"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "FAIL: max |error| over 2e-2"

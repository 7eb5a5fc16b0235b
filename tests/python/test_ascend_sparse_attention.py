"""TileLang-Ascend's sparse flash attention (tile-ai/tilelang-ascend, branch
ascendc_pto, examples/sparse_flash_attention/example_sparse_flash_attn.py),
run on the CPU emulation with only the import changed and checked against
numpy. The program's one copy is examples/ascend/sparse_flash_attention.py,
which scripts/demo.sh also runs: these tests run its kernel, as the example
writes it, with small heads, dim and topk, and its demo step (main) as the
demo runs it, with --quick."""

import hashlib
import sys
from pathlib import Path

import numpy as np

from test_tile_kernels import needs_tile_cpu

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "ascend"))
import sparse_flash_attention as sfa  # noqa: E402


def test_the_kernel_is_the_examples_text():
    # From "pass_configs = {" to the factory's "return main", byte for byte
    # the example's at tile-ai/tilelang-ascend 95acbd7f (234 lines); only
    # the imports above it and the driver below it are tilejit's.
    text = Path(sfa.__file__).read_text()
    kernel = text[text.index("pass_configs = {"):text.index("    return main\n") + 16]
    assert len(kernel.splitlines()) == 234
    assert hashlib.sha256(kernel.encode()).hexdigest() == \
        "4dd127c0ad155e90f05f5094f4ecca64677bfe1ccd92d6778512f5118fa42c80"


def test_the_seeds_own_sizes_fit_the_memories():
    # dim 512: L0C holds acc_s_l0c (16 KiB) and acc_o_l0c (128 KiB), over
    # its 128 KiB together, but never live at once, so TileLang-Ascend's
    # planning (TL_ASCEND_MEMORY_PLANNING, on in the example) puts both at
    # offset 0 (ascend_memory.py, Note [Ascend memory planning]). Traced
    # here; the demo runs it.
    func = sfa.sparse_attention_fwd(heads=128, dim=512, tail_dim=64, topk=2048, kv_stride=1)
    assert func is not None


@needs_tile_cpu
def test_sparse_flash_attention():
    heads, dim, tail_dim, topk, block_I = 16, 64, 16, 64, 32
    seq_len, seq_len_kv = sfa.SEQ_LEN, sfa.SEQ_LEN_KV
    func = sfa.sparse_attention_fwd(heads, dim, tail_dim, topk, 1, block_I=block_I)
    q, kv, indices = sfa.inputs(seq_len, seq_len_kv, heads, dim, tail_dim, topk, seed=20)
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
def test_replicated_heads():
    # 128 heads: each query's heads split over two blocks of 64 (REPLICATE_H),
    # as at the seed's own sizes.
    heads, dim, tail_dim, topk = 128, 64, 16, 64
    func = sfa.sparse_attention_fwd(heads, dim, tail_dim, topk, 1, block_I=32)
    q, kv, indices = sfa.inputs(sfa.SEQ_LEN, sfa.SEQ_LEN_KV, heads, dim, tail_dim, topk, seed=21)
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

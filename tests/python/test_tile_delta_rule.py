"""The chunked gated delta rule (examples/tile/gated_delta_rule.py) end to
end on the CPU against the recurrence in float64, token by token: a kernel
with workspace_idx and no out_idx writes the caller's O and final state and
returns None, at sequence lengths that are and are not multiples of the
chunk, with workspaces whose previous contents do not matter. The kernel
compiles once per module."""

import sys
from pathlib import Path

import numpy as np
import pytest

from support import pool_in_use

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "tile"))
import gated_delta_rule as gd  # noqa: E402

HEADS, DK, DV, CHUNK = 2, 32, 16, 16


@pytest.fixture(scope="module")
def kernel():
    return gd.chunk_gated_delta_rule_fwd(HEADS, DK, DV, chunk_size=CHUNK)


def run(kernel, inputs, **options):
    q, k, v, g, beta = inputs
    b, seq = q.shape[:2]
    o = np.full((b, seq, HEADS, DV), np.nan, np.float32)      # every element is written
    s = np.full((b, HEADS, DK, DV), np.nan, np.float32)
    assert kernel(q, k, v, g, beta, o, s, **options) is None  # the caller's tensors hold it
    return o, s


@pytest.mark.parametrize("b, seq", [(1, 16), (2, 37), (1, 1), (3, 64), (1, 500)])
def test_chunked_gated_delta_rule_against_the_recurrence(kernel, b, seq):
    inputs = gd.make_inputs(np.random.default_rng(seq), b, seq, HEADS, DK, DV)
    o, s = run(kernel, inputs)
    want_o, want_s = gd.reference(*inputs)
    np.testing.assert_allclose(o, want_o, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, want_s, rtol=1e-5, atol=1e-5)
    assert pool_in_use() == 0


def test_no_outputs_and_the_workspaces(kernel):
    assert kernel.input_names == ["Q", "K", "V", "G", "Beta", "O", "S"]
    assert kernel.output_names == []
    assert kernel.workspace_names == ["ws_w", "ws_u", "ws_kd"]
    inputs = gd.make_inputs(np.random.default_rng(1), 3, 20, HEADS, DK, DV)
    o, s = np.zeros((3, 20, HEADS, DV), np.float32), np.zeros((3, HEADS, DK, DV), np.float32)
    layout = kernel.workspace_layout(*inputs, o, s)
    assert [(w["name"], w["shape"]) for w in layout] == [
        ("ws_w", (3, HEADS, CHUNK, DK)), ("ws_u", (3, HEADS, CHUNK, DV)),
        ("ws_kd", (3, HEADS, CHUNK, DK))]
    assert kernel.workspace_bytes(*inputs, o, s) == 3 * HEADS * CHUNK * (DK + DV + DK) * 4


def test_the_result_does_not_depend_on_what_the_workspaces_held(kernel):
    inputs = gd.make_inputs(np.random.default_rng(2), 2, 45, HEADS, DK, DV)
    expected = run(kernel, inputs)
    written = np.zeros((2, 45, HEADS, DV), np.float32), np.zeros((2, HEADS, DK, DV), np.float32)
    for garbage in (0xFF, 0x7F, 0x00):  # NaN, huge values, zeros
        arena = kernel.empty_workspace(*inputs, *written)
        arena[...] = garbage
        for got, want in zip(run(kernel, inputs, workspace=arena), expected):
            np.testing.assert_array_equal(got, want)


def test_the_chunk_of_its_authors():
    # Chunks of 64 with dk = dv = 64: 5 chunks, the last of 44 tokens.
    kernel = gd.chunk_gated_delta_rule_fwd(1, 64, 64)
    inputs = gd.make_inputs(np.random.default_rng(3), 1, 300, 1, 64, 64)
    o, s = np.zeros((1, 300, 1, 64), np.float32), np.zeros((1, 1, 64, 64), np.float32)
    assert kernel(*inputs, o, s) is None
    want_o, want_s = gd.reference(*inputs)
    np.testing.assert_allclose(o, want_o, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, want_s, rtol=1e-5, atol=1e-5)

"""torch tensors in, torch tensors out (CPU torch). Skipped where torch is
not installed; tilejit itself never imports torch."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilejit  # noqa: E402
from tilejit import language as T  # noqa: E402
from support import add_one_kernel, pool_in_use, raises_exact  # noqa: E402


def test_torch_in_torch_out():
    k = add_one_kernel()
    x = torch.arange(5, dtype=torch.float32)
    y = k(x)
    assert type(y) is torch.Tensor and y.dtype == torch.float32 and y.device.type == "cpu"
    assert y.is_contiguous() and y.shape == (5,)
    assert torch.equal(y, x + 1)
    y[0] = 100  # an ordinary, writable torch tensor
    assert y[0].item() == 100


def test_inputs_are_not_copied():
    n = T.symbolic("n")

    @T.prim_func
    def bump(X: T.Tensor([n], "int64")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) X(i) += 1;")

    k = tilejit.compile(bump, target="cpu")
    x = torch.zeros(4, dtype=torch.int64)
    view = x[1:]  # a contiguous view with an offset
    assert k(view) is None
    assert x.tolist() == [0, 1, 1, 1]


def test_several_outputs_and_out_passthrough():
    n = T.symbolic("n")

    @T.prim_func
    def split(X: T.Tensor([n], "float32"), Lo: T.Tensor([n], "float32"),
              Hi: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { Lo(i) = X(i) - 1; Hi(i) = X(i) + 1; }")

    k = tilejit.compile(split, out_idx=[2, 1], target="cpu")
    x = torch.ones(3)
    hi, lo = k(x)
    assert type(hi) is torch.Tensor and hi.tolist() == [2, 2, 2] and lo.tolist() == [0, 0, 0]
    out_hi = torch.empty(3)
    hi2, lo2 = k(x, out=[out_hi, None])
    assert hi2 is out_hi and type(lo2) is torch.Tensor and lo2.tolist() == [0, 0, 0]


def test_torch_errors_name_the_argument():
    k = add_one_kernel()
    with raises_exact(TypeError, "add_one: argument #0 'X': expected float32, got float64"):
        k(torch.zeros(4, dtype=torch.float64))
    with raises_exact(ValueError, "add_one: argument #0 'X': expected a contiguous tensor, got "
                                  "strides [2] in elements ([8] in bytes) for shape [4]"):
        k(torch.zeros(8)[::2])
    with raises_exact(ValueError, "add_one: argument #0 'X': expected 1 dimensions [n], got 2 "
                                  "[2, 2]"):
        k(torch.zeros(2, 2))
    assert pool_in_use() == 0


def test_bfloat16_and_parameters():
    n = T.symbolic("n")

    @T.prim_func
    def scale(X: T.Tensor([n], "bfloat16"), Y: T.Tensor([n], "bfloat16"), a: T.float32):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = float(X(i)) * a;")

    k = tilejit.compile(scale, out_idx=[1], target="cpu")
    x = torch.nn.Parameter(torch.tensor([1.0, 2.0, -3.0], dtype=torch.bfloat16))
    y = k(x, 0.5)
    assert y.dtype == torch.bfloat16 and y.tolist() == [0.5, 1.0, -1.5]
    with raises_exact(TypeError, "scale: argument #0 'X': expected bfloat16, got float16"):
        k(torch.zeros(2, dtype=torch.float16), 1.0)


def test_the_first_tensor_decides_the_framework():
    n = T.symbolic("n")

    @T.prim_func
    def add(A: T.Tensor([n], "float32"), B: T.Tensor([n], "float32"),
            C: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) C(i) = A(i) + B(i);")

    k = tilejit.compile(add, out_idx=[2], target="cpu")
    a_np, b_t = np.ones(2, np.float32), torch.ones(2)
    assert isinstance(k(a_np, b_t), np.ndarray)
    assert type(k(b_t, a_np)) is torch.Tensor


def test_exchange_table_and_the_dlpack_fallback():
    """torch >= 2.10 publishes a DLPack exchange table on torch.Tensor; a
    type without it goes through __dlpack__ and torch.empty instead, with
    the same results."""
    k = add_one_kernel()

    class NoExchange(torch.Tensor):
        __dlpack_c_exchange_api__ = None  # hides torch's table for this type

    x = torch.arange(3, dtype=torch.float32).as_subclass(NoExchange)
    y = k(x)
    assert isinstance(y, torch.Tensor) and y.tolist() == [1, 2, 3]
    z = k(torch.arange(3, dtype=torch.float32))
    assert z.tolist() == [1, 2, 3]


def scratch_kernel():
    """Y = 2 X through a workspace of n float32 (CPU)."""
    n = T.symbolic("n")

    @T.prim_func
    def scratch(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
                W: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { W(i) = 2 * X(i); Y(i) = W(i); }")

    return tilejit.compile(scratch, out_idx=[1], workspace_idx=[2], target="cpu")


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange_table", "dlpack"])
def test_empty_workspace_is_a_torch_arena(exchange):
    """torch's CPU allocator aligns to 64 bytes only (c10's gAlignment): an
    arena that comes unaligned is made again as a 256-aligned view into a
    torch tensor 255 bytes larger. Asked many times over, whatever
    addresses the allocator hands out."""
    k = scratch_kernel()

    class NoExchange(torch.Tensor):
        __dlpack_c_exchange_api__ = None

    x = torch.arange(1000, dtype=torch.float32)
    if not exchange:
        x = x.as_subclass(NoExchange)
    nbytes = k.workspace_bytes(x)
    assert nbytes == 4096
    keep = []  # alive, so that the allocator hands out other addresses
    for _ in range(20):
        arena = k.empty_workspace(x)
        assert isinstance(arena, torch.Tensor) and arena.dtype == torch.uint8
        assert arena.device.type == "cpu" and arena.numel() == nbytes
        assert arena.data_ptr() % 256 == 0 and arena.is_contiguous()
        keep.append(arena)
    leases = tilejit.pool_stats()["leases"]
    torch.testing.assert_close(k(x, workspace=keep[-1]), 2 * x)
    assert tilejit.pool_stats()["leases"] == leases
    assert pool_in_use() == 0

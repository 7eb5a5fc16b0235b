"""Reductions of 3-D fragments and of slices of them (Note [N-D reductions]
in src/backend/common/lower_tile_ops.cpp): T.reduce_sum / max / min /
abssum / absmax over each dimension, into a destination without the
dimension or with it kept as 1 (TileLang's two output shapes), with
clear=False, a negative dim, and per-row slices of a 3-D fragment in a
loop. Checked against numpy on the CPU target and, where a GPU is, on CUDA;
the CUDA source is compiled (NVRTC) and its lowering report read wherever
tilejit's cuda target is available (a GPU, or the null driver of
bench/null_driver first on LD_LIBRARY_PATH)."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")

SHAPE = (4, 8, 16)
NUMPY = {
    "sum": lambda x, axis: x.sum(axis=axis),
    "max": lambda x, axis: x.max(axis=axis),
    "min": lambda x, axis: x.min(axis=axis),
    "abssum": lambda x, axis: np.abs(x).sum(axis=axis),
    "absmax": lambda x, axis: np.abs(x).max(axis=axis),
}
FOLD = {"sum": np.add, "abssum": np.add, "max": np.maximum, "absmax": np.maximum,
        "min": np.minimum}


def reduce3d(kind, dim, keep=False, clear=True, shape=SHAPE, threads=128):
    """Y = X reduced along `dim` through fragments (Y's own values folded in
    with clear=False)."""
    axis = dim % len(shape)
    out = tuple(1 if d == axis else e for d, e in enumerate(shape) if keep or d != axis)

    @T.prim_func
    def main(X: T.Tensor(shape, "float32"), Y: T.Tensor(out, "float32")):
        with T.Kernel(1, threads=threads) as bx:
            x_frag = T.alloc_fragment(shape, "float32")
            y_frag = T.alloc_fragment(out, "float32")
            T.copy(X, x_frag)
            T.copy(Y, y_frag)
            T.reduce(x_frag, y_frag, kind, dim=dim, clear=clear)
            T.copy(y_frag, Y)
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("kind", list(NUMPY))
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_each_dimension_of_a_3d_fragment(target, kind, dim):
    rng = np.random.default_rng(abs(dim) * 7 + len(kind))
    x = rng.standard_normal(SHAPE).astype(np.float32)
    ref = NUMPY[kind](x, dim)
    for keep in (False, True):
        for clear in (True, False):
            y0 = rng.standard_normal(ref.shape).astype(np.float32)
            y = to_target(target, (np.expand_dims(y0, dim) if keep else y0).copy())
            tilejit.compile(reduce3d(kind, dim, keep, clear), target=target)(to_target(target, x), y)
            want = ref if clear else FOLD[kind](ref, y0)
            np.testing.assert_allclose(as_numpy(y).reshape(ref.shape), want, rtol=1e-5,
                                       atol=1e-5, err_msg=f"keep={keep} clear={clear}")


def head_maxima(heads=3, rows=8, cols=16):
    """Per head h, the row maxima (dim 2) and the column sums (dim 1) of the
    slice x_frag[h, :, :], in a T.serial loop, as attention kernels with a
    head dimension in their fragments write them."""
    @T.prim_func
    def main(X: T.Tensor((heads, rows, cols), "float32"),
             M: T.Tensor((heads, rows), "float32"), S: T.Tensor((heads, cols), "float32")):
        with T.Kernel(1, threads=64) as bx:
            x_frag = T.alloc_fragment((heads, rows, cols), "float32")
            m_frag = T.alloc_fragment((heads, rows), "float32")
            s_frag = T.alloc_fragment((heads, cols), "float32")
            T.copy(X, x_frag)
            for h in T.serial(heads):
                T.reduce_max(x_frag[h, :, :], m_frag[h, :], dim=2)
                T.reduce_sum(x_frag[h, :, :], s_frag[h, :], dim=1)
            T.copy(m_frag, M)
            T.copy(s_frag, S)
    return main


@needs_tile_cpu
@on_targets
def test_slices_of_a_3d_fragment_in_a_loop(target):
    x = np.random.default_rng(5).standard_normal((3, 8, 16)).astype(np.float32)
    m, s = tilejit.compile(head_maxima(), out_idx=[1, 2], target=target)(to_target(target, x))
    np.testing.assert_array_equal(as_numpy(m), x.max(axis=2))
    np.testing.assert_allclose(as_numpy(s), x.sum(axis=1), rtol=1e-5, atol=1e-5)


def middle_window(shape=(6, 10, 12)):
    """A 3-D window x_frag[1:5, 2:9, 3:11] reduced along its middle dimension
    into the corner of a larger 2-D fragment."""
    @T.prim_func
    def main(X: T.Tensor(shape, "float32"), Y: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x_frag = T.alloc_fragment(shape, "float32")
            y_frag = T.alloc_fragment((5, 8), "float32")
            T.copy(X, x_frag)
            T.reduce_min(x_frag[1:5, 2:9, 3:11], y_frag[0:4, :], dim=1)
            T.copy(y_frag[0:4, :], Y)
    return main


@needs_tile_cpu
@on_targets
def test_a_window_of_a_3d_fragment(target):
    x = np.random.default_rng(6).standard_normal((6, 10, 12)).astype(np.float32)
    y = tilejit.compile(middle_window(), out_idx=[1], target=target)(to_target(target, x))
    np.testing.assert_array_equal(as_numpy(y), x[1:5, 2:9, 3:11].min(axis=1))


@needs_cuda_target
def test_cuda_keeps_3d_fragments_in_shared_memory():
    k = tilejit.compile(reduce3d("sum", 1), target="cuda")
    report = k.lowering_report()
    frags = {e["line"]: e["placement"] for e in report
             if e.get("kind") == "buffer" and e.get("scope") == "fragment"}
    assert set(frags.values()) == {"shared"}, report
    (op,) = [e for e in report if e.get("op") == "T.reduce_sum"]
    assert op["path"] == "shared", op
    src = k.get_kernel_source()
    assert "tilejit::cuda::reduce<tilejit::cuda::ReduceKind::kSum, 8, 16, 0, 16" in src, src
    for prog in (head_maxima(), middle_window(), reduce3d("absmax", 2, keep=True, clear=False)):
        assert "tilejit::cuda::reduce<" in tilejit.compile(prog, target="cuda").get_kernel_source()


@needs_tile_cpu
def test_strided_results_are_an_error():
    @T.prim_func
    def main(X: T.Tensor((2, 4, 8), "float32"), Y: T.Tensor((2, 4), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x_frag = T.alloc_fragment((2, 4, 8), "float32")
            y_frag = T.alloc_fragment((2, 4, 3), "float32")
            T.copy(X, x_frag)
            T.reduce_sum(x_frag, y_frag[:, :, 0], dim=2)
            T.copy(y_frag[:, :, 0], Y)

    with pytest.raises(ValueError) as info:
        tilejit.compile(main, target="cpu")
    assert str(info.value).endswith(
        ": T.reduce_sum: destination y_frag[0:2, 0:4, 0:1] does not hold the results of each row "
        "(4 of them) as consecutive elements of a tile (the source x_frag[0:2, 0:4, 0:8] "
        "reduced over dim 2)"), str(info.value)
    assert str(info.value).startswith(__file__ + ":"), str(info.value)

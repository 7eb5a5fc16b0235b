"""Warp shuffles: ``T.shfl_sync``, ``T.shfl_up``, ``T.shfl_down`` and
``T.shfl_xor`` (Note [Warp shuffles] in tilejit/transform/hoist_shuffles.h),
on both targets."""

from __future__ import annotations

from typing import Any

from . import dtypes
from .ops import _describe
from .spans import error, user_span
from .values import Value, current_tracer, to_handle

_FULL_WARP_MASK = 0xFFFFFFFF


def _shuffle(name: str, value: Any, b: Any, width: Any, mask: Any, b_name: str) -> Value:
    op = f"T.{name}"
    span = user_span()
    tr = current_tracer(op)
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 32 or \
            width & (width - 1):
        raise error(ValueError, f"{op}: width must be a power of two from 1 to 32, got "
                                f"{_describe(width)}", span)
    if isinstance(mask, bool) or (isinstance(mask, int) and not 0 <= mask <= _FULL_WARP_MASK):
        raise error(ValueError, f"{op}: mask must be a 32-bit lane mask, got {mask!r}", span)
    if isinstance(b, bool) or isinstance(b, float):
        raise error(TypeError, f"{op}: {b_name} must be an int or an integer expression, got "
                               f"{_describe(b)}", span)
    tb = tr.tile(op, span)
    v = to_handle(tr, value, None, "value")
    lane = to_handle(tr, b, "int32", b_name)
    if not dtypes.is_int(tb.dtype(lane)):
        raise error(TypeError, f"{op}: {b_name} must be an integer, got a {tb.dtype(lane)} "
                               f"expression", span)
    m = to_handle(tr, mask, "int64", "mask")
    if not dtypes.is_int(tb.dtype(m)):
        raise error(TypeError, f"{op}: mask must be an integer, got a {tb.dtype(m)} expression",
                    span)
    return Value(tb.call(name, [v, lane, tr.b.const(width, "int32"), m]), reads=True)


def shfl_sync(value: Any, srcLane: Any, width: int = 32,  # noqa: N803 (TileLang's name)
              mask: Any = _FULL_WARP_MASK) -> Value:
    """The value of lane `srcLane` of the thread's segment of `width` lanes
    (CUDA's __shfl_sync); every lane of `mask` runs it together."""
    return _shuffle("shfl_sync", value, srcLane, width, mask, "srcLane")


def shfl_up(value: Any, delta: Any, width: int = 32, mask: Any = _FULL_WARP_MASK) -> Value:
    """The value of the lane `delta` below the thread's in its segment of
    `width` lanes, its own where there is none (CUDA's __shfl_up_sync)."""
    return _shuffle("shfl_up", value, delta, width, mask, "delta")


def shfl_down(value: Any, delta: Any, width: int = 32, mask: Any = _FULL_WARP_MASK) -> Value:
    """The value of the lane `delta` above the thread's in its segment of
    `width` lanes, its own where there is none (CUDA's __shfl_down_sync)."""
    return _shuffle("shfl_down", value, delta, width, mask, "delta")


def shfl_xor(value: Any, delta: Any, width: int = 32, mask: Any = _FULL_WARP_MASK) -> Value:
    """The value of lane (lane ^ delta) of the warp, the thread's own where
    that lies past its segment of `width` lanes (CUDA's __shfl_xor_sync)."""
    return _shuffle("shfl_xor", value, delta, width, mask, "delta")

"""Layouts a program may name in ``T.annotate_layout`` (TileLang's
``tilelang.layout``).

tilejit's CPU target lays every shared, fragment and local tile out row-major
(a block runs on one thread; transform/layout_select). What a program can
annotate, and what happens on the CPU:

* ``make_swizzled_layout(buf)``: the bank-conflict-free arrangement of a
  shared tile on a GPU. Swizzling permutes where elements sit in shared
  memory, never which element an index names, and the CPU has no banks, so
  the CPU accepts it and keeps row-major (a no-op).
* ``"row_major"``: the CPU's own layout; honoured.
* ``T.Layout(shape, forward)`` and ``T.Fragment(...)``: an arbitrary index
  map or thread map. No tilejit target has these, so annotating one is an
  error naming the buffer.
"""

from __future__ import annotations

from typing import Any, Callable


class Layout:
    """``T.Layout(shape, forward)``: an index map, ``forward(*index)`` giving
    the physical position of each element (TileLang's form)."""

    kind = "T.Layout"

    def __init__(self, shape: Any, forward: Callable[..., Any]) -> None:
        self.shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        self.forward = forward

    def __repr__(self) -> str:
        return f"{self.kind}({list(self.shape)!r})"


class Fragment(Layout):
    """``T.Fragment(shape, forward_thread=..., ...)``: a thread map of a
    fragment across a block's threads (TileLang's form)."""

    kind = "T.Fragment"

    def __init__(self, shape: Any, forward_thread: Any = None, replicate: int = 1,
                 forward_index: Any = None, **kwargs: Any) -> None:
        super().__init__(shape, forward_index)
        self.forward_thread = forward_thread
        self.replicate = replicate


class SwizzledLayout:
    """The swizzled shared-memory arrangement of `buffer` (GPU banks)."""

    kind = "swizzled"

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"make_swizzled_layout({getattr(self.buffer, 'name', self.buffer)})"


def make_swizzled_layout(buffer: Any, *args: Any, **kwargs: Any) -> SwizzledLayout:
    """TileLang's swizzled shared layout of `buffer`; a no-op on the CPU."""
    return SwizzledLayout(buffer)


__all__ = ["Layout", "Fragment", "SwizzledLayout", "make_swizzled_layout"]

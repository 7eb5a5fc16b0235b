"""``T.annotate_layout({buffer: layout})``: the layouts a program asks for
(tilejit.layout says which forms exist and what the CPU does with each).

The check happens where the annotation is written, so its error carries the
author's span and names the buffer: a swizzled shared layout is accepted
(the CPU keeps its row-major tiles; swizzling is a GPU bank concern that
never changes which element an index names), ``"row_major"`` is honoured,
and an index map (``T.Layout`` / ``T.Fragment``) on a tile is an error
because no target of tilejit lays tiles out by one. A ``T.Layout`` on a
global tensor permutes its storage, as in TileLang (remap.py, Note
[Remapped globals]).
"""

from __future__ import annotations

from typing import Any

from ..layout import Layout, SwizzledLayout
from .remap import layout_remap
from .spans import error
from .values import BufferProxy, current_tracer


def _name(layout: Any) -> str:
    return getattr(layout, "kind", None) or f"{type(layout).__name__} {layout!r}"


def _check_one(buffer: Any, layout: Any) -> None:
    op = "T.annotate_layout"
    if not isinstance(buffer, BufferProxy):
        raise error(TypeError, f"{op}: a key must be a buffer, got {type(buffer).__name__}")
    name = buffer.name
    if buffer.scope_name == "global":
        if type(layout) is Layout:
            if buffer.remap is not None:
                raise error(ValueError, f"{op}: global buffer {name} already has a layout or is "
                                        f"a view; it takes one T.Layout")
            buffer.remap = layout_remap(buffer, layout)
            return
        raise error(ValueError, f"{op}: {name} is a global tensor; a tensor takes a T.Layout "
                                f"(its storage permuted), got {_name(layout)}")
    if isinstance(layout, SwizzledLayout):
        if buffer.scope_name != "shared":
            raise error(ValueError, f"{op}: {name} is a {buffer.scope_name} buffer; a swizzled "
                                    f"layout is for shared buffers")
        return
    if isinstance(layout, str) and layout == "row_major":
        return
    if isinstance(layout, Layout):
        raise error(ValueError, f"{op}: buffer {name}: {layout.kind} (an index map) is not a "
                                f"layout tilejit's targets have; they lay tiles out row_major "
                                f"(make_swizzled_layout is accepted for shared buffers)")
    raise error(TypeError, f"{op}: buffer {name}: expected a layout (make_swizzled_layout, "
                           f"'row_major', T.Layout), got {type(layout).__name__} {layout!r}")


def annotate_layout(layout_map: Any) -> None:
    """Checks every entry of `layout_map` (buffer -> layout) and keeps the
    CPU's row-major tiles (module docstring)."""
    tr = current_tracer("T.annotate_layout")
    if not tr.in_kernel():
        raise error(ValueError, "T.annotate_layout is only valid inside a T.Kernel block")
    if not isinstance(layout_map, dict):
        raise error(TypeError, f"T.annotate_layout: expected a dict of buffer -> layout, got "
                               f"{type(layout_map).__name__}")
    for buffer, layout in layout_map.items():
        _check_one(buffer, layout)

"""Index maps onto a tensor's storage: a ``T.Layout`` annotated on a global
tensor, and a buffer view ``T.Tensor(shape, dtype, X.data)``.

Note [Remapped globals]
Both are TileLang idioms in which a global buffer's elements do not sit
where its own row-major shape says:

* ``T.annotate_layout({dQ: T.Layout(dQ.shape, forward)})`` on a tensor
  permutes its storage: element ``idx`` lives at the row-major position of
  ``forward(*idx)`` in the layout's output shape (the extent of each output
  expression over the input shape, as TileLang's Layout computes it). The
  flash-attention backward writes dQ so (atomics in a GEMM fragment's
  order) and reads it back through the same layout.
* ``T.Tensor(shape, dtype, X.data)`` is a row-major view of X's storage with
  another shape (the convolution's flattened kernel and output).

Neither reaches the IR: the front end rewrites each access. A remapped
proxy keeps its own name, shape and dtype and the IR buffer of the storage;
``BufferProxy.remap`` maps its indices to indices of that buffer (the
storage's row-major position of the element, unravelled over the storage's
shape, dimension groups of equal size passed through). Loads, stores and
single-element atomics go through it. A ``T.copy`` with a remapped side
becomes an element-wise ``T.Parallel`` copy (``elementwise_copy``) whose
loop records that it stands for the copy, so the CUDA lowering report lists
the copy as "elementwise" with the reason. Other tile ops on a remapped
buffer are errors that name it.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from .loops import LoopRange
from .spans import error
from .values import BufferProxy, Region, TensorData, Value, current_tracer, static_value

Index = Tuple[Any, ...]


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _mul(a: Any, b: Any) -> Any:
    if _is_int(a) and a == 1:
        return b
    if _is_int(b) and b == 1:
        return a
    if (_is_int(a) and a == 0) or (_is_int(b) and b == 0):
        return 0
    return a * b


def _add(a: Any, b: Any) -> Any:
    if _is_int(a) and a == 0:
        return b
    if _is_int(b) and b == 0:
        return a
    return a + b


def _product(dims: Sequence[Any]) -> Any:
    out: Any = 1
    for d in dims:
        out = _mul(out, static_value(d))
    return out


def _groups(src: Sequence[Any], dst: Sequence[Any]) -> List[Tuple[int, int, int, int]]:
    """Splits two shapes of one size into runs of dimensions of equal size,
    (src_begin, src_end, dst_begin, dst_end) each; a symbolic dimension ends
    the splitting (the rest is one run)."""
    out = []
    i = j = 0
    while i < len(src) and j < len(dst):
        ps, pd = static_value(src[i]), static_value(dst[j])
        i0, j0 = i, j
        i, j = i + 1, j + 1
        while _is_int(ps) and _is_int(pd) and ps != pd:
            if ps < pd and i < len(src) and _is_int(static_value(src[i])):
                ps, i = ps * static_value(src[i]), i + 1
            elif pd < ps and j < len(dst) and _is_int(static_value(dst[j])):
                pd, j = pd * static_value(dst[j]), j + 1
            else:
                break
        if not (_is_int(ps) and _is_int(pd) and ps == pd) and ps is not pd:
            return out + [(i0, len(src), j0, len(dst))]
        out.append((i0, i, j0, j))
    if i < len(src) or j < len(dst):
        out.append((i, len(src), j, len(dst)))
    return out


def reshape_index(idx: Index, shape: Sequence[Any], storage: Sequence[Any]) -> Index:
    """The index into `storage` of element `idx` of a row-major `shape` over
    the same elements: each run of equal size (_groups) linearised over
    `shape` and unravelled over `storage`."""
    out: List[Any] = []
    for s0, s1, d0, d1 in _groups(shape, storage):
        if s1 - s0 == 1 and d1 - d0 == 1:
            out.append(idx[s0])
            continue
        linear: Any = 0
        for k in range(s0, s1):
            linear = _add(_mul(linear, static_value(shape[k])), idx[k])
        parts: List[Any] = []
        for k in range(d1 - 1, d0, -1):
            extent = static_value(storage[k])
            parts.append(linear % extent)
            linear = linear // extent
        parts.append(linear)
        out.extend(reversed(parts))
    return tuple(out)


# --- T.Layout on a global ---------------------------------------------------

class _Interval:
    """[lo, hi] of an integer expression over the layout's input ranges."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi

    @staticmethod
    def of(x: Any) -> "_Interval":
        if isinstance(x, _Interval):
            return x
        if _is_int(x):
            return _Interval(x, x)
        raise TypeError(f"a layout expression over {type(x).__name__} {x!r}")

    def __add__(self, o: Any) -> "_Interval":
        o = _Interval.of(o)
        return _Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, o: Any) -> "_Interval":
        o = _Interval.of(o)
        return _Interval(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, o: Any) -> "_Interval":
        return _Interval.of(o) - self

    def __mul__(self, o: Any) -> "_Interval":
        o = _Interval.of(o)
        c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Interval(min(c), max(c))

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> "_Interval":
        if not (_is_int(o) and o > 0):
            raise TypeError(f"a layout expression divides by {o!r}; expected a positive int")
        return _Interval(self.lo // o, self.hi // o)

    def __mod__(self, o: Any) -> "_Interval":
        if not (_is_int(o) and o > 0):
            raise TypeError(f"a layout expression takes a remainder by {o!r}; expected a "
                            f"positive int")
        if self.lo >= 0 and self.hi < o:
            return self
        return _Interval(0, o - 1)


def _forward(layout: Any, idx: Index) -> Tuple[Any, ...]:
    out = layout.forward(*idx)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def layout_remap(buffer: BufferProxy, layout: Any) -> Callable[[Index], Index]:
    """The index map of `layout` annotated on the global `buffer` (Note
    [Remapped globals]); a ValueError at the annotation's line where the
    shapes are not static or the layout's output does not hold the buffer's
    elements exactly."""
    op = "T.annotate_layout"
    name = buffer.name
    shape = [static_value(d) for d in buffer.shape]
    if not all(_is_int(d) for d in shape):
        raise error(ValueError, f"{op}: global buffer {name} has the symbolic shape "
                                f"{list(buffer.shape)!r}; a T.Layout on a tensor needs a static "
                                f"shape")
    in_shape = [static_value(d) for d in layout.shape]
    if in_shape != shape:
        raise error(ValueError, f"{op}: global buffer {name}: the layout's input shape "
                                f"{in_shape} is not the buffer's shape {shape}")
    try:
        bounds = _forward(layout, tuple(_Interval(0, d - 1) for d in shape))
        out_shape = [_Interval.of(b).hi + 1 for b in bounds]
        lows = [_Interval.of(b).lo for b in bounds]
    except TypeError as e:
        raise error(ValueError, f"{op}: global buffer {name}: {e}") from None
    if any(lo < 0 for lo in lows):
        raise error(ValueError, f"{op}: global buffer {name}: the layout's output index can be "
                                f"negative")
    size, out_size = _product(shape), _product(out_shape)
    if size != out_size:
        raise error(ValueError, f"{op}: global buffer {name} {shape} holds {size} elements, but "
                                f"the layout's output shape {out_shape} holds {out_size}; a "
                                f"layout on a tensor must permute its elements")

    def remap(idx: Index) -> Index:
        return reshape_index(_forward(layout, idx), out_shape, shape)

    return remap


# --- views ------------------------------------------------------------------

def make_view(shape: Sequence[Any], dtype: str, data: Any) -> BufferProxy:
    """``T.Tensor(shape, dtype, X.data)`` in a kernel: a row-major view of the
    global X (Note [Remapped globals]); same dtype and element count."""
    op = "T.Tensor(shape, dtype, data)"
    if not isinstance(data, TensorData):
        raise error(TypeError, f"{op}: data must be a tensor's storage (X.data of a tensor "
                               f"X), got {type(data).__name__}")
    base = data.buffer
    if base.scope_name != "global":
        raise error(ValueError, f"{op}: {base.name} is a {base.scope_name} buffer; a view is "
                                f"over a global tensor")
    if dtype != base.dtype:
        raise error(ValueError, f"{op}: a {dtype} view over {base.name} ({base.dtype}); a view "
                                f"keeps its tensor's dtype")
    size, base_size = _product(shape), _product(base.shape)
    if _is_int(size) and _is_int(base_size) and size != base_size:
        raise error(ValueError, f"{op}: a view of shape {list(shape)!r} holds {size} elements, "
                                f"but {base.name} {list(base.shape)!r} holds {base_size}")
    tr = current_tracer(op)
    view = BufferProxy(tr.fresh_name(f"{base.name}_view"), shape, dtype, "global", base.buf)
    inner = base.remap
    base_shape = base.shape

    def remap(idx: Index) -> Index:
        out = reshape_index(idx, view.shape, base_shape)
        return inner(out) if inner is not None else out

    view.remap = remap
    view.view_of = base.name
    return view


# --- copies through a remapped global ---------------------------------------

def _extents(r: Region) -> Optional[List[Any]]:
    if r.ranges is None:
        return [static_value(d) for d in r.buffer.shape]
    if all(ext is None for _, ext in r.ranges):
        return None
    return [static_value(ext) for _, ext in r.ranges]


def _mins(r: Region) -> List[Any]:
    return [0] * r.buffer.ndim if r.ranges is None else [mn for mn, _ in r.ranges]


def _bind(r: Region, extents: List[Any], loop: Sequence[Any]) -> Tuple[Index, List[Any]]:
    """The element of `r` at the loop position `loop` over `extents` (the
    non-unit extents of the copy, matched to r's trailing dimensions), and
    the conditions that keep it inside r's buffer."""
    mins = _mins(r)
    own = _extents(r)
    if own is None:  # a start corner: the copy's extents on its last dims
        own = [1] * (len(mins) - len(extents)) + list(extents)
    inner = [k for k, e in enumerate(own) if not (_is_int(e) and e == 1)]
    idx = list(mins)
    for k, v in zip(inner, loop):
        idx[k] = _add(static_value(mins[k]), v)
    conds = []
    for k in inner:
        mn, e, d = static_value(mins[k]), static_value(own[k]), static_value(r.buffer.shape[k])
        if not (_is_int(mn) and _is_int(e) and _is_int(d) and 0 <= mn and mn + e <= d):
            conds.append(idx[k] < r.buffer.shape[k])
    return tuple(idx), conds


def elementwise_copy(src: Region, dst: Region, span: Any) -> None:
    """T.copy(src, dst) with a remapped side, as a T.Parallel loop over the
    copy's non-unit extents: elements outside a tensor are not read (0
    instead) nor written, as T.copy's."""
    tr = current_tracer("T.copy")
    ext = _extents(src) or _extents(dst)
    if ext is None:
        raise error(ValueError, f"T.copy: both sides are start corners ({src!r}, {dst!r}); one "
                                f"must give the extents", span)
    loop_ext = [e for e in ext if not (_is_int(e) and e == 1)] or [1]
    other = _extents(dst) if _extents(src) is not None else None
    if other is not None:
        other_inner = [e for e in other if not (_is_int(e) and e == 1)] or [1]
        if len(other_inner) != len(loop_ext) or any(
                _is_int(a) and _is_int(b) and a != b for a, b in zip(other_inner, loop_ext)):
            raise error(ValueError, f"T.copy: the extents of {src!r} and {dst!r} differ", span)
    which = src.buffer if src.buffer.remap is not None else dst.buffer
    reason = (f"{which.name} is " + (f"a view of {which.view_of}" if getattr(which, "view_of", None)
                                     else "a global tensor with a T.Layout") +
              ": its elements are copied one by one through the index map")
    lr = LoopRange("T.copy", "parallel", [(0, e) for e in loop_ext])
    lr.origin = ("T.copy", reason)
    names = tuple("ijklmn"[k] for k in range(len(loop_ext)))
    for loop in tr.ir_loop(lr, names):
        s_idx, s_conds = _bind(src, loop_ext, loop)
        d_idx, d_conds = _bind(dst, loop_ext, loop)
        _guarded_store(tr, dst.buffer, d_idx, d_conds, src.buffer, s_idx, s_conds)


def _all(tr: Any, conds: List[Any]) -> Any:
    return conds[0] if len(conds) == 1 else tr.and_(*[lambda c=c: c for c in conds])


def _guarded_store(tr: Any, dst: BufferProxy, d_idx: Index, d_conds: List[Any],
                   src: BufferProxy, s_idx: Index, s_conds: List[Any]) -> None:
    outer = tr.if_(_all(tr, d_conds)) if d_conds else None
    if s_conds:
        inner = tr.if_(_all(tr, s_conds))
        dst[d_idx] = src[s_idx]
        tr.else_(inner)
        dst[d_idx] = 0
        tr.endif_(inner)
    else:
        dst[d_idx] = src[s_idx]
    if outer is not None:
        tr.endif_(outer)


def check_not_remapped(op: str, *regions: Any) -> None:
    """An error naming the remapped buffer where a tile op other than T.copy
    and an element's T.atomic_add takes one."""
    for r in regions:
        b = getattr(r, "buffer", None)
        if isinstance(b, BufferProxy) and b.remap is not None:
            what = (f"a view of {b.view_of}" if getattr(b, "view_of", None)
                    else "a global tensor with a T.Layout")
            raise error(ValueError, f"{op}: {b.name} is {what}; {op} cannot take it (T.copy, "
                                    f"loads, stores and T.atomic_add of one element can)")


def remapped_element(r: Region) -> Region:
    """An element region of a remapped buffer as the storage's element."""
    idx = tuple(mn for mn, _ in r.ranges)
    return Region(r.buffer, [(i, 1) for i in r.buffer.remap(idx)])


__all__ = ["layout_remap", "make_view", "TensorData", "elementwise_copy",
           "check_not_remapped", "remapped_element", "reshape_index", "Value"]

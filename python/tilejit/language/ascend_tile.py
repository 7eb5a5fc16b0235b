"""T.tile.*: TileLang-Ascend's vector instructions, emulated.

Each op is an element-wise T.Parallel nest over its destination (recorded
as if the author had written the loop, at the author's line), so it runs on
every target tilejit has. Operands are whole buffers, slices (``x[r, :]``)
or, where the dialect allows one, a scalar (a number, an expression or an
element ``x[i, j]``). Dimensions of extent 1 are ignored when operands are
matched, so ``x_buf[cur, 1, :]`` meets a 1-d ``w``.

compare / select use the dialect's bit masks: compare writes one bit per
element into a uint8 buffer (bit b of byte j is element 8 j + b of the
last dimension), and select picks src0 where the bit is set.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from .. import _C
from . import dtypes
from .loops import LoopRange
from .ops import _alloc, _per_core, reduce as _reduce
from .spans import error
from .values import (BufferProxy, Region, Value, VarBuffer, call_intrinsic, current_tracer,
                     min_max, static_value)

__all__ = ["fill", "add", "sub", "mul", "div", "max", "min", "exp", "ln", "log", "abs",
           "reciprocal", "sqrt", "rsqrt", "relu", "sigmoid", "silu", "leaky_relu", "axpy",
           "mul_add_dst", "cast", "compare", "select", "broadcast", "reduce_sum", "reduce_max",
           "reduce_min", "topk", "gather_mask"]


class _Tile:
    """A buffer or a slice of one as an operand: element (ivs) of the loop
    over the destination's non-unit dimensions."""

    def __init__(self, op: str, what: str, x: Any) -> None:
        if isinstance(x, BufferProxy) and not isinstance(x, VarBuffer):
            self.buffer, self.mins, self.extents = x, [0] * x.ndim, list(x.shape)
        elif isinstance(x, Region) and x.ranges is not None and \
                all(e is not None for _, e in x.ranges):
            self.buffer = x.buffer
            self.mins = [m for m, _ in x.ranges]
            self.extents = [e for _, e in x.ranges]
        else:
            raise error(TypeError, f"{op}: {what} must be a buffer or a slice of one, "
                                   f"got {_describe(x)}")
        self.extents = [_extent(e) for e in self.extents]
        self.kept = [d for d, e in enumerate(self.extents) if e != 1]
        self.name = self.buffer.name

    def shape(self) -> List[Any]:
        return [self.extents[d] for d in self.kept]

    def at(self, ivs: List[Any]) -> Any:
        idx = list(self.mins)
        for k, d in enumerate(self.kept):
            idx[d] = ivs[k] if _is_zero(self.mins[d]) else self.mins[d] + ivs[k]
        return self.buffer[tuple(idx)]

    def store(self, ivs: List[Any], value: Any) -> None:
        idx = list(self.mins)
        for k, d in enumerate(self.kept):
            idx[d] = ivs[k] if _is_zero(self.mins[d]) else self.mins[d] + ivs[k]
        self.buffer[tuple(idx)] = value


def _extent(e: Any) -> Any:
    """A slice's extent, stop - start as written (x[i * 4:i * 4 + 4]), as
    its int when it simplifies to one."""
    if isinstance(e, Value):
        h = _C.simplify(e.h)
        return h.value if h.is_const else e
    return static_value(e)


def _is_zero(x: Any) -> bool:
    return isinstance(static_value(x), int) and static_value(x) == 0


def _describe(x: Any) -> str:
    if isinstance(x, Value):
        return f"the expression '{x!r}'"
    return f"{type(x).__name__} {x!r}"


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, Value, VarBuffer)) and not isinstance(x, bool)


def _operand(op: str, what: str, x: Any, dst: _Tile, scalar_ok: bool) -> Callable[[List], Any]:
    """An element-of-the-loop function for a source operand."""
    if scalar_ok and _is_scalar(x):
        return lambda ivs: x
    t = _Tile(op, what, x)
    _same_shape(op, what, t, dst)
    return t.at


def _same_shape(op: str, what: str, t: _Tile, dst: _Tile) -> None:
    a, b = t.shape(), dst.shape()
    if len(a) == len(b) and all(not isinstance(x, int) or not isinstance(y, int) or x == y
                                for x, y in zip(a, b)):
        return
    raise error(ValueError, f"{op}: {what} {t.name} has shape {_text(a)} but the destination "
                            f"{dst.name} has {_text(b)} (dimensions of extent 1 aside)")


def _text(shape: List[Any]) -> str:
    return "[" + ", ".join(repr(d) for d in shape) + "]"


def _loop(op: str, dst: _Tile, body: Callable[[List[Any]], None]) -> None:
    """for ivs in T.Parallel(dst's shape): body(ivs)."""
    tr = current_tracer(op)
    shape = dst.shape() or [1]
    names = tuple("ijklmn"[d] for d in range(len(shape)))

    def emit() -> None:
        for ivs in tr.ir_loop(LoopRange(op, "parallel", [(0, e) for e in shape]), names):
            body(list(ivs) if dst.kept else [])
    # In lockstep, once per vector core (ascend.py, Note [Cube and vector in lockstep]).
    _per_core(tr, (dst.buffer,), emit)


def _elementwise(op: str, dst: Any, fn: Callable[..., Any], *srcs: Any,
                 scalar_last: bool = False) -> None:
    d = _Tile(op, "the destination", dst)
    getters = [_operand(op, f"src{k}" if len(srcs) > 1 else "src", s, d,
                        scalar_last and k == len(srcs) - 1) for k, s in enumerate(srcs)]
    _loop(op, d, lambda ivs: d.store(ivs, fn(*(g(ivs) for g in getters))))


# --- fill and binary ops ---------------------------------------------------

def fill(buffer: Any, value: Any) -> None:
    """Every element of buffer = value."""
    _elementwise("T.tile.fill", buffer, lambda: value)


def _binary(name: str, fn: Callable[[Any, Any], Any]) -> Any:
    def op(dst: Any, src0: Any, src1: Any) -> None:
        _elementwise(f"T.tile.{name}", dst, fn, src0, src1, scalar_last=True)
    op.__name__ = name
    op.__doc__ = f"dst = {name}(src0, src1); src1 may be a scalar."
    return op


add = _binary("add", lambda a, b: a + b)
sub = _binary("sub", lambda a, b: a - b)
mul = _binary("mul", lambda a, b: a * b)
div = _binary("div", lambda a, b: a / b)
max = _binary("max", lambda a, b: min_max("max", a, b))  # noqa: A001
min = _binary("min", lambda a, b: min_max("min", a, b))  # noqa: A001


# --- unary ops -------------------------------------------------------------

def _unary(name: str, fn: Callable[[Any], Any]) -> Any:
    def op(dst: Any, src: Any) -> None:
        _elementwise(f"T.tile.{name}", dst, fn, src)
    op.__name__ = name
    op.__doc__ = f"dst = {name}(src), element-wise."
    return op


def _select(cond: Any, a: Any, b: Any) -> Any:
    return current_tracer().ifexp(cond, lambda: a, lambda: b)


exp = _unary("exp", lambda x: call_intrinsic("exp", x))
ln = _unary("ln", lambda x: call_intrinsic("log", x))
log = ln
abs = _unary("abs", lambda x: call_intrinsic("abs", x))  # noqa: A001
sqrt = _unary("sqrt", lambda x: call_intrinsic("sqrt", x))
rsqrt = _unary("rsqrt", lambda x: call_intrinsic("rsqrt", x))
sigmoid = _unary("sigmoid", lambda x: call_intrinsic("sigmoid", x))
reciprocal = _unary("reciprocal", lambda x: 1.0 / x)
relu = _unary("relu", lambda x: min_max("max", x, 0.0))
silu = _unary("silu", lambda x: x * call_intrinsic("sigmoid", x))


def leaky_relu(dst: Any, src: Any, scalar_value: Any) -> None:
    """dst = src where src >= 0, else src * scalar_value."""
    _elementwise("T.tile.leaky_relu", dst, lambda x: _select(x >= 0, x, x * scalar_value), src)


def axpy(dst: Any, src: Any, scalar_value: Any) -> None:
    """dst = src * scalar_value + dst."""
    d = _Tile("T.tile.axpy", "the destination", dst)
    s = _operand("T.tile.axpy", "src", src, d, False)
    _loop("T.tile.axpy", d, lambda ivs: d.store(ivs, s(ivs) * scalar_value + d.at(ivs)))


def mul_add_dst(dst: Any, src0: Any, src1: Any) -> None:
    """dst = src0 * src1 + dst; src1 may be a scalar."""
    d = _Tile("T.tile.mul_add_dst", "the destination", dst)
    a = _operand("T.tile.mul_add_dst", "src0", src0, d, False)
    b = _operand("T.tile.mul_add_dst", "src1", src1, d, True)
    _loop("T.tile.mul_add_dst", d, lambda ivs: d.store(ivs, a(ivs) * b(ivs) + d.at(ivs)))


# --- casts -----------------------------------------------------------------

_CAST_MODES = ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC",
               "CAST_ODD")


def cast(dst: Any, src: Any, mode: str = "CAST_NONE", count: Any = None) -> None:
    """dst = src converted to dst's dtype with the rounding `mode` (to an
    integer dtype: CAST_NONE / CAST_TRUNC truncate, CAST_FLOOR, CAST_CEIL,
    CAST_ROUND (halves away from zero); to a float dtype CAST_NONE and
    CAST_RINT, the nearest value). `count` elements, all of dst when None."""
    op = "T.tile.cast"
    if mode not in _CAST_MODES:
        raise error(ValueError, f"{op}: unknown mode {mode!r}; expected one of "
                                f"{', '.join(_CAST_MODES)}")
    d = _Tile(op, "the destination", dst)
    to_int = dtypes.is_int(d.buffer.dtype)
    if (to_int and mode in ("CAST_RINT", "CAST_ODD")) or \
            (not to_int and mode not in ("CAST_NONE", "CAST_RINT")):
        raise error(NotImplementedError, f"{op}: mode {mode} to {d.buffer.dtype} is not "
                                         f"emulated yet")
    size = 1
    for e in d.shape():
        size = size * e
    if count is not None and static_value(count) != size:
        raise error(NotImplementedError, f"{op}: count {count!r} is not the {size} elements "
                                         f"of {d.name}; a partial cast is not emulated yet")

    def convert(x: Any) -> Any:
        if not to_int or mode in ("CAST_NONE", "CAST_TRUNC"):
            return x
        if mode == "CAST_FLOOR":
            return call_intrinsic("floor", x)
        if mode == "CAST_CEIL":
            return call_intrinsic("ceil", x)
        return _select(x >= 0, call_intrinsic("floor", x + 0.5), call_intrinsic("ceil", x - 0.5))

    _elementwise(op, dst, convert, src)


# --- compare and select (bit masks) ----------------------------------------

_COMPARES = {"EQ": "__eq__", "NE": "__ne__", "GT": "__gt__", "GE": "__ge__", "LT": "__lt__",
             "LE": "__le__"}


def _mask_shapes(op: str, mask: _Tile, data: _Tile) -> None:
    m, x = mask.shape(), data.shape()
    if len(m) == len(x) and m[:-1] == x[:-1] and isinstance(x[-1], int) and x[-1] % 8 == 0 \
            and m[-1] == x[-1] // 8:
        return
    raise error(ValueError, f"{op}: the mask {mask.name} has shape {_text(m)}; for "
                            f"{data.name} of shape {_text(x)} it must have one uint8 per 8 "
                            f"elements of the last dimension")


def compare(dst: Any, src0: Any, src1: Any, mode: str) -> None:
    """Bit b of dst[..., j] = src0[..., 8 j + b] <mode> src1 (an element of
    a tile, or a scalar); mode is EQ, NE, GT, GE, LT or LE."""
    op = "T.tile.compare"
    if mode not in _COMPARES:
        raise error(ValueError, f"{op}: unknown mode {mode!r}; expected one of "
                                f"{', '.join(_COMPARES)}")
    d = _Tile(op, "the destination", dst)
    a = _Tile(op, "src0", src0)
    _mask_shapes(op, d, a)
    b = (lambda ivs: src1) if _is_scalar(src1) else _Tile(op, "src1", src1).at

    def body(ivs: List[Any]) -> None:
        byte: Any = 0
        for bit in range(8):
            e = ivs[:-1] + [ivs[-1] * 8 + bit]
            byte = byte + _select(getattr(a.at(e), _COMPARES[mode])(b(e)), 1 << bit, 0)
        d.store(ivs, byte)
    _loop(op, d, body)


def select(dst: Any, selMask: Any, src0: Any, src1: Any,  # noqa: N803
           selMode: str = "VSEL_TENSOR_TENSOR_MODE") -> None:
    """dst[..., k] = src0[..., k] where bit k % 8 of selMask[..., k // 8] is
    set, else src1 (a tile, or a scalar in VSEL_TENSOR_SCALAR_MODE)."""
    op = "T.tile.select"
    modes = ("VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE", "VSEL_TENSOR_TENSOR_MODE")
    if selMode not in modes:
        raise error(ValueError, f"{op}: unknown selMode {selMode!r}; expected one of "
                                f"{', '.join(modes)}")
    d = _Tile(op, "the destination", dst)
    m = _Tile(op, "the mask", selMask)
    _mask_shapes(op, m, d)
    a = _operand(op, "src0", src0, d, False)
    b = _operand(op, "src1", src1, d, selMode == "VSEL_TENSOR_SCALAR_MODE")

    def body(ivs: List[Any]) -> None:
        byte = m.at(ivs)
        for bit in range(8):
            e = ivs[:-1] + [ivs[-1] * 8 + bit]
            on = (byte // (1 << bit)) % 2
            d.store(e, _select(on == 1, a(e), b(e)))
    _loop(op, m, body)  # over the mask's bytes


# --- broadcast and reductions ----------------------------------------------

def broadcast(dst: Any, src: Any, axis: Optional[int] = None) -> None:
    """dst (2-d) = src repeated along its extent-1 dimension: src [M, 1]
    or [1, N], or 1-d src of dst's N (axis 0) or M (axis 1)."""
    op = "T.tile.broadcast"
    d = _Tile(op, "the destination", dst)
    s = _Tile(op, "src", src)
    if len(d.extents) != 2 or len(s.extents) not in (1, 2):
        raise error(ValueError, f"{op}: expected a 2-d destination and a 1-d or 2-d source, "
                                f"got {d.name} {_text(d.extents)} and {s.name} "
                                f"{_text(s.extents)}")
    m, n = d.extents
    if len(s.extents) == 1:
        if axis == 0 or (axis is None and s.extents[0] == n):
            ext, pick = [1, s.extents[0]], (lambda i, j: [j])
        elif axis == 1 or (axis is None and s.extents[0] == m):
            ext, pick = [s.extents[0], 1], (lambda i, j: [i])
        else:
            raise error(ValueError, f"{op}: cannot broadcast {s.name} {_text(s.extents)} to "
                                    f"{d.name} {_text(d.extents)} (axis={axis})")
    else:
        ext = s.extents
        pick = (lambda i, j: [0 if ext[0] == 1 else i, 0 if ext[1] == 1 else j])
    for k, (a, b) in enumerate(zip(ext, (m, n))):
        if a != 1 and a != b:
            raise error(ValueError, f"{op}: cannot broadcast {s.name} {_text(s.extents)} to "
                                    f"{d.name} {_text(d.extents)} (axis={axis})")
    full = _Tile.__new__(_Tile)
    full.buffer, full.name, full.mins, full.extents = d.buffer, d.name, d.mins, d.extents
    full.kept = [0, 1]

    def at_src(idx: List[Any]) -> Any:
        out = list(s.mins)
        for k, v in enumerate(idx):
            out[k] = v if _is_zero(s.mins[k]) else s.mins[k] + v
        return s.buffer[tuple(out)]
    _loop(op, full, lambda ivs: full.store(ivs, at_src(pick(ivs[0], ivs[1]))))


def reduce_sum(src: Any, dst: Any, dim: int = -1, clear: bool = True) -> None:
    """dst = the sum of src along dim (T.reduce_sum)."""
    _reduce(src, dst, "sum", dim, clear)


def reduce_max(src: Any, dst: Any, dim: int = -1, clear: bool = True) -> None:
    """dst = the maximum of src along dim (T.reduce_max)."""
    _reduce(src, dst, "max", dim, clear)


def reduce_min(src: Any, dst: Any, dim: int = -1, clear: bool = True) -> None:
    """dst = the minimum of src along dim (T.reduce_min)."""
    _reduce(src, dst, "min", dim, clear)


def copy_relu(src: Region, dst: Region) -> None:
    """T.copy(src, dst, enable_relu=True): dst = max(src, 0) (ops.copy asks)."""
    def operand(r: Region) -> Any:
        return r.buffer if r.ranges is None else r
    _elementwise("T.copy", operand(dst), lambda x: min_max("max", x, 0.0), operand(src))


# --- top-k and gather_mask ---------------------------------------------------

def topk(dst: Any, src: Any, top_k: int, count: Any) -> None:
    """dst[2 t], dst[2 t + 1] = the t-th largest of src's first `count`
    elements and its index (ties: the lower index first), t < top_k. The
    NPU's sort stores the index's uint32 bits in the pair; here it is the
    index's value in dst's dtype, which T.tile.gather_mask then picks and
    T.tile.cast converts to the integer index."""
    op = "T.tile.topk"
    tr = current_tracer(op)
    d = _Tile(op, "the destination", dst)
    s = _Tile(op, "src", src)
    k, n = static_value(top_k), static_value(count)
    if len(d.shape()) != 1 or len(s.shape()) != 1 or not isinstance(k, int) or \
            not isinstance(n, int) or d.shape()[0] < 2 * k or s.shape()[0] < n:
        raise error(ValueError, f"{op}: expected a 1-d destination of 2 * top_k elements and "
                                f"a 1-d src of count elements, got {d.name} {_text(d.shape())}, "
                                f"{s.name} {_text(s.shape())}, top_k {top_k!r}, count "
                                f"{count!r}")
    rank = _alloc("T.tile.topk", [1], "int32", "local")

    def emit() -> None:
        for j in tr.ir_loop(LoopRange(op, "serial", [(0, n)]), "j"):
            rank[0] = 0
            v = s.at([j])
            for i in tr.ir_loop(LoopRange(op, "serial", [(0, n)]), "i"):
                u = s.at([i])
                before = _select(u > v, 1, _select(u == v, _select(i < j, 1, 0), 0))
                rank[0] = rank[0] + before
            st = tr.if_(rank[0] < k)
            d.store([rank[0] * 2], v)
            d.store([rank[0] * 2 + 1], j)
            tr.endif_(st)
    _per_core(tr, (d.buffer, s.buffer), emit)


def gather_mask(dst: Any, src: Any, pattern: str) -> None:
    """dst = the elements of src that a fixed pattern selects: "Pabcd" takes,
    of each 4 elements, element 0 where d is 1, 1 where c is, 2 where b is,
    3 where a is (so "P0101" the even ones, "P1010" the odd ones)."""
    op = "T.tile.gather_mask"
    if not isinstance(pattern, str) or len(pattern) != 5 or pattern[0] != "P" or \
            set(pattern[1:]) - {"0", "1"} or "1" not in pattern:
        raise error(NotEmulatedError, f"{op}: pattern {pattern!r} is not emulated yet; the "
                                      f"fixed patterns \"Pxxxx\" are")
    offsets = [e for e in range(4) if pattern[4 - e] == "1"]
    d = _Tile(op, "the destination", dst)
    s = _Tile(op, "src", src)
    if len(d.shape()) != 1 or len(s.shape()) != 1:
        raise error(ValueError, f"{op}: expected 1-d operands, got {d.name} "
                                f"{_text(d.shape())} and {s.name} {_text(s.shape())}")
    c = len(offsets)

    def pos(t: Any) -> Any:
        within: Any = offsets[0]
        for q in range(1, c):
            within = _select(t % c == q, offsets[q], within)
        return (t // c) * 4 + within
    _loop(op, d, lambda ivs: d.store(ivs, s.at([pos(ivs[0])])))


class NotEmulatedError(NotImplementedError, AttributeError):
    """A T.tile.* instruction the emulation does not have: NotImplementedError
    for the author, and an AttributeError for tools that look names up
    (hasattr, getattr with a default, pickling)."""


def __getattr__(name: str) -> Any:
    """A T.tile.* instruction not emulated yet: an error naming it."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise error(NotEmulatedError, f"T.tile.{name} (TileLang-Ascend) is not emulated yet")

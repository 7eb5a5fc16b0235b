"""TVM's thread all-reduce, as TileLang's hand-written GEMV
(examples/gemv, ``splitk_gemv_vectorized_tvm``) writes it:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, accum_dtype)]),
                "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, cond, out[0], tk,
                                          dtype="handle"))

Every thread of the block gets, in ``out[0]`` (an element of a local
buffer), the reducer's fold of ``value`` (its identity where ``cond`` is
false) over the threads of its block that differ from it only in the listed
thread indices (``T.get_thread_binding`` values). Only this form is taken:
Note [Thread all-reduce] says how it lowers.

Note [Thread all-reduce]
The all-reduce becomes tile IR that both targets already run, recorded at
the all-reduce's line: where every group of threads lies in one warp (the
threads below the highest listed dimension are all listed or fit, with it,
in 32 lanes: a power-of-two span) and every listed extent is a power of two,
a butterfly of T.shfl_xor (Note [Warp shuffles]) over the listed
dimensions, each thread left with the whole fold; otherwise a shared scratch
of one element per thread of the block, each thread's value stored at its
own [tz, ty, tx], a barrier, a serial loop per listed dimension in which
each thread folds its group's elements from the identity into ``out``, and a
barrier again before the scratch can be written once more (the all-reduce
in a loop). The CPU, which runs a block's threads in turn, emulates both
(thread loops split at barriers; shuffles through an array). Like a
shuffle and a barrier, an all-reduce must be reached by every thread of the
block: under a condition that depends on the thread and is not a range of
threads it is an error.
"""

from __future__ import annotations

import inspect
from typing import Any, List, Optional

from . import dtypes
from .loops import serial_range
from .ops import _describe
from .spans import Span, error, user_span
from .tracer import KernelFrame
from .values import BufferProxy, Value, as_bool_handle, current_tracer, to_handle

__all__ = ["CommReducer", "attr", "comm_reducer", "evaluate", "reinterpret",
           "tvm_thread_allreduce"]

_WARP = 32


class CommReducer:
    """``T.comm_reducer(combiner, [identity])``: a commutative reducer of one
    value, the reducer of a ``"reduce_scope"`` T.attr."""

    def __init__(self, combiner: Any, identity: Any, span: Span) -> None:
        self.combiner = combiner
        self.identity = identity
        self.span = span

    def __repr__(self) -> str:
        return "<T.comm_reducer>"


class _NullHandle:
    """``T.reinterpret(T.uint64(0), dtype="handle")``: TVM's null handle, the
    value of a ``"reduce_scope"`` T.attr."""

    def __repr__(self) -> str:
        return "T.reinterpret(T.uint64(0), dtype=\"handle\")"


class _AllReduced:
    """What T.tvm_thread_allreduce returns: its statements are recorded;
    T.evaluate takes this."""

    def __repr__(self) -> str:
        return "<T.tvm_thread_allreduce>"


def _positional_arity(fn: Any) -> Optional[int]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in kinds)


def comm_reducer(combiner: Any, identity: Any) -> CommReducer:
    """A commutative reducer: ``combiner(x, y)`` folds two values, and
    ``identity`` (a list of one value) is its identity element."""
    span = user_span()
    if not callable(combiner) or _positional_arity(combiner) != 2:
        raise error(TypeError, f"T.comm_reducer: the combiner must be a function of two values "
                               f"(lambda x, y: x + y), got {_describe(combiner)}", span)
    if not isinstance(identity, (list, tuple)) or len(identity) != 1:
        raise error(ValueError, f"T.comm_reducer: the identity must be a list of one value "
                                f"(a reducer of one value), got {_describe(identity)}", span)
    return CommReducer(combiner, identity[0], span)


def reinterpret(value: Any, dtype: Any = None) -> Any:
    """Only TVM's null handle, ``T.reinterpret(T.uint64(0), dtype="handle")``,
    the value of a ``"reduce_scope"`` T.attr: tilejit has no bit
    reinterpretation between element types."""
    span = user_span()
    zero = isinstance(value, dtypes.UnsignedConstant) and value.name == "uint64" and \
        value.value == 0
    if dtype != "handle" or not zero:
        raise error(ValueError, f"T.reinterpret: only T.reinterpret(T.uint64(0), "
                                f"dtype=\"handle\") (the null handle of a \"reduce_scope\" "
                                f"T.attr) is supported, got {_describe(value)} as "
                                f"{dtype!r}", span)
    return _NullHandle()


class attr:  # noqa: N801 (TileLang's name; a context manager)
    """``with T.attr(T.comm_reducer(...), "reduce_scope", <null handle>):``
    the scope of a T.tvm_thread_allreduce with that reducer. Other keys are
    errors."""

    def __init__(self, node: Any, attr_key: Any, value: Any) -> None:
        span = user_span()
        self._tracer = current_tracer("T.attr")
        if attr_key != "reduce_scope":
            raise error(ValueError, f"T.attr: only the \"reduce_scope\" attribute (of a "
                                    f"T.tvm_thread_allreduce) is supported, got {attr_key!r}",
                        span)
        if not isinstance(node, CommReducer):
            raise error(TypeError, f"T.attr: a \"reduce_scope\" attribute is of a "
                                   f"T.comm_reducer, got {_describe(node)}", span)
        if not isinstance(value, _NullHandle):
            raise error(TypeError, f"T.attr: the value of a \"reduce_scope\" attribute is "
                                   f"T.reinterpret(T.uint64(0), dtype=\"handle\"), got "
                                   f"{_describe(value)}", span)
        self._tracer.tile("T.attr", span)
        self.reducer = node

    def __enter__(self) -> "attr":
        self._tracer.reducers.append(self.reducer)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._tracer.reducers.pop()


def evaluate(value: Any) -> None:
    """``T.evaluate(T.tvm_thread_allreduce(...))``: the all-reduce is
    recorded where it is called; nothing else is evaluated for its effects."""
    if not isinstance(value, _AllReduced):
        raise error(TypeError, f"T.evaluate: only T.evaluate(T.tvm_thread_allreduce(...)) is "
                               f"supported, got {_describe(value)}")


def _const_int(tr: Any, x: Any) -> Optional[int]:
    if isinstance(x, dtypes.UnsignedConstant):
        return x.value
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    if isinstance(x, Value) and getattr(x.h, "is_const", False):
        v = x.h.value
        return v if isinstance(v, int) else None
    return None


def _thread_dim(tr: Any, x: Any, extents: List[int], span: Span) -> Optional[int]:
    """The block dimension whose T.get_thread_binding `x` is, or None."""
    if not isinstance(x, Value):
        return None
    text = tr.b.text(x.h)
    for d in range(len(extents)):
        if text == tr.b.text(tr.b.thread_binding(d, span)):
            return d
    return None


def tvm_thread_allreduce(*args: Any, dtype: Any = "handle") -> _AllReduced:
    """TVM's ``tvm_thread_allreduce(size, value, cond, out, *thread_indices)``
    of one value (size 1), inside a ``"reduce_scope"`` T.attr."""
    op = "T.tvm_thread_allreduce"
    span = user_span()
    tr = current_tracer(op)
    b = tr.tile(op, span)
    if not tr.reducers:
        raise error(ValueError, f"{op}: outside a `with T.attr(T.comm_reducer(...), "
                                f"\"reduce_scope\", ...)` block", span)
    reducer = tr.reducers[-1]
    if dtype != "handle":
        raise error(ValueError, f"{op}: dtype must be \"handle\", got {dtype!r}", span)
    if len(args) < 5:
        raise error(TypeError, f"{op}: expected (size, value, cond, out, thread index, ...), "
                               f"got {len(args)} argument{'s' if len(args) != 1 else ''}", span)
    if _const_int(tr, args[0]) != 1:
        raise error(ValueError, f"{op}: size must be 1 (one value reduced), got "
                                f"{_describe(args[0])}", span)
    value, cond, out, indices = args[1], args[2], args[3], args[4:]
    load = out._load if isinstance(out, Value) else None
    if load is None or not isinstance(load[0], BufferProxy) or load[0].scope_name != "local":
        raise error(TypeError, f"{op}: out must be an element of a T.alloc_local buffer "
                               f"(C_reduced[0]), got {_describe(out)}", span)
    out_buf, out_idx = load
    frame = next(f for f in reversed(tr.frames) if isinstance(f, KernelFrame))
    extents = list(frame.threads)
    dims: List[int] = []
    for i, x in enumerate(indices):
        d = _thread_dim(tr, x, extents, span)
        if d is None:
            raise error(TypeError, f"{op}: argument #{5 + i} must be a thread index from "
                                   f"T.get_thread_binding, got {_describe(x)}", span)
        if d in dims:
            raise error(ValueError, f"{op}: the thread index of dimension {d} is listed twice",
                        span)
        dims.append(d)

    acc = out_buf.dtype
    identity = to_handle(tr, reducer.identity, acc, "identity")
    if b.dtype(identity) != acc:
        identity = b.cast(acc, identity)
    v = to_handle(tr, value, acc, "value")
    if b.dtype(v) != acc:
        v = b.cast(acc, v)
    if not (isinstance(cond, bool) and cond):
        v = b.select(as_bool_handle(tr, cond), v, identity)

    def combine(x: Any, y: Any) -> Any:
        r = reducer.combiner(Value(x), Value(y, reads=True))
        h = to_handle(tr, r, acc, "combined value")
        return h if b.dtype(h) == acc else b.cast(acc, h)

    width = _warp_width(extents, dims)
    if width:
        _butterfly(tr, b, v, combine, out_buf, out_idx, extents, dims, width, span)
    else:
        _through_shared(tr, b, v, identity, combine, out_buf, out_idx, extents, dims, span)
    return _AllReduced()


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _product(xs: List[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _warp_width(extents: List[int], dims: List[int]) -> int:
    """The shuffle width of a butterfly over `dims`, or 0 where a group of
    threads may span warps (Note [Thread all-reduce])."""
    span, total = _product(extents[:max(dims) + 1]), _product(extents)
    if not (_pow2(span) and span <= _WARP and all(_pow2(extents[d]) for d in dims)):
        return 0
    if total % _WARP == 0:
        return _WARP
    return total if _pow2(total) and total < _WARP else 0


def _butterfly(tr, b, v, combine, out_buf, out_idx, extents, dims, width, span) -> None:
    mask = b.const((1 << width) - 1 if width < _WARP else 0xFFFFFFFF, "int64")
    v = b.let("red", v, span)
    for d in dims:
        stride = _product(extents[:d])
        offset = extents[d] // 2
        while offset >= 1:
            lane = b.const(offset * stride, "int32")
            other = b.let("red_other", b.call("shfl_xor", [v, lane, b.const(width, "int32"),
                                                           mask]), span)
            v = b.let("red", combine(v, other), span)
            offset //= 2
    b.store(out_buf.buf, [to_handle(tr, k, "int32", "index") for k in out_idx], v, span)


def _through_shared(tr, b, v, identity, combine, out_buf, out_idx, extents, dims, span) -> None:
    acc = out_buf.dtype
    shape = list(reversed(extents))  # [tz, ty, tx]
    scratch = b.alloc(tr.fresh_name("red_buf"), [b.const(e, "int64") for e in shape], acc,
                      "shared", span)
    own = [tr.b.thread_binding(d, span) for d in reversed(range(len(extents)))]
    b.store(scratch, own, v, span)
    b.sync_threads(span)
    out_h = [to_handle(tr, k, "int32", "index") for k in out_idx]
    b.store(out_buf.buf, out_h, identity, span)
    where = list(own)
    loops = []
    for d in dims:
        loops.append(tr.ir_loop(serial_range("T.tvm_thread_allreduce", "serial", extents[d]),
                                "red_" + "xyz"[d]))
        where[len(extents) - 1 - d] = next(loops[-1]).h
    folded = combine(b.load(out_buf.buf, out_h), b.load(scratch, where))
    b.store(out_buf.buf, out_h, folded, span)
    for loop in reversed(loops):
        next(loop, None)
    b.sync_threads(span)

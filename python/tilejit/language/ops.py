"""The T.* operations of a tile body: allocations, loops, tile ops and
scalar math. Each records into the prim_func's builder with the span of the
author's call (spans.py); argument mistakes are errors at that span."""

from __future__ import annotations

import enum
import math
from typing import Any, List, Optional

from .. import _C
from . import dtypes
from .active import active
from .spans import error, user_span
from .loops import LoopRange, serial_range
from .remap import check_not_remapped, elementwise_copy, remapped_element
from .values import (BufferProxy, Region, Value, VarBuffer, call_intrinsic, current_tracer,
                     int_op, is_symbolic, min_max, static_value, to_handle)
from .values import cast as _cast

# --- allocations -----------------------------------------------------------

_SCOPES = {"shared": "shared", "shared.dyn": "shared", "local.fragment": "fragment",
           "fragment": "fragment", "local": "local", "local.var": "local", "global": "global"}


def _shape_list(op: str, shape: Any) -> List[Any]:
    if isinstance(shape, (int, _C.Expr, Value)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = list(shape)
    except TypeError:
        raise error(TypeError, f"{op}: the shape must be a tuple of ints, "
                               f"got {type(shape).__name__}") from None
    for d, dim in enumerate(dims):
        dim = static_value(dim)
        dims[d] = dim
        if not ((isinstance(dim, int) and not isinstance(dim, bool)) or
                isinstance(dim, (_C.Expr, Value))):
            raise error(TypeError, f"{op}: dimension {d} of the shape must be an int, "
                                   f"got {type(dim).__name__}")
    return dims


def _alloc(op: str, shape: Any, dtype: Any, scope: str, cls: type = BufferProxy,
           init: Optional[str] = None) -> BufferProxy:
    span = user_span()
    tr = current_tracer(op)
    dims = _shape_list(op, shape)
    try:
        dt = dtypes.dtype_name(dtype)
    except (TypeError, ValueError) as e:
        raise error(type(e), f"{op}: {e}", span) from None
    b = tr.tile(op, span)
    name = tr.fresh_name(tr.take_target())
    handles = [tr._shape_handle(b, d) if not isinstance(d, Value) else d.h for d in dims]
    if scope == "global":
        buf = b.alloc_global(name, handles, dt, init or "empty", span)
    else:
        buf = b.alloc(name, handles, dt, scope, span)
    return cls(name, dims, dt, scope, buf)


def _scope(op: str, scope: str, default: str) -> str:
    s = _SCOPES.get(scope)
    if s is None:
        raise error(ValueError, f"{op}: unknown scope {scope!r}; expected "
                                f"{', '.join(repr(k) for k in _SCOPES)}")
    return s if scope != default else _SCOPES[default]


def alloc_shared(shape: Any, dtype: Any, scope: str = "shared.dyn") -> BufferProxy:
    """A buffer in shared memory, one per block."""
    return _alloc("T.alloc_shared", shape, dtype, _scope("T.alloc_shared", scope, "shared.dyn"))


def alloc_fragment(shape: Any, dtype: Any, scope: str = "local.fragment") -> BufferProxy:
    """A tile held by the block's threads (registers); scope "local" makes a
    per-thread local buffer instead."""
    return _alloc("T.alloc_fragment", shape, dtype,
                  _scope("T.alloc_fragment", scope, "local.fragment"))


def alloc_local(shape: Any, dtype: Any, scope: str = "local") -> BufferProxy:
    """A per-thread local buffer."""
    return _alloc("T.alloc_local", shape, dtype, _scope("T.alloc_local", scope, "local"))


def alloc_var(dtype: Any, *args: Any, scope: str = "local.var", init: Any = None) -> VarBuffer:
    """A scalar variable: ``x = T.alloc_var(T.int32, init=0)``; ``x = v``
    and ``x += v`` in the body store into it, ``x`` reads it."""
    if args:
        if len(args) > 1 or init is not None:
            raise error(TypeError, "T.alloc_var takes (dtype, init) or (dtype, init=...)")
        if isinstance(args[0], str) and args[0] in _SCOPES:
            scope = args[0]
        else:
            init = args[0]
    var = _alloc("T.alloc_var", (1,), dtype, "local", VarBuffer)
    if init is not None:
        var.set(init)
    return var


def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: Any = None) -> BufferProxy:
    """A reduction accumulator. Where a block runs on one thread (the CPU)
    it is a fragment that the body updates in place
    (``acc[i] += ...``); T.finalize_reducer completes it."""
    if op not in ("sum", "max", "min"):
        raise error(ValueError, f"T.alloc_reducer: op must be 'sum', 'max' or 'min', got {op!r}")
    return _alloc("T.alloc_reducer", shape, dtype, "fragment")


def finalize_reducer(reducer: BufferProxy, dst: Optional[BufferProxy] = None, batch: int = 1,
                     annotations: Any = None) -> None:
    """Completes a reducer: copies it into `dst` when given (each block's
    threads already hold the whole result where a block is one thread)."""
    if not isinstance(reducer, BufferProxy):
        raise error(TypeError, f"T.finalize_reducer: expected a buffer from T.alloc_reducer, "
                               f"got {type(reducer).__name__}")
    if dst is not None:
        copy(reducer, dst)


def alloc_global(shape: Any, dtype: Any, scope: str = "global", init: Optional[str] = None) \
        -> BufferProxy:
    """A workspace the signature never shows: its shape may use the
    signature's symbols; init is None / "empty", "zero" (zeroed before every
    launch) or "zero_once" (zeroed once; the kernel leaves it zeroed)."""
    if init not in (None, "empty", "zero", "zero_once"):
        raise error(ValueError, f"T.alloc_global: init must be 'empty', 'zero' or 'zero_once', "
                                f"got {init!r}")
    return _alloc("T.alloc_global", shape, dtype, "global", init=init)


# --- loops -----------------------------------------------------------------

def serial(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) \
        -> LoopRange:
    return serial_range("T.serial", "serial", start, stop, 1 if step is None else step)


Serial = serial  # TileLang's other spelling


def unroll(start: Any, stop: Any = None, step: Any = None, *, explicit: bool = False,
           unroll_factor: Any = None, annotations: Any = None) -> LoopRange:
    return serial_range("T.unroll", "unroll", start, stop, 1 if step is None else step)


def vectorized(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopRange:
    return serial_range("T.vectorized", "vectorized", start, stop)


Unroll = unroll  # TileLang's other spellings
Vectorized = vectorized


def Pipelined(start: Any, stop: Any = None, num_stages: int = 0, order: Any = None,  # noqa: N802
              stage: Any = None, sync: Any = None, group: Any = None,
              annotations: Any = None) -> LoopRange:
    """A loop whose iterations the compiler may overlap in `num_stages`
    stages (copies of iteration k + 1 during the compute of iteration k).
    num_stages 0 is a serial loop. `order`, `stage` and `group` are
    TileLang's schedule of the body's statements (ir::PipelineSchedule):
    the groups' places in an iteration and how many iterations behind each
    runs; `sync` is accepted and has no effect (tilejit places barriers)."""
    if not isinstance(num_stages, int) or isinstance(num_stages, bool) or num_stages < 0:
        raise error(ValueError, f"T.Pipelined: num_stages must be an int >= 0, "
                                f"got {num_stages!r}")
    kind = "pipelined" if num_stages > 0 else "serial"
    lr = serial_range("T.Pipelined", kind, start, stop, 1, num_stages)
    if order is not None or stage is not None or group is not None:
        if order is None or stage is None:
            raise error(ValueError, "T.Pipelined: order= and stage= go together")
        lr.schedule = (_int_list(order, "order"), _int_list(stage, "stage"),
                       [_int_list(g, "group") for g in (group or [])])
    return lr


def _int_list(v: Any, what: str) -> List[int]:
    if not isinstance(v, (list, tuple)) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise error(TypeError, f"T.Pipelined: {what}= must be a list of ints, got {v!r}")
    return list(v)


def Parallel(*extents: Any, coalesced_width: Any = None, loop_layout: Any = None,  # noqa: N802
             prefer_async: Any = None, annotations: Any = None) -> LoopRange:
    """Nested parallel loops over `extents`: ``for i, j in T.Parallel(M, N)``."""
    if not extents:
        raise error(ValueError, "T.Parallel needs at least one extent")
    return LoopRange("T.Parallel", "parallel", [(0, e) for e in extents])


# --- tile ops --------------------------------------------------------------

def _region(op: str, what: str, x: Any) -> Region:
    if isinstance(x, Region):
        return x
    if isinstance(x, BufferProxy):
        return Region(x, None)
    if isinstance(x, Value) and x._load is not None:
        buf, idx = x._load
        return Region(buf, [(i, None) for i in idx])
    raise error(TypeError, f"{op}: the {what} must be a buffer, a slice A[i:i + n, :] or a start "
                           f"corner A[i, j], got {_describe(x)}")


def _describe(x: Any) -> str:
    if isinstance(x, Value):
        return f"the expression '{x!r}'"
    return f"{type(x).__name__} {x!r}"


def _region_handle(tr: Any, r: Region) -> Any:
    prefix = getattr(r.buffer, "core_prefix", None)
    if prefix is not None:
        # A UB buffer, one per vector core (ascend.py, Note [Cube and vector
        # in lockstep]): the region of the core running.
        inner = r.ranges if r.ranges is not None else [(0, e) for e in r.buffer.shape]
        return _core_region(tr, r, prefix, inner)
    if r.ranges is None:
        return (r.buffer.buf, None)
    ranges = []
    for mn, ext in r.ranges:
        hmin = to_handle(tr, mn, "int32", "region bound")
        hext = None if ext is None else to_handle(tr, ext, tr.b.dtype(hmin), "region extent")
        ranges.append((hmin, hext))
    return (r.buffer.buf, ranges)


def _core_region(tr: Any, r: Region, prefix: Any, inner: Any) -> Any:
    one = tr.b.const(1, "int32")
    ranges = [(prefix.h, one)]
    for mn, ext in inner:
        hmin = to_handle(tr, mn, "int32", "region bound")
        hext = None if ext is None else to_handle(tr, ext, tr.b.dtype(hmin), "region extent")
        ranges.append((hmin, hext))
    return (r.buffer.buf, ranges)


def _per_core(tr: Any, buffers: Any, emit: Any) -> Any:
    """ascend.per_core for a statement on Ascend buffers, else emit()."""
    state = getattr(tr, "npu_state", None)
    if state is None or not any(getattr(x, "core_prefix", None) is not None for x in buffers):
        return emit()
    return state["per_core"](tr, buffers, emit)


def copy(src: Any, dst: Any, coalesced_width: Any = None, disable_tma: bool = False,
         eviction_policy: Any = None, **options: Any) -> None:
    """Copies a region into another of the same shape, converting the dtype;
    elements outside a tensor are neither read (they read as 0) nor
    written. Each side is a whole buffer, a slice or a start corner."""
    span = user_span()
    tr = current_tracer("T.copy")
    s, d = _region("T.copy", "source", src), _region("T.copy", "destination", dst)
    for side in (s, d):
        # An Ascend on-chip buffer (ascend.NpuBuffer) allows its core's paths only.
        check = getattr(side.buffer, "check_copy", None)
        if check is not None:
            check(s, d)
            break
    b = tr.tile("T.copy", span)
    if s.buffer.remap is not None or d.buffer.remap is not None:
        elementwise_copy(s, d, span)  # Note [Remapped globals]
        return
    if options.get("enable_relu"):
        # TileLang-Ascend's L0C -> GM copy with a ReLU on the way (ascend.py).
        state = getattr(tr, "npu_state", None)
        if state is None:
            raise error(ValueError, "T.copy: enable_relu is TileLang-Ascend's, valid inside a "
                                    "T.Kernel(..., is_npu=True) block", span)
        state["copy_relu"](s, d)
        return
    if not isinstance(disable_tma, (bool, int)):
        raise error(TypeError, f"T.copy: disable_tma must be a bool, got "
                               f"{type(disable_tma).__name__}", span)
    _per_core(tr, (s.buffer, d.buffer),
              lambda: b.copy(_region_handle(tr, s), _region_handle(tr, d), span,
                             bool(disable_tma)))


class GemmWarpPolicy(enum.IntEnum):
    """How T.gemm splits its tile among a block's warps (CUDA)."""
    Square = 0
    FullRow = 1
    FullCol = 2


def gemm(A: Any, B: Any, C: Any, transpose_A: bool = False, transpose_B: bool = False,  # noqa: N803
         policy: Any = GemmWarpPolicy.Square, clear_accum: bool = False, k_pack: int = 1,
         wg_wait: int = 0, mbar: Any = None) -> None:
    """C += A @ B on tiles (A, B shared or fragment, C a fragment), with A
    and B optionally transposed; clear_accum zeroes C first."""
    span = user_span()
    tr = current_tracer("T.gemm")
    ra, rb, rc = (_region("T.gemm", n, x) for n, x in (("A operand", A), ("B operand", B),
                                                        ("C operand", C)))
    for flag, value in (("transpose_A", transpose_A), ("transpose_B", transpose_B),
                        ("clear_accum", clear_accum)):
        if is_symbolic(value) or not isinstance(value, (bool, int)):
            raise error(TypeError, f"T.gemm: {flag} must be a Python bool, got {_describe(value)}",
                        span)
    try:
        policy_value = int(GemmWarpPolicy(policy))
    except (ValueError, TypeError):
        raise error(ValueError, f"T.gemm: policy must be a T.GemmWarpPolicy, got {policy!r}",
                    span) from None
    check_not_remapped("T.gemm", ra, rb, rc)
    b = tr.tile("T.gemm", span)
    b.gemm(_region_handle(tr, ra), _region_handle(tr, rb), _region_handle(tr, rc),
           bool(transpose_A), bool(transpose_B), bool(clear_accum), policy_value, span)


def fill(buffer: Any, value: Any, annotations: Any = None) -> None:
    """Sets every element of a buffer or region to `value`."""
    span = user_span()
    tr = current_tracer("T.fill")
    r = _region("T.fill", "destination", buffer)
    check_not_remapped("T.fill", r)
    b = tr.tile("T.fill", span)
    h = to_handle(tr, value, r.buffer.dtype, "fill value")
    if b.dtype(h) != r.buffer.dtype:
        h = b.cast(r.buffer.dtype, h)
    _per_core(tr, (r.buffer,), lambda: b.fill(_region_handle(tr, r), h, span))


def clear(buffer: Any, annotations: Any = None) -> None:
    """T.fill(buffer, 0)."""
    span = user_span()
    tr = current_tracer("T.clear")
    r = _region("T.clear", "destination", buffer)
    check_not_remapped("T.clear", r)
    b = tr.tile("T.clear", span)
    h = to_handle(tr, 0, r.buffer.dtype)
    _per_core(tr, (r.buffer,), lambda: b.fill(_region_handle(tr, r), h, span))


_REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


def reduce(buffer: Any, out: Any, reduce_type: str, dim: int = -1, clear: bool = True) -> None:
    """Reduces `buffer` along `dim` into `out` (its shape without `dim`);
    clear=False accumulates into out's current values."""
    op = f"T.reduce_{reduce_type}" if reduce_type in _REDUCE_KINDS else "T.reduce"
    span = user_span()
    tr = current_tracer(op)
    if reduce_type not in _REDUCE_KINDS:
        raise error(ValueError, f"T.reduce: unknown reduce_type {reduce_type!r}; expected one of "
                                f"{', '.join(_REDUCE_KINDS)}", span)
    src, dst = _region(op, "source", buffer), _region(op, "destination", out)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise error(TypeError, f"{op}: dim must be an int, got {_describe(dim)}", span)
    rank = src.buffer.ndim if src.ranges is None else len(src.ranges)
    if not -rank <= dim < rank:
        raise error(ValueError, f"{op}: dim {dim} is out of range for the {rank}-d source "
                                f"{src.buffer.name}", span)
    if is_symbolic(clear) or not isinstance(clear, (bool, int)):
        raise error(TypeError, f"{op}: clear must be a Python bool, got {_describe(clear)}", span)
    check_not_remapped(op, src, dst)
    b = tr.tile(op, span)
    axis = dim + rank if dim < 0 else dim
    if getattr(src.buffer, "core_prefix", None) is not None:
        # A UB buffer, one per vector core (ascend.py, Note [Cube and vector in lockstep]).
        tr.npu_state["reduce"](tr, op, src, dst, reduce_type, axis, bool(clear))
        return
    b.reduce(reduce_type, _region_handle(tr, src), _region_handle(tr, dst), axis, bool(clear),
             span)


def reduce_sum(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               annotations: Any = None) -> None:
    reduce(buffer, out, "sum", dim, clear)


def reduce_max(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               annotations: Any = None) -> None:
    reduce(buffer, out, "max", dim, clear)


def reduce_min(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               annotations: Any = None) -> None:
    reduce(buffer, out, "min", dim, clear)


def reduce_abssum(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  annotations: Any = None) -> None:
    reduce(buffer, out, "abssum", dim, clear)


def reduce_absmax(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  annotations: Any = None) -> None:
    reduce(buffer, out, "absmax", dim, clear)


def atomic_add(dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False,
               use_tma: bool = False) -> None:
    """Atomically adds `value` to `dst`: an element (``C[i, j]``) and a
    scalar, or a region and a region of the same shape."""
    span = user_span()
    tr = current_tracer("T.atomic_add")
    if return_prev:
        raise error(ValueError, "T.atomic_add: return_prev=True is not supported", span)
    r = _region("T.atomic_add", "destination", dst)
    if isinstance(value, (BufferProxy, Region)) and not isinstance(value, VarBuffer):
        src = _region("T.atomic_add", "source", value)
        check_not_remapped("T.atomic_add of a region", r, src)
        b = tr.tile("T.atomic_add", span)
        b.atomic_add(_region_handle(tr, r), _region_handle(tr, src), span)
        return
    b = tr.tile("T.atomic_add", span)
    h = to_handle(tr, value, r.buffer.dtype, "value")
    if b.dtype(h) != r.buffer.dtype:
        h = b.cast(r.buffer.dtype, h)
    if r.ranges is not None and all(ext is None for _, ext in r.ranges):
        r = Region(r.buffer, [(mn, 1) for mn, _ in r.ranges])  # one element
    if r.buffer.remap is not None:
        if r.ranges is None or any(static_value(ext) != 1 for _, ext in r.ranges):
            check_not_remapped("T.atomic_add of a region", r)
        r = remapped_element(r)  # Note [Remapped globals]
    b.atomic_add(_region_handle(tr, r), h, span)


def print(obj: Any, msg: str = "", warp_group_id: int = 0, warp_id: int = 0) -> None:  # noqa: A001
    """Prints a value or a buffer from the kernel, with `msg` in front."""
    span = user_span()
    tr = current_tracer("T.print")
    b = tr.tile("T.print", span)
    if isinstance(obj, (BufferProxy, Region)) and not isinstance(obj, VarBuffer):
        b.print(_region_handle(tr, _region("T.print", "value", obj)), msg, span)
    else:
        b.print(to_handle(tr, obj, what="value"), msg, span)


def sync_threads() -> None:
    """A barrier of the block's threads (of a thread range's, under one):
    what every thread stored before it, in shared or global memory, is seen
    by every thread after it. The compiler puts the barriers that shared
    tiles need by itself; this one is the author's, as in TileLang. Every
    thread of the group must reach it: under a thread-dependent condition
    that is not a range of threads, or inside a T.Parallel loop, it is an
    error at its line."""
    span = user_span()
    tr = current_tracer("T.sync_threads")
    tr.tile("T.sync_threads", span).sync_threads(span)


def use_swizzle(panel_size: int, order: str = "row", enable: bool = True) -> None:
    """Block rasterisation: the kernel's blocks take their (bx, by) in
    TileLang's order (panels of `panel_size` rows, or columns for
    order="col"; TileLang spells it "column", also accepted), so blocks that
    run together share their tiles in L2. It applies to the whole kernel,
    wherever it is called; enable=False records nothing. It never changes a
    kernel's results: CUDA remaps the block indices, the CPU ignores it."""
    span = user_span()
    if not isinstance(panel_size, int) or isinstance(panel_size, bool) or panel_size <= 0:
        raise error(ValueError, f"T.use_swizzle: panel_size must be a positive int, "
                                f"got {panel_size!r}")
    if order not in ("row", "col", "column"):
        raise error(ValueError, f"T.use_swizzle: order must be 'row', 'col' or 'column', "
                                f"got {order!r}")
    tr = current_tracer("T.use_swizzle")
    if not tr.in_kernel():
        raise error(ValueError, "T.use_swizzle is only valid inside a T.Kernel block")
    if not enable:
        return
    b = tr.tile("T.use_swizzle", span)
    b.use_swizzle(panel_size, "row" if order == "row" else "col", True, span)


def get_thread_binding(dim: int = 0) -> Value:
    """The thread's own index along dimension `dim` of the block (Note
    [Thread semantics]: every statement runs on every thread, on both
    targets)."""
    if not isinstance(dim, int) or not 0 <= dim <= 2:
        raise error(ValueError, f"T.get_thread_binding: dim must be 0, 1 or 2, got {dim!r}")
    return current_tracer("T.get_thread_binding").thread_binding(dim)


def get_block_binding(dim: int = 0) -> Value:
    """The block's index along dimension `dim` of the grid: the bx, by or bz
    that `with T.Kernel(...) as ...` binds."""
    if not isinstance(dim, int) or not 0 <= dim <= 2:
        raise error(ValueError, f"T.get_block_binding: dim must be 0, 1 or 2, got {dim!r}")
    return current_tracer("T.get_block_binding").block_binding(dim)


def index_to_coordinates(index: Any, shape: Any) -> List[Any]:
    """The coordinates of the flat (row-major) `index` in `shape`, as
    TileLang's helper gives them: the last dimension fastest."""
    coordinates = []
    for extent in reversed(list(shape)):
        coordinates.append(index % extent)
        index = index // extent
    coordinates.reverse()
    return coordinates


# --- scalar math -----------------------------------------------------------

def cast(value: Any, dtype: Any) -> Any:
    """``T.cast(x, "float32")``: x converted."""
    return _cast(value, dtype)


def Cast(dtype: Any, value: Any) -> Any:  # noqa: N802 (TVM's spelling)
    return _cast(value, dtype)


def max(a: Any, b: Any) -> Any:  # noqa: A001
    return min_max("max", a, b)


def min(a: Any, b: Any) -> Any:  # noqa: A001
    return min_max("min", a, b)


def clamp(value: Any, lo: Any, hi: Any) -> Any:
    """value clamped into [lo, hi]: T.max(T.min(value, hi), lo), as TileLang's."""
    return min_max("max", min_max("min", value, hi), lo)


def ceildiv(a: Any, b: Any) -> Any:
    """ceil(a / b); an int when both are ints."""
    return int_op("ceildiv", a, b)


cdiv = ceildiv  # TileLang's other spelling


def floordiv(a: Any, b: Any) -> Any:
    return int_op("floordiv", a, b)


def floormod(a: Any, b: Any) -> Any:
    return int_op("floormod", a, b)


def _unary(name: str, fn: Any) -> Any:
    def op(x: Any) -> Any:
        if not isinstance(x, (Value, VarBuffer)) and isinstance(x, (int, float)) and \
                not isinstance(x, bool):
            tr = active()
            if tr is None:
                return fn(x)
        return call_intrinsic(name, x)
    op.__name__ = name
    op.__doc__ = f"T.{name}(x) of a scalar expression."
    return op


def _rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


exp = _unary("exp", math.exp)
exp2 = _unary("exp2", lambda x: 2.0 ** x)
log = _unary("log", math.log)
log2 = _unary("log2", math.log2)
sqrt = _unary("sqrt", math.sqrt)
rsqrt = _unary("rsqrt", _rsqrt)
tanh = _unary("tanh", math.tanh)
sigmoid = _unary("sigmoid", _sigmoid)
abs = _unary("abs", lambda x: x if x >= 0 else -x)  # noqa: A001


def if_then_else(cond: Any, then_value: Any, else_value: Any) -> Any:
    """cond ? then_value : else_value, both evaluated (a Select)."""
    tr = current_tracer("T.if_then_else")
    return tr.ifexp(cond, lambda: then_value, lambda: else_value)


def infinity(dtype: Any) -> Value:
    """+inf of a float dtype."""
    name = dtypes.dtype_name(dtype)
    if not dtypes.is_float(name):
        raise error(TypeError, f"T.infinity: {name} is not a float dtype")
    tr = current_tracer("T.infinity")
    tr.ensure_builder()
    return Value(tr.b.const(float("inf"), name))


def ninf(dtype: Any) -> Value:
    """-inf of a float dtype."""
    return -infinity(dtype)


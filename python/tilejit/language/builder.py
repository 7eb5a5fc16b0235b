"""The face of the C++ tile builder (``tilejit._C.TileBuilder``) that the
tracer records into.

The tracer speaks one small protocol, whatever builder is behind it:
expressions are opaque handles made by ``const``, ``symbol`` (a signature
``_C.Expr``), ``binary(op, a, b)``, ``unary("not" or "bitnot", a)``, ``select``,
``cast``, ``call`` (an intrinsic), ``load``; ``dtype(h)`` and ``text(h)``
read them back. Statements mirror the C++ builder
(tile_builder.h) one to one, each with a span ``(file, line, col)``.
Regions are ``(buffer, ranges)`` with ranges None for a whole buffer, else
one ``(min, extent)`` per dimension, extent None for a start corner.

``use_builder(factory)`` swaps the builder for a block of code (tests record
with a fake one).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, List, Optional, Tuple

from .. import _C

__all__ = ["make_builder", "use_builder", "CBuilder"]

_local = threading.local()


_OPERATORS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "and": lambda a, b: _C.logical_and(a, b), "or": lambda a, b: _C.logical_or(a, b),
    "min": lambda a, b: _C.min(a, b), "max": lambda a, b: _C.max(a, b),
    "ceildiv": lambda a, b: _C.ceildiv(a, b),
    "bitand": lambda a, b: _C.binary("bitand", a, b),
    "bitor": lambda a, b: _C.binary("bitor", a, b),
    "bitxor": lambda a, b: _C.binary("bitxor", a, b),
    "shl": lambda a, b: _C.binary("shl", a, b),
    "shr": lambda a, b: _C.binary("shr", a, b),
}


def _span(span: Tuple[str, int, int]) -> Optional[Tuple[str, int, int]]:
    return span if span and span[1] > 0 else None


def _region(r: Tuple[Any, Optional[List[Tuple[Any, Any]]]]) -> Any:
    buf, ranges = r
    if ranges is None:
        return _C.whole(buf)
    if all(extent is None for _, extent in ranges):
        return _C.corner(buf, [mn for mn, _ in ranges])
    # A slice's extent is stop - start as written (A[i * 4:i * 4 + 4]):
    # simplified, it is the constant the verifier and the lowering want.
    return _C.region(buf, [(mn, _C.simplify(extent)) for mn, extent in ranges])


class CBuilder:
    """The protocol over ``_C.TileBuilder`` and the ``_C`` expression
    makers (python/src/ir_builder.cpp)."""

    def __init__(self, name: str) -> None:
        self._b = _C.TileBuilder(name)

    # --- expressions -------------------------------------------------------
    def const(self, value: Any, dtype: str) -> Any:
        return _C.const(value, dtype)

    def symbol(self, expr: Any) -> Any:
        return expr

    def binary(self, op: str, a: Any, b: Any) -> Any:
        return _OPERATORS[op](a, b)

    def unary(self, op: str, a: Any) -> Any:
        return _C.bitwise_not(a) if op == "bitnot" else _C.logical_not(a)

    def select(self, c: Any, t: Any, f: Any) -> Any:
        return _C.select(c, t, f)

    def cast(self, dtype: str, a: Any) -> Any:
        return _C.cast(dtype, a)

    def call(self, name: str, args: List[Any]) -> Any:
        return _C.call_intrinsic(name, args)

    def load(self, buf: Any, indices: List[Any]) -> Any:
        return _C.load(buf, indices)

    def dtype(self, h: Any) -> str:
        return h.dtype

    def text(self, h: Any) -> str:
        return str(h)

    # --- statements --------------------------------------------------------
    def tensor_param(self, name, shape, dtype, span):
        return self._b.tensor_param(name, shape, dtype, _span(span))

    def scalar_param(self, name, dtype, span):
        return self._b.scalar_param(name, dtype, _span(span))

    def begin_kernel(self, grid, threads, span):
        return list(self._b.begin_kernel(grid, threads, _span(span)))

    def end_kernel(self, span):
        self._b.end_kernel(_span(span))

    def thread_binding(self, dim, span):
        return self._b.thread_binding(dim, _span(span))

    def use_swizzle(self, panel_size, order, enable, span):
        self._b.use_swizzle(panel_size, order, enable, _span(span))

    def alloc(self, name, shape, dtype, scope, span):
        return self._b.alloc(name, shape, dtype, scope, _span(span))

    def alloc_global(self, name, shape, dtype, init, span):
        return self._b.alloc_global(name, shape, dtype, init, _span(span))

    def begin_for(self, name, mn, extent, kind, stages, span):
        return self._b.begin_for(name, mn, extent, kind, stages, _span(span))

    def end_for(self, span):
        self._b.end_for(_span(span))

    def set_pipeline_schedule(self, order, stage, group, span):
        self._b.set_pipeline_schedule(order, stage, group, _span(span))

    def set_loop_origin(self, op, reason, span):
        self._b.set_loop_origin(op, reason, _span(span))

    def begin_if(self, cond, span):
        self._b.begin_if(cond, _span(span))

    def begin_else(self, span):
        self._b.begin_else(_span(span))

    def end_if(self, span):
        self._b.end_if(_span(span))

    def begin_while(self, cond, span):
        self._b.begin_while(cond, _span(span))

    def end_while(self, span):
        self._b.end_while(_span(span))

    def break_loop(self, span):
        self._b.break_loop(_span(span))

    def continue_loop(self, span):
        self._b.continue_loop(_span(span))

    def sync_threads(self, span):
        self._b.sync_threads(_span(span))

    def store(self, buf, indices, value, span):
        self._b.store(buf, indices, value, _span(span))

    def let(self, name, value, span):
        return self._b.let(name, value, _span(span))

    def evaluate(self, value, span):
        self._b.evaluate(value, _span(span))

    def copy(self, src, dst, span, disable_tma=False):
        self._b.copy(_region(src), _region(dst), _span(span), disable_tma)

    def gemm(self, a, b, c, trans_a, trans_b, clear_accum, policy, span):
        self._b.gemm(_region(a), _region(b), _region(c), trans_a, trans_b, clear_accum, policy,
                     _span(span))

    def fill(self, dst, value, span):
        self._b.fill(_region(dst), value, _span(span))

    def reduce(self, kind, src, dst, dim, clear, span):
        self._b.reduce(kind, _region(src), _region(dst), dim, clear, _span(span))

    def atomic_add(self, dst, value, span):
        if isinstance(value, tuple):
            value = _region(value)
        self._b.atomic_add(_region(dst), value, _span(span))

    def print(self, value, msg, span):
        if isinstance(value, tuple):
            value = _region(value)
        self._b.print(value, msg, _span(span))

    def set_dialect(self, dialect: str) -> None:
        self._b.set_dialect(dialect)

    def finish(self, span):
        return self._b.finish(_span(span))


def _default_factory(name: str) -> Any:
    return CBuilder(name)


def make_builder(name: str) -> Any:
    factory = getattr(_local, "factory", None) or _default_factory
    return factory(name)


@contextlib.contextmanager
def use_builder(factory: Callable[[str], Any]) -> Iterator[None]:
    """Prim_funcs declared inside the block record into `factory(name)`."""
    previous = getattr(_local, "factory", None)
    _local.factory = factory
    try:
        yield
    finally:
        _local.factory = previous

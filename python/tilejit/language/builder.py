"""The face of the C++ tile builder (``tilejit._C.TileBuilder``) that the
tracer records into.

The tracer speaks one small protocol, whatever builder is behind it:
expressions are opaque handles made by ``const``, ``symbol`` (a signature
``_C.Expr``), ``binary(op, a, b)``, ``unary("not", a)``, ``select``,
``cast``, ``call`` (an intrinsic), ``load``; ``dtype(h)``, ``has_load(h)``
and ``text(h)`` read them back. Statements mirror the C++ builder
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

__all__ = ["make_builder", "use_builder", "cast", "CBuilder"]

_local = threading.local()


def cast(value: Any, dtype: str) -> Any:
    from .values import cast as _cast
    return _cast(value, dtype)


class CBuilder:
    """The protocol over ``_C.TileBuilder`` and the ``_C`` expression
    makers."""

    def __init__(self, name: str) -> None:
        self._b = _C.TileBuilder(name)

    # --- expressions -------------------------------------------------------
    def const(self, value: Any, dtype: str) -> Any:
        if dtype in ("float64", "float32", "float16", "bfloat16"):
            return _C.float_imm(float(value), dtype)
        return _C.int_imm(int(value), dtype)

    def symbol(self, expr: Any) -> Any:
        return expr

    def binary(self, op: str, a: Any, b: Any) -> Any:
        return _C.binary(op, a, b)

    def unary(self, op: str, a: Any) -> Any:
        return _C.logical_not(a)

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

    def has_load(self, h: Any) -> bool:
        return _C.contains_load(h)

    def text(self, h: Any) -> str:
        return str(h)

    # --- regions -----------------------------------------------------------
    @staticmethod
    def _region(r: Tuple[Any, Optional[List[Tuple[Any, Any]]]]) -> Any:
        buf, ranges = r
        return _C.Region(buf, [] if ranges is None else list(ranges))

    # --- statements --------------------------------------------------------
    def tensor_param(self, name, shape, dtype, span):
        return self._b.tensor_param(name, shape, dtype, span)

    def scalar_param(self, name, dtype, span):
        return self._b.scalar_param(name, dtype, span)

    def begin_kernel(self, grid, threads, span):
        return list(self._b.begin_kernel(grid, threads, span))

    def end_kernel(self, span):
        self._b.end_kernel(span)

    def thread_binding(self, dim, span):
        return self._b.thread_binding(dim, span)

    def alloc(self, name, shape, dtype, scope, span):
        return self._b.alloc(name, shape, dtype, scope, span)

    def alloc_global(self, name, shape, dtype, init, span):
        return self._b.alloc_global(name, shape, dtype, init, span)

    def begin_for(self, name, mn, extent, kind, stages, span):
        return self._b.begin_for(name, mn, extent, kind, stages, span)

    def end_for(self, span):
        self._b.end_for(span)

    def begin_if(self, cond, span):
        self._b.begin_if(cond, span)

    def begin_else(self, span):
        self._b.begin_else(span)

    def end_if(self, span):
        self._b.end_if(span)

    def begin_while(self, cond, span):
        self._b.begin_while(cond, span)

    def end_while(self, span):
        self._b.end_while(span)

    def break_loop(self, span):
        self._b.break_loop(span)

    def continue_loop(self, span):
        self._b.continue_loop(span)

    def store(self, buf, indices, value, span):
        self._b.store(buf, indices, value, span)

    def let(self, name, value, span):
        return self._b.let(name, value, span)

    def evaluate(self, value, span):
        self._b.evaluate(value, span)

    def copy(self, src, dst, span):
        self._b.copy(self._region(src), self._region(dst), span)

    def gemm(self, a, b, c, trans_a, trans_b, clear_accum, policy, span):
        self._b.gemm(self._region(a), self._region(b), self._region(c), trans_a, trans_b,
                     clear_accum, policy, span)

    def fill(self, dst, value, span):
        self._b.fill(self._region(dst), value, span)

    def reduce(self, kind, src, dst, dim, clear, span):
        self._b.reduce(kind, self._region(src), self._region(dst), dim, clear, span)

    def atomic_add(self, dst, value, span):
        if isinstance(value, tuple):
            value = self._region(value)
        self._b.atomic_add(self._region(dst), value, span)

    def print(self, value, msg, span):
        if isinstance(value, tuple):
            value = self._region(value)
        self._b.print(value, msg, span)

    def finish(self, span):
        return self._b.finish(span)


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

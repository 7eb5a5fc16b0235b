"""``@T.macro`` helpers and the annotations of their parameters.

A macro is traced where a prim_func body calls it, with the same rewrite as
the body, so its ``if`` and ``for`` may be symbolic and its statements land
in the caller's frame: the helper is inlined. Its parameters are plain
Python values (buffers, expressions, ints); the annotations TileLang writes
on them, ``T.SharedBuffer(shape, dtype)``, ``T.FragmentBuffer(...)``,
``T.LocalBuffer(...)``, ``T.Tensor(...)`` and scalar dtypes, are checked
where the macro is called: a buffer argument must have the annotated scope,
dtype and rank (an error at the call names the macro, the parameter and the
buffer). Scalar annotations (``T.int32``) accept any value.
"""

from __future__ import annotations

import inspect
from typing import Any

from . import rewrite as _rewrite
from .active import active
from .dtypes import dtype_name
from .spans import error
from .values import BufferProxy


class BufferType:
    """The annotation of a buffer parameter of a macro: a scope, a shape and
    a dtype, as ``T.SharedBuffer([block_M, dim], dtype)`` writes it."""

    def __init__(self, kind: str, scope: str, shape: Any, dtype: Any = "float32") -> None:
        self.kind = kind
        self.scope = scope
        self.shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        self.dtype = dtype_name(dtype)

    def __repr__(self) -> str:
        dims = ", ".join(repr(d) for d in self.shape)
        return f"T.{self.kind}([{dims}], {self.dtype!r})"


def SharedBuffer(shape: Any, dtype: Any = "float32") -> BufferType:  # noqa: N802
    """``T.SharedBuffer(shape, dtype)``: a macro parameter that is a shared tile."""
    return BufferType("SharedBuffer", "shared", shape, dtype)


def FragmentBuffer(shape: Any, dtype: Any = "float32") -> BufferType:  # noqa: N802
    """``T.FragmentBuffer(shape, dtype)``: a macro parameter that is a fragment."""
    return BufferType("FragmentBuffer", "fragment", shape, dtype)


def LocalBuffer(shape: Any, dtype: Any = "float32") -> BufferType:  # noqa: N802
    """``T.LocalBuffer(shape, dtype)``: a macro parameter that is a local buffer."""
    return BufferType("LocalBuffer", "local", shape, dtype)


def _check_argument(macro_name: str, param: str, want: BufferType, arg: Any) -> None:
    where = f"T.macro {macro_name}: parameter {param} is a {want!r}"
    if not isinstance(arg, BufferProxy):
        raise error(TypeError, f"{where}; got {type(arg).__name__} {arg!r}")
    if arg.scope_name != want.scope:
        raise error(TypeError, f"{where}; got the {arg.scope_name} buffer {arg.name}")
    if arg.dtype != want.dtype:
        raise error(TypeError, f"{where}; got {arg.name} of dtype {arg.dtype}")
    if arg.ndim != len(want.shape):
        raise error(TypeError, f"{where}; got {arg.name} with {arg.ndim} dimension"
                               f"{'s' if arg.ndim != 1 else ''}")


def _buffer_annotations(fn: Any) -> dict:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    return {name: p.annotation for name, p in params.items()
            if isinstance(p.annotation, BufferType)}


def macro(fn: Any = None, **options: Any) -> Any:
    """``@T.macro``: a helper traced where a prim_func body calls it, with
    the same rewrite as the body (so its ``if`` and ``for`` may be symbolic).
    Its parameters are plain Python values: buffers, expressions, ints."""
    if fn is None:
        return lambda f: macro(f, **options)
    checks = _buffer_annotations(fn)
    signature = inspect.signature(fn) if checks else None

    def call(*args: Any, **kwargs: Any) -> Any:
        tr = active()
        if tr is None:
            raise RuntimeError(f"the T.macro {fn.__name__} is only callable inside a function "
                               f"decorated with @T.prim_func")
        if checks:
            bound = signature.bind(*args, **kwargs)
            for name, want in checks.items():
                if name in bound.arguments:
                    _check_argument(fn.__name__, name, want, bound.arguments[name])
        return _rewrite.rewritten(fn, tr, fn.__name__)(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", "macro")
    call.__doc__ = getattr(fn, "__doc__", None)
    call.__wrapped__ = fn
    return call

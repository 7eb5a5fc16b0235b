"""Declaring a kernel: symbols, parameter types, ``T.prim_func``, ``T.Kernel``
and phase 1's ``T.source``.

``T.prim_func`` reads the signature from the annotations, rewrites the body
(rewrite.py) and runs it once with parameter proxies (tracer.py). The body
is then either phase 1's source text per target (``T.source``) or a tile
body recorded into the builder (builder.py); either way the result is a
``tilejit.PrimFunc``.
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple, Union

from .. import _C
from . import builder as _builder
from . import rewrite as _rewrite
from . import tracer as _tracer
from .active import active, factory_name, tracing
from .ascend import NeedsLockstep, enter_npu_kernel, exit_npu_kernel
from .ascend_concurrent import NeedsConcurrent, Survey
from .dtypes import DType, dtype_name
from .remap import make_view
from .spans import Span, annotated_parameter, error, strip_internal_frames, user_span

Expr = _C.Expr
PrimFunc = _C.PrimFunc


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def symbolic(name: str, dtype: Any = "int64") -> Any:
    """A dynamic dimension, bound at each call from the inputs' shapes.

    Symbols are identified by name: ``T.symbolic("b")`` twice is one symbol.
    ``dtype`` is accepted for compatibility with TileLang; symbols are int64.
    Several names at once (``T.symbolic("m, n")``) give a tuple.
    """
    if "," in name or " " in name.strip():
        names = [n for n in name.replace(",", " ").split() if n]
        return tuple(Expr.var(n) for n in names)
    return Expr.var(name)


def dynamic(name: str, dtype: Any = "int32") -> Any:
    """TileLang's newer name of T.symbolic."""
    return symbolic(name, dtype)


# (kernel, parameter, span) while a string annotation (`from __future__
# import annotations`) is evaluated: its T.Tensor runs inside eval.
_resolving = threading.local()


def _shape_error(what: str, problem: str) -> BaseException:
    """A bad T.Tensor shape: at the author's line and, for a parameter's
    annotation, naming the function and the parameter."""
    owner: Optional[Tuple[str, str, Span]] = getattr(_resolving, "owner", None)
    if owner is not None:
        kernel, param, span = owner
    else:
        span = user_span()
        found = annotated_parameter(span)
        kernel, param = found if found is not None else (None, None)
    prefix = f"{kernel}: parameter '{param}': " if kernel is not None else ""
    e = error(TypeError, f"{prefix}{what}: {problem}", span)
    if owner is not None:
        _resolving.shape_error = e
    return e


def _shape_tuple(shape: Any, what: str) -> Tuple[Union[int, Expr], ...]:
    if _is_int(shape) or isinstance(shape, Expr):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise _shape_error(what, f"the shape must be a list of ints and T.symbolic "
                                 f"expressions, got {type(shape).__name__}") from None
    for d, dim in enumerate(dims):
        if isinstance(dim, float):
            raise _shape_error(what, f"dimension {d} is the float {dim!r}; a dimension is an "
                                     f"int or a T.symbolic expression (// divides ints)")
        if not (_is_int(dim) or isinstance(dim, Expr)):
            raise _shape_error(what, f"dimension {d} must be an int or a T.symbolic "
                                     f"expression, got {type(dim).__name__}")
    return dims


class TensorType:
    """The annotation of a tensor parameter: a shape of ints and symbolic
    expressions, and a dtype."""

    def __init__(self, shape: Any, dtype: Any = "float32") -> None:
        self.shape = _shape_tuple(shape, "T.Tensor")
        self.dtype = dtype_name(dtype)

    def __repr__(self) -> str:
        dims = ", ".join(repr(d) for d in self.shape)
        return f"T.Tensor([{dims}], {self.dtype!r})"


def Tensor(shape: Any, dtype: Any = "float32", data: Any = None) -> Any:  # noqa: N802
    """``T.Tensor([b, s, heads, dim], "bfloat16")``: a tensor parameter's type
    (TileLang's name). With ``data`` (``X.data`` of a tensor X), inside a
    kernel: a row-major view of X's storage with this shape (remap.py)."""
    if data is not None:
        t = TensorType(shape, dtype)
        return make_view(t.shape, t.dtype, data)
    return TensorType(shape, dtype)


Buffer = Tensor


class Kernel:
    """``with T.Kernel(*grid, threads=128) as (bx, by):`` a launch: one to
    three grid extents (ints or symbolic expressions) and the threads per
    block, an int or a tuple of up to three (CUDA; the CPU runs a block on
    one thread). Yields the block indices, one per grid extent."""

    def __init__(self, *grid: Any, threads: Any = 128, is_cpu: bool = False,
                 prelude: Optional[str] = None, is_npu: bool = False) -> None:
        # is_cpu: accepted for TileLang compatibility; the target decides.
        # is_npu: TileLang-Ascend's kernel, yielding (cid, vid) (ascend.py).
        self.grid = list(grid)
        self.threads = threads
        self.is_npu = bool(is_npu)
        self._span = user_span()
        self._tracer: Any = None

    def __enter__(self) -> Any:
        tr = active()
        if tr is None:
            raise RuntimeError("T.Kernel is only valid inside a function decorated with "
                               "@T.prim_func")
        self._tracer = tr
        if self.is_npu:
            return enter_npu_kernel(tr, self.grid, self._span)
        return tr.enter_kernel(self.grid, self.threads, self._span)

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self.is_npu:
            exit_npu_kernel(self._tracer, exc_type is not None)
            return
        self._tracer.exit_kernel(exc_type is not None)


def source(cpu: Optional[str] = None, cuda: Optional[str] = None, **targets: str) -> None:
    """Gives the body's source text per target (phase 1; see the package
    docstring for what a body sees). Each target's body is given once."""
    tr = active()
    if tr is None:
        raise RuntimeError("T.source is only valid inside a function decorated with "
                           "@T.prim_func")
    given = dict(targets)
    if cpu is not None:
        given["cpu"] = cpu
    if cuda is not None:
        given["cuda"] = cuda
    tr.source(given)


def _resolve_annotation(ann: Any, fn: Any, caller_locals: Dict[str, Any], kernel: str,
                        param: str) -> Any:
    """Annotations are objects, unless the module has `from __future__ import
    annotations`: then they are strings, evaluated here where the prim_func
    was declared (the factory's locals hold the symbols)."""
    if not isinstance(ann, str):
        return ann
    scope = dict(fn.__globals__)
    scope.update(caller_locals)
    if fn.__closure__:
        for n, c in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[n] = c.cell_contents
            except ValueError:
                pass
    code = fn.__code__
    _resolving.owner = (kernel, param, (code.co_filename, code.co_firstlineno, 1))
    try:
        return eval(ann, scope)  # noqa: S307: the author's own annotation text
    except Exception as e:
        if e is getattr(_resolving, "shape_error", None):
            raise  # a bad T.Tensor shape, which names the parameter itself
        raise TypeError(f"{kernel}: the annotation of parameter '{param}' is the string "
                        f"{ann!r}, which cannot be evaluated where the prim_func is declared "
                        f"({type(e).__name__}: {e})") from None
    finally:
        _resolving.owner = _resolving.shape_error = None


def _trace(fn: Any, name: str, params: List[Any], lockstep: bool, survey: Any = None,
           interleave: bool = False) -> Any:
    tracer = _tracer.Tracer(name, params, _builder.make_builder)
    tracer.npu_lockstep = lockstep
    tracer.npu_survey, tracer.npu_interleave = survey, interleave
    body = _rewrite.rewritten(fn, tracer, name)
    tracer.npu_body = body  # run again by the vector cores' thread when interleaved
    tracer.param_spans = _rewrite.param_spans(fn)
    if survey is not None and not interleave:
        with tracing(tracer):  # the survey records; its program is not used
            body(*tracer.proxies)
        return None
    return _tracer.run(tracer, body)


def prim_func(fn: Any = None, **options: Any) -> Any:
    """Declares a kernel: runs ``fn`` once (rewritten, see rewrite.py) with
    parameter proxies and returns the PrimFunc (signature in annotation
    order, and a tile body or phase 1's launch and source bodies). Under
    ``tilejit.jit`` the PrimFunc takes the factory's name. TileLang's
    keyword options (``private=``, ...) are accepted and ignored."""
    if fn is None:
        return lambda f: prim_func(f, **options)
    name = factory_name() or fn.__name__
    caller = sys._getframe(1)
    caller_locals = dict(caller.f_locals)
    del caller
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{name}: parameter '{p.name}' must be a plain positional parameter")
        ann = _resolve_annotation(p.annotation, fn, caller_locals, name, p.name)
        if isinstance(ann, TensorType):
            params.append((p.name, ann.dtype, list(ann.shape)))
        elif isinstance(ann, DType):
            params.append((p.name, ann.name, None))
        elif ann is inspect.Parameter.empty:
            raise TypeError(f"{name}: parameter '{p.name}' has no annotation; annotate it with "
                            f"T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32")
        else:
            raise TypeError(f"{name}: parameter '{p.name}' is annotated with {ann!r}; expected "
                            f"T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32")
    try:
        try:
            return _trace(fn, name, params, lockstep=False)
        except NeedsLockstep:
            # A TileLang-Ascend kernel whose data flows from vector to cube:
            # traced again with its cube and vector parts in lockstep
            # (ascend.py, Note [Cube and vector in lockstep]).
            try:
                return _trace(fn, name, params, lockstep=True)
            except NeedsConcurrent:
                # A read that waits for a write below it: surveyed, then
                # traced with the cube and vector parts interleaved at their
                # waits (ascend_concurrent.py, Note [Cube and vector concurrently]).
                survey = Survey()
                _trace(fn, name, params, lockstep=True, survey=survey)
                survey.resolve_flags()
                return _trace(fn, name, params, lockstep=True, survey=survey, interleave=True)
    except Exception as e:
        strip_internal_frames(e)
        raise e.with_traceback(e.__traceback__) from e.__cause__

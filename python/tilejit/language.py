"""tilejit.language, imported as ``T``: how a kernel's signature is declared.

A kernel is a Python function decorated with ``@T.prim_func`` whose
parameters are annotated with ``T.Tensor(shape, dtype)`` or a scalar type
(``T.int32``, ``T.int64``, ``T.float32``). ``T.prim_func`` runs the function
once, at declaration, with placeholder arguments: the body enters
``T.Kernel(*grid, threads=...)`` once and gives its source text per target
with ``T.source(cpu=..., cuda=...)``. Nothing in the function runs again at a
call.

Phase 1 body spelling (``T.source``): each body is C++ (CUDA C++ for
``cuda=``) statements that run once per block of the grid. They see

* every tensor parameter as a view named after it: ``Q(i, j, k)`` reads or
  writes an element, ``Q.shape(d)`` is an extent, ``Q.data()`` the pointer,
  ``Q.size()`` the element count (row-major, contiguous, no bounds checks;
  static extents are compile-time constants);
* every scalar parameter and every dynamic symbol (``T.symbolic``) as an
  ``int64_t``/``int32_t``/``float`` constant of the same name;
* the block index as ``bx``, ``by``, ``bz`` (also ``block_idx.x`` ...) and the
  grid as ``grid_dim.x`` ...;
* ``tilejit::bfloat16`` and ``tilejit::float16`` element types that convert
  to and from ``float``, and ``tilejit::ceildiv``/``min``/``max``.

A CPU body runs on one thread per block (``threads`` is ignored there), and
``return;`` ends that block. A CUDA body is the kernel body of every thread
of the block (``return;`` ends the thread) and also sees ``threadIdx``,
``blockDim``, ``__shared__`` and ``__syncthreads()``.

Python values known at declaration (``heads``, ``block``) reach the body by
formatting them into its text, e.g. an f-string or a ``constexpr`` prologue.
Phase 2 replaces source text with tile operations on the same signature.
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _C

__all__ = [
    "Expr", "symbolic", "ceildiv", "floordiv", "floormod", "min", "max",
    "Tensor", "Buffer", "TensorType", "ScalarType", "int32", "int64", "float32",
    "Kernel", "source", "prim_func", "PrimFunc",
]

Expr = _C.Expr
PrimFunc = _C.PrimFunc

# Per-thread declaration state: the prim_func being traced, and the name of
# the tilejit.jit factory that is building it (errors then name the
# operator, "sparse_attention_fwd: ...", rather than its inner "main").
_state = threading.local()


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# --- symbolic integers -----------------------------------------------------

def symbolic(name: str, dtype: str = "int64") -> Expr:
    """A dynamic dimension, bound at each call from the inputs' shapes.

    Symbols are identified by name: ``T.symbolic("b")`` twice is one symbol.
    ``dtype`` is accepted for compatibility with TileLang; symbols are int64.
    """
    return Expr.var(name)


def ceildiv(a: Union[int, Expr], b: Union[int, Expr]) -> Union[int, Expr]:
    """ceil(a / b); an int when both are ints."""
    if _is_int(a) and _is_int(b):
        return -(-a // b)
    return _C.ceildiv(a, b)


def floordiv(a: Union[int, Expr], b: Union[int, Expr]) -> Union[int, Expr]:
    if _is_int(a) and _is_int(b):
        return a // b
    return _C.floordiv(a, b)


def floormod(a: Union[int, Expr], b: Union[int, Expr]) -> Union[int, Expr]:
    if _is_int(a) and _is_int(b):
        return a % b
    return _C.floormod(a, b)


def min(a: Union[int, Expr], b: Union[int, Expr]) -> Union[int, Expr]:  # noqa: A001
    if _is_int(a) and _is_int(b):
        return a if a < b else b
    return _C.min(a, b)


def max(a: Union[int, Expr], b: Union[int, Expr]) -> Union[int, Expr]:  # noqa: A001
    if _is_int(a) and _is_int(b):
        return a if a > b else b
    return _C.max(a, b)


# --- types -----------------------------------------------------------------

class ScalarType:
    """The annotation of a scalar parameter: ``n: T.int32``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"T.{self.name}"


int32 = ScalarType("int32")
int64 = ScalarType("int64")
float32 = ScalarType("float32")


def dtype_name(dtype: Any) -> str:
    """The canonical tilejit name of a dtype given as a string ("bf16"), a
    numpy dtype or scalar type (np.float32, ml_dtypes.bfloat16), a torch
    dtype (torch.bfloat16), or a T scalar type. torch is never imported:
    a torch dtype is recognised by its module."""
    if isinstance(dtype, str):
        return _C.parse_dtype(dtype)
    if isinstance(dtype, ScalarType):
        return dtype.name
    module = type(dtype).__module__ or ""
    if module == "torch" or module.startswith("torch."):
        return _C.parse_dtype(str(dtype).rpartition(".")[2])
    try:
        import numpy as np
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; expected a name such as 'float32', "
                        f"a numpy dtype or a torch dtype") from None
    return _C.parse_dtype(name)


def _shape_tuple(shape: Any, what: str) -> Tuple[Union[int, Expr], ...]:
    if _is_int(shape) or isinstance(shape, Expr):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{what}: the shape must be a list of ints and T.symbolic expressions, "
                        f"got {type(shape).__name__}") from None
    for d, dim in enumerate(dims):
        if not (_is_int(dim) or isinstance(dim, Expr)):
            raise TypeError(f"{what}: dimension {d} must be an int or a T.symbolic expression, "
                            f"got {type(dim).__name__}")
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


def Tensor(shape: Any, dtype: Any = "float32") -> TensorType:  # noqa: N802 (the seed's name)
    """``T.Tensor([b, s, heads, dim], "bfloat16")``: a tensor parameter's type."""
    return TensorType(shape, dtype)


Buffer = Tensor


# --- the declaration trace -------------------------------------------------

class _Trace:
    """What running a prim_func's Python body records."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.grid: Optional[List[Union[int, Expr]]] = None
        self.threads = 1
        self.bodies: Dict[str, str] = {}


def _current_trace(what: str) -> _Trace:
    trace = getattr(_state, "trace", None)
    if trace is None:
        raise RuntimeError(f"{what} is only valid inside a function decorated with @T.prim_func")
    return trace


class BlockIndex:
    """The placeholder ``T.Kernel`` yields for a block index. In phase-1
    bodies the index is spelled by name in the source (``bx``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Kernel:
    """``with T.Kernel(*grid, threads=128) as bx:`` declares the launch grid
    (one to three extents, ints or symbolic expressions) and the threads per
    block (CUDA; the CPU runs a block on one thread)."""

    def __init__(self, *grid: Union[int, Expr], threads: int = 128, is_cpu: bool = False) -> None:
        # is_cpu: accepted for TileLang compatibility; the target decides.
        self.grid = list(grid)
        self.threads = threads

    def __enter__(self) -> Union[BlockIndex, Tuple[BlockIndex, ...]]:
        trace = _current_trace("T.Kernel")
        if trace.grid is not None:
            raise ValueError(f"{trace.name}: T.Kernel entered twice; a prim_func has one launch")
        if not 1 <= len(self.grid) <= 3:
            raise ValueError(f"{trace.name}: T.Kernel takes 1 to 3 grid extents, "
                             f"got {len(self.grid)}")
        if not _is_int(self.threads):
            raise TypeError(f"{trace.name}: threads must be an int, "
                            f"got {type(self.threads).__name__}")
        trace.grid = self.grid
        trace.threads = self.threads
        names = ("bx", "by", "bz")[: len(self.grid)]
        indices = tuple(BlockIndex(n) for n in names)
        return indices[0] if len(indices) == 1 else indices

    def __exit__(self, *exc: Any) -> None:
        return None


def source(cpu: Optional[str] = None, cuda: Optional[str] = None, **targets: str) -> None:
    """Gives the body's source text per target (phase 1; see the module
    docstring for what a body sees). Each target's body is given once."""
    trace = _current_trace("T.source")
    given = dict(targets)
    if cpu is not None:
        given["cpu"] = cpu
    if cuda is not None:
        given["cuda"] = cuda
    for target, text in given.items():
        if not isinstance(text, str):
            raise TypeError(f"{trace.name}: the {target} body must be a str, "
                            f"got {type(text).__name__}")
        if target in trace.bodies:
            raise ValueError(f"{trace.name}: T.source gave a {target} body twice")
        trace.bodies[target] = text


class TensorProxy:
    """The placeholder a tensor parameter has while its prim_func is traced."""

    def __init__(self, name: str, type_: TensorType) -> None:
        self.name = name
        self.shape = type_.shape
        self.dtype = type_.dtype
        self.ndim = len(type_.shape)

    def __repr__(self) -> str:
        return f"<tensor {self.name}: {self.dtype}{list(self.shape)}>"


class ScalarProxy:
    """The placeholder a scalar parameter has while its prim_func is traced."""

    def __init__(self, name: str, type_: ScalarType) -> None:
        self.name = name
        self.dtype = type_.name

    def __repr__(self) -> str:
        return f"<scalar {self.name}: {self.dtype}>"


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
        scope.update({n: c.cell_contents for n, c in
                      zip(fn.__code__.co_freevars, fn.__closure__)})
    try:
        return eval(ann, scope)  # noqa: S307: the author's own annotation text
    except Exception as e:
        raise TypeError(f"{kernel}: the annotation of parameter '{param}' is the string "
                        f"{ann!r}, which cannot be evaluated where the prim_func is declared "
                        f"({type(e).__name__}: {e})") from None


def prim_func(fn: Any) -> PrimFunc:
    """Declares a kernel: runs ``fn`` once with placeholder parameters and
    returns the PrimFunc (signature in annotation order, grid, threads,
    bodies). Under ``tilejit.jit`` the PrimFunc takes the factory's name."""
    name = getattr(_state, "factory_name", None) or fn.__name__
    caller = sys._getframe(1)
    caller_locals = dict(caller.f_locals)
    del caller
    params = []
    placeholders = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{name}: parameter '{p.name}' must be a plain positional parameter")
        ann = _resolve_annotation(p.annotation, fn, caller_locals, name, p.name)
        if isinstance(ann, TensorType):
            params.append((p.name, ann.dtype, list(ann.shape)))
            placeholders.append(TensorProxy(p.name, ann))
        elif isinstance(ann, ScalarType):
            params.append((p.name, ann.name, None))
            placeholders.append(ScalarProxy(p.name, ann))
        elif ann is inspect.Parameter.empty:
            raise TypeError(f"{name}: parameter '{p.name}' has no annotation; annotate it with "
                            f"T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32")
        else:
            raise TypeError(f"{name}: parameter '{p.name}' is annotated with {ann!r}; expected "
                            f"T.Tensor(shape, dtype) or T.int32 / T.int64 / T.float32")

    trace = _Trace(name)
    previous = getattr(_state, "trace", None)
    _state.trace = trace
    try:
        fn(*placeholders)
    finally:
        _state.trace = previous
    if not trace.bodies:
        raise ValueError(f"{name}: the prim_func gives no body; call "
                         f"T.source(cpu=..., cuda=...) inside it")
    grid = trace.grid if trace.grid is not None else [1]
    return _C.make_prim_func(name, params, grid, trace.threads, trace.bodies)

"""The values a tile body computes with while it is traced.

``Value`` wraps an expression handle of the builder (a ``_C.Expr`` on the
real one) and overloads Python's operators, so ``A[i, j] * 2 + bx`` records
an expression. Python literals meeting a Value take its dtype, as in TVM:
``x_f16 + 1.0`` is an f16 add, ``i + 1`` an add at i's integer width, and a
float literal meeting an integer is float32. Signature symbols
(``T.symbolic``) stay ``_C.Expr`` until they meet a Value.

``BufferProxy`` is a buffer (a parameter or an allocation): indexing it with
scalars loads (``A[i, j]``), with slices makes a region (``A[i:i + n, :]``),
and assigning to an index stores. ``VarBuffer`` (``T.alloc_var``) is a
one-element local buffer that reads as its value and that plain assignment
stores into.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, List, Optional, Sequence, Tuple

from .. import _C
from . import dtypes
from .active import active, current_tracer
from .spans import error

__all__ = ["Value", "BufferProxy", "VarBuffer", "Region", "is_symbolic", "current_tracer"]


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_symbolic(x: Any) -> bool:
    """A value known only when the kernel runs (a Value, an alloc_var, or a
    non-constant signature expression)."""
    if isinstance(x, (Value, VarBuffer)):
        return True
    if isinstance(x, _C.Expr):
        return not x.is_const
    return False


def static_value(x: Any) -> Any:
    """A constant _C.Expr as its int; anything else unchanged."""
    if isinstance(x, _C.Expr) and x.is_const:
        return x.value
    return x


def _literal(x: Any) -> Optional[Tuple[Any, str]]:
    """(value, kind) for a Python or numpy scalar literal, kind in "bool",
    "int", "float" or a numpy dtype name; None otherwise."""
    if isinstance(x, bool):
        return x, "bool"
    if isinstance(x, int):
        return x, "int"
    if isinstance(x, float):
        return x, "float"
    module = type(x).__module__
    if module == "numpy" and hasattr(x, "dtype") and getattr(x, "shape", None) == ():
        try:
            return x.item(), dtypes.dtype_name(x.dtype)
        except (TypeError, ValueError):
            return None
    return None


def to_handle(tr: Any, x: Any, hint: Optional[str] = None, what: str = "operand") -> Any:
    """The builder handle of `x` (a Value, an alloc_var, a _C.Expr or a
    literal); a literal takes `hint` (the dtype of the other operand) when
    it fits: ints take any numeric hint, floats a float hint."""
    if isinstance(x, Value):
        return x.h
    if isinstance(x, VarBuffer):
        return x.load().h
    if isinstance(x, _C.Expr):
        if x.is_const:
            return tr.b.const(x.value, hint if hint and dtypes.is_int(hint) else "int64")
        return tr.b.symbol(x)
    if isinstance(x, dtypes.UnsignedConstant):
        return int_const(tr, x.value, x.name)
    lit = _literal(x)
    if lit is None:
        if isinstance(x, BufferProxy):
            raise error(TypeError, f"the buffer {x.name} is used as a scalar {what}; index it "
                                   f"(e.g. {x.name}[i])")
        raise error(TypeError, f"{type(x).__name__} {x!r} cannot be a tile-language {what}; "
                               f"expected a number or an expression")
    value, kind = lit
    if kind == "bool":
        return tr.b.const(value, "bool")
    if kind == "int":
        if hint is not None and dtypes.is_int(hint):
            return int_const(tr, value, hint)
        if hint is not None and dtypes.is_float(hint):
            return tr.b.const(float(value), hint)
        return tr.b.const(value, "int32" if -2**31 <= value < 2**31 else "int64")
    if kind == "float":
        if hint is not None and dtypes.is_float(hint):
            return tr.b.const(value, hint)
        return tr.b.const(value, "float32")
    if dtypes.is_int(kind):
        return int_const(tr, value, kind)  # a numpy scalar keeps its dtype
    return tr.b.const(value, kind)


def int_const(tr: Any, value: int, dtype: str) -> Any:
    """An int constant of an int dtype, wrapped to its width as C converts;
    a uint64 at or above 2**63 goes as its bits (Note [Unsigned constants])."""
    value = int(value)
    if dtype == "uint64" and 2**63 <= value < 2**64:
        value -= 2**64
    return tr.b.const(value, dtype)


def dtype_of(tr: Any, x: Any) -> Optional[str]:
    if isinstance(x, Value):
        return tr.b.dtype(x.h)
    if isinstance(x, VarBuffer):
        return x.dtype
    if isinstance(x, _C.Expr):
        return "int64"
    if isinstance(x, dtypes.UnsignedConstant):
        return x.name
    lit = _literal(x)
    if lit is not None and lit[1] not in ("int", "float", "bool"):
        return lit[1]
    return None


def binary(op: str, a: Any, b: Any, hint_b: bool = True) -> "Value":
    """a op b; a literal takes the other operand's dtype (b only with
    `hint_b`: a shift amount goes as written, for the builder's range check,
    and takes it there)."""
    tr = current_tracer("an expression")
    ha = to_handle(tr, a, dtype_of(tr, b))
    hb = to_handle(tr, b, dtype_of(tr, a) if hint_b else None)
    try:
        h = tr.b.binary(op, ha, hb)
    except (TypeError, ValueError) as e:
        # The builder's check (a constant zero divisor, a constant shift out
        # of range), at the author's line.
        raise error(TypeError if isinstance(e, TypeError) else ValueError, str(e)) from None
    return Value(h, reads=reads(a, b))


def as_bool_handle(tr: Any, x: Any) -> Any:
    """A condition's handle: a bool expression, or `x != 0` otherwise."""
    h = to_handle(tr, x)
    if tr.b.dtype(h) != "bool":
        zero = tr.b.const(0.0 if dtypes.is_float(tr.b.dtype(h)) else 0, tr.b.dtype(h))
        h = tr.b.binary("ne", h, zero)
    return h


def cast(x: Any, dtype: Any) -> Any:
    name = dtypes.dtype_name(dtype)
    tr = current_tracer("T.cast")
    h = to_handle(tr, x, name)
    if tr.b.dtype(h) == name:
        return Value(h, reads=reads(x))
    return Value(tr.b.cast(name, h), reads=reads(x))


def check_unsigned_constant(name: str, value: Any) -> None:
    """T.uint32(c) / T.uint64(c) of an int: c must fit."""
    bits = dtypes.bits_of(name)
    if not _is_int(value) or not 0 <= value < 2**bits:
        raise error(ValueError, f"T.{name}: expected an int from 0 to 2**{bits} - 1, "
                                f"got {value!r}")


dtypes.register_conversion(cast, check_unsigned_constant)


def reads(*xs: Any) -> bool:
    """Whether any of `xs` reads a buffer (then binding it to a name makes
    a let, so that a later store cannot change its value)."""
    for x in xs:
        if isinstance(x, VarBuffer) or (isinstance(x, Value) and x._reads):
            return True
    return False


class Value:
    """A scalar expression of a tile body (see the module docstring)."""

    __slots__ = ("_h", "_load", "_reads")

    def __init__(self, h: Any, load: Optional[Tuple["BufferProxy", List[Any]]] = None,
                 reads: bool = False) -> None:
        self._h = h
        self._load = load  # (buffer, indices) when this is buffer[indices]
        self._reads = reads or load is not None

    @property
    def h(self) -> Any:
        return self._h

    @property
    def dtype(self) -> str:
        return current_tracer().b.dtype(self.h)

    def astype(self, dtype: Any) -> "Value":
        return cast(self, dtype)

    def __repr__(self) -> str:
        tr = active()
        if tr is None or tr._b is None:
            return "<tile expression>"
        return tr.b.text(self.h)

    def __bool__(self) -> bool:
        raise error(TypeError, f"the symbolic value '{self!r}' is used as a Python bool; its "
                               f"value is known only when the kernel runs (write the condition "
                               f"directly in an if / while / and / or / not, or use "
                               f"T.if_then_else)")

    def __index__(self) -> int:
        raise error(TypeError, f"the symbolic value '{self!r}' is used as a Python int; its "
                               f"value is known only when the kernel runs")

    __int__ = __index__
    __hash__ = object.__hash__

    def __float__(self) -> float:
        raise error(TypeError, f"the symbolic value '{self!r}' is used as a Python float; its "
                               f"value is known only when the kernel runs")

    def __iter__(self) -> Any:
        raise error(TypeError, f"the symbolic value '{self!r}' is not iterable")

    # Arithmetic.
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("div", self, o)
    def __rtruediv__(self, o): return binary("div", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("floormod", self, o)
    def __rmod__(self, o): return binary("floormod", o, self)
    def __neg__(self): return binary("sub", 0, self)
    def __pos__(self): return self
    def __abs__(self): return call_intrinsic("abs", self)

    # Comparisons build expressions (the rewrite turns `a < b` into these
    # too, so that signature symbols and literals compare as well).
    def __lt__(self, o): return binary("lt", self, o)
    def __le__(self, o): return binary("le", self, o)
    def __gt__(self, o): return binary("gt", self, o)
    def __ge__(self, o): return binary("ge", self, o)
    def __eq__(self, o): return binary("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return binary("ne", self, o)  # type: ignore[override]

    # Bitwise operators (Note [Bitwise operators] in tilejit/ir/expr.h): on
    # integers as in C, at the promoted dtype; on bool masks & | ^ ~ are
    # logical.
    def __and__(self, o): return bitwise("and", self, o)
    def __rand__(self, o): return bitwise("and", o, self)
    def __or__(self, o): return bitwise("or", self, o)
    def __ror__(self, o): return bitwise("or", o, self)
    def __xor__(self, o): return bitwise("xor", self, o)
    def __rxor__(self, o): return bitwise("xor", o, self)
    def __lshift__(self, o): return bitwise("shl", self, o)
    def __rlshift__(self, o): return bitwise("shl", o, self)
    def __rshift__(self, o): return bitwise("shr", self, o)
    def __rrshift__(self, o): return bitwise("shr", o, self)
    def __invert__(self): return bitwise_not(self)


_BITWISE_SYMBOLS = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}


def bitwise(op: str, a: Any, b: Any) -> Value:
    """a & b, a | b, a ^ b, a << b, a >> b: integer operands (a float one is
    a TypeError naming the operator); & | ^ of bool masks (untyped literals
    beside them taken as truth values) are logical."""
    tr = current_tracer()
    sym = _BITWISE_SYMBOLS[op]
    known = [d for d in (dtype_of(tr, a), dtype_of(tr, b)) if d is not None]
    for x in (a, b):
        lit = _literal(x)
        d = dtype_of(tr, x) or ("float32" if lit is not None and lit[1] == "float" else None)
        if d is not None and dtypes.is_float(d):
            raise error(TypeError, f"{sym} on a {d} operand: bitwise operators need integer "
                                   f"operands (or bool masks for & | ^)")
    if known and all(d == "bool" for d in known) and op in ("and", "or", "xor"):
        ha, hb = as_bool_handle(tr, a), as_bool_handle(tr, b)
        return Value(tr.b.binary("ne" if op == "xor" else op, ha, hb), reads=reads(a, b))
    if op in ("shl", "shr") and "bool" in known:
        raise error(TypeError, f"{sym} on a bool operand: shifts need integer operands")
    if op in ("shl", "shr"):
        return binary(op, a, b, hint_b=False)
    return binary("bit" + op, a, b)


def bitwise_not(x: Any) -> Value:
    """~x: the complement in x's integer dtype; logical not of a bool mask."""
    tr = current_tracer()
    h = to_handle(tr, x)
    d = tr.b.dtype(h)
    if dtypes.is_float(d):
        raise error(TypeError, f"~ on a {d} operand: bitwise operators need integer operands "
                               f"(or bool masks)")
    op = "not" if d == "bool" else "bitnot"
    return Value(tr.b.unary(op, h), reads=reads(x))


_INTRINSICS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs")


def call_intrinsic(name: str, x: Any) -> Value:
    tr = current_tracer(f"T.{name}")
    h = to_handle(tr, x, "float32" if name != "abs" else None)
    return Value(tr.b.call(name, [h]), reads=reads(x))


def _int_or_expr(x: Any) -> bool:
    return _is_int(x) or isinstance(x, _C.Expr)


def min_max(op: str, a: Any, b: Any) -> Any:
    """T.min / T.max: ints stay ints, signature expressions stay _C.Expr,
    anything with a Value records a Min / Max."""
    a, b = static_value(a), static_value(b)
    if _is_int(a) and _is_int(b):
        return builtins.min(a, b) if op == "min" else builtins.max(a, b)
    if _int_or_expr(a) and _int_or_expr(b):
        return _C.min(a, b) if op == "min" else _C.max(a, b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if b != b:  # NaN wins, as on the targets (Note [NaN in max and min], device/cpu)
            return b
        return builtins.min(a, b) if op == "min" else builtins.max(a, b)
    return binary(op, a, b)


def int_op(op: str, a: Any, b: Any) -> Any:
    """T.ceildiv / floordiv / floormod with the same rule as min_max."""
    a, b = static_value(a), static_value(b)
    if _is_int(a) and _is_int(b):
        if op == "ceildiv":
            return -(-a // b)
        return a // b if op == "floordiv" else a % b
    if _int_or_expr(a) and _int_or_expr(b):
        return getattr(_C, op)(a, b)
    return binary(op, a, b)


# --- buffers ---------------------------------------------------------------

class Region:
    """A rectangular part of a buffer, as a tile op's operand: `ranges` is
    None for the whole buffer, else one (min, extent) per dimension, with
    extent None for a start corner (the extent comes from the other
    operand)."""

    __slots__ = ("buffer", "ranges")

    def __init__(self, buffer: "BufferProxy", ranges: Optional[List[Tuple[Any, Any]]]) -> None:
        self.buffer = buffer
        self.ranges = ranges

    def __repr__(self) -> str:
        if self.ranges is None:
            return self.buffer.name
        parts = []
        for mn, ext in self.ranges:
            parts.append(repr(mn) if ext is None else f"{mn!r}:{mn!r} + {ext!r}")
        return f"{self.buffer.name}[{', '.join(parts)}]"


class TensorData:
    """``X.data``: the storage of a tensor, as ``T.Tensor(shape, dtype, X.data)``
    takes it (remap.py)."""

    def __init__(self, buffer: "BufferProxy") -> None:
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"{self.buffer.name}.data"


def _index_tuple(key: Any) -> Tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


class BufferProxy:
    """A buffer of a tile body: a tensor parameter (global) or an
    allocation. ``shape`` is as declared (ints and symbolic expressions).
    ``remap``, where set, maps its indices to those of the storage `buf`
    (a global with a T.Layout, or a view; remap.py, Note [Remapped
    globals])."""

    remap: Any = None
    view_of: Optional[str] = None

    def __init__(self, name: str, shape: Sequence[Any], dtype: str, scope: str,
                 handle: Any = None) -> None:
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.ndim = len(self.shape)
        self.scope_name = scope
        self._buf = handle

    @property
    def buf(self) -> Any:
        return self._buf

    @property
    def data(self) -> Any:
        """TileLang's pointer of a buffer, whose one use in its programs is a
        view over another tensor: ``T.Tensor(shape, dtype, X.data)``."""
        return TensorData(self)

    def scope(self) -> str:
        return self.scope_name

    def __repr__(self) -> str:
        dims = ", ".join(repr(d) for d in self.shape)
        return f"<{self.scope_name} buffer {self.name}: {self.dtype}[{dims}]>"

    def _check_rank(self, n: int, what: str) -> None:
        if n != self.ndim:
            raise error(IndexError, f"{self.name}: {what} with {n} "
                                    f"{'index' if n == 1 else 'indices'}; the buffer has "
                                    f"{self.ndim} dimension{'s' if self.ndim != 1 else ''}")

    def __getitem__(self, key: Any) -> Any:
        idx = _index_tuple(key)
        if any(isinstance(k, slice) for k in idx):
            return self.region(idx)
        self._check_rank(len(idx), "indexed")
        tr = current_tracer("indexing a buffer")
        where = self.remap(idx) if self.remap is not None else idx
        handles = [to_handle(tr, k, what="index") for k in where]
        return Value(tr.b.load(self.buf, handles), (self, list(idx)))

    def region(self, idx: Tuple[Any, ...]) -> Region:
        self._check_rank(len(idx), "sliced")
        ranges = []
        for d, k in enumerate(idx):
            if isinstance(k, slice):
                if k.step is not None and static_value(k.step) != 1:
                    raise error(ValueError, f"{self.name}: a slice with a step ({k.step!r}) is "
                                            f"not supported; regions are contiguous")
                start = 0 if k.start is None else k.start
                stop = self.shape[d] if k.stop is None else k.stop
                ranges.append((start, subtract(stop, start)))
            else:
                ranges.append((k, 1))
        return Region(self, ranges)

    def __setitem__(self, key: Any, value: Any) -> None:
        idx = _index_tuple(key)
        if any(isinstance(k, slice) for k in idx):
            raise error(ValueError, f"{self.name}: assigning to a slice is not supported; "
                                    f"use T.fill, T.copy or a T.Parallel loop")
        self._check_rank(len(idx), "indexed")
        tr = current_tracer("storing to a buffer")
        tr.store(self, self.remap(idx) if self.remap is not None else idx, value)

    def __len__(self) -> int:
        return int(static_value(self.shape[0])) if self.shape else 0


def subtract(a: Any, b: Any) -> Any:
    """a - b, with b == 0 giving a itself."""
    a, b = static_value(a), static_value(b)
    if _is_int(a) and _is_int(b):
        return a - b
    if isinstance(b, int) and b == 0:
        return a
    return a - b


class VarBuffer(BufferProxy):
    """``T.alloc_var(dtype, init=...)``: a scalar variable (a one-element
    local buffer). It reads as its value; ``x = v`` in the body stores v."""

    def load(self) -> Value:
        return self[0]

    def set(self, value: Any) -> None:
        self[0] = value

    def __repr__(self) -> str:
        return f"<var {self.name}: {self.dtype}>"

    def __bool__(self) -> bool:
        return bool(self.load())

    def __index__(self) -> int:
        return self.load().__index__()

    __int__ = __index__
    __hash__ = object.__hash__

    def astype(self, dtype: Any) -> Value:
        return cast(self.load(), dtype)

    def __add__(self, o): return self.load() + o
    def __radd__(self, o): return o + self.load()
    def __sub__(self, o): return self.load() - o
    def __rsub__(self, o): return o - self.load()
    def __mul__(self, o): return self.load() * o
    def __rmul__(self, o): return o * self.load()
    def __truediv__(self, o): return self.load() / o
    def __rtruediv__(self, o): return o / self.load()
    def __floordiv__(self, o): return self.load() // o
    def __rfloordiv__(self, o): return o // self.load()
    def __mod__(self, o): return self.load() % o
    def __rmod__(self, o): return o % self.load()
    def __neg__(self): return -self.load()
    def __abs__(self): return abs(self.load())
    def __lt__(self, o): return self.load() < o
    def __le__(self, o): return self.load() <= o
    def __gt__(self, o): return self.load() > o
    def __ge__(self, o): return self.load() >= o
    def __eq__(self, o): return self.load() == o  # type: ignore[override]
    def __ne__(self, o): return self.load() != o  # type: ignore[override]
    def __and__(self, o): return self.load() & o
    def __rand__(self, o): return o & self.load()
    def __or__(self, o): return self.load() | o
    def __ror__(self, o): return o | self.load()
    def __xor__(self, o): return self.load() ^ o
    def __rxor__(self, o): return o ^ self.load()
    def __lshift__(self, o): return self.load() << o
    def __rlshift__(self, o): return o << self.load()
    def __rshift__(self, o): return self.load() >> o
    def __rrshift__(self, o): return o >> self.load()
    def __invert__(self): return ~self.load()


# Python's operators by the names the rewrite passes.
PY_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "floormod": operator.mod, "pow": operator.pow,
    "lshift": operator.lshift, "rshift": operator.rshift, "bitand": operator.and_,
    "bitor": operator.or_, "bitxor": operator.xor, "matmul": operator.matmul,
}
PY_INPLACE = {
    "add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "div": operator.itruediv,
    "floordiv": operator.ifloordiv, "floormod": operator.imod, "pow": operator.ipow,
    "lshift": operator.ilshift, "rshift": operator.irshift, "bitand": operator.iand,
    "bitor": operator.ior, "bitxor": operator.ixor, "matmul": operator.imatmul,
}
PY_COMPARE = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "is": operator.is_, "is_not": operator.is_not,
    "in": lambda a, b: a in b, "not_in": lambda a, b: a not in b,
}


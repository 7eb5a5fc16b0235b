"""The differential tester's own program representation.

A `Program` is one tile kernel: its tensor parameters, the symbols of their
shapes (with the values each check binds them to), the launch grid and the
statements of the body. It is written for this tester alone and shares
nothing with tilejit's IR: render.py prints it as TileLang Python for
tilejit, interpret.py runs it with numpy, and both read only these classes.

Invariants the generator keeps and the interpreter checks:
- every expression node has a dtype; the operands of a binary node have the
  node's dtype (comparisons: equal dtypes, result "bool"); index
  expressions are "int32" and never negative where they meet // and %;
- allocations come first in the body (after `tx = T.get_thread_binding()`);
- a `Load` / `Store` with an empty index list is a T.alloc_var read / write.

Programs go to and from JSON (`to_json` / `from_json`) so that the
regression corpus stores the program itself, not only its text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

FLOATS = ("float32", "float16", "bfloat16")
INDEX = "int32"


# --- expressions -------------------------------------------------------------

@dataclass
class Const:
    value: Union[int, float]
    dtype: str


@dataclass
class Var:
    """A name the body binds: bx / by, tx, a loop variable, a `Let`, or a
    shape symbol."""
    name: str
    dtype: str = INDEX


@dataclass
class ThreadIdx:
    """T.get_thread_binding(): the thread's index in the block."""
    dtype: str = INDEX


@dataclass
class Bin:
    """op in + - * / // % max min ceildiv < <= > >= == != and or."""
    op: str
    a: Any
    b: Any
    dtype: str


@dataclass
class Un:
    """op in neg abs exp tanh sigmoid."""
    op: str
    a: Any
    dtype: str


@dataclass
class Cast:
    a: Any
    dtype: str


@dataclass
class Select:
    """T.if_then_else(cond, a, b)."""
    cond: Any
    a: Any
    b: Any
    dtype: str


@dataclass
class Load:
    buf: str
    idx: List[Any]
    dtype: str


Expr = Union[Const, Var, ThreadIdx, Bin, Un, Cast, Select, Load]
COMPARES = ("<", "<=", ">", ">=", "==", "!=")


# --- buffers, operands, parameters -------------------------------------------

@dataclass
class Buffer:
    """scope: global (a parameter), shared, fragment, local (per thread),
    var (T.alloc_var, per thread), reducer (T.alloc_reducer)."""
    name: str
    scope: str
    shape: List[Any]          # ints; a global's may hold symbol names
    dtype: str
    init: Optional[float] = None      # var: T.alloc_var's init
    reduce_op: Optional[str] = None   # reducer: "sum" | "max" | "min"


@dataclass
class Operand:
    """A tile op's operand: the whole buffer (form "whole"), a slice
    A[s0:s0 + e0, ...] ("slice"; `full` marks the dimensions printed `:`),
    or a start corner A[s0, s1] whose extents come from the other side
    ("corner")."""
    buf: str
    form: str = "whole"
    starts: List[Any] = field(default_factory=list)
    extents: List[int] = field(default_factory=list)
    full: List[bool] = field(default_factory=list)


@dataclass
class Param:
    """A tensor parameter. role: "in" (read only) or "out" (passed in with
    `fill` values, read back after the call). fill: "uniform" (-1..1),
    "nan" (uniform with some NaN), "zeros", "index:<lo>:<hi>" (int32
    uniform in [lo, hi)), "sentinel" (uniform, the outputs' starting
    value)."""
    buf: Buffer
    role: str
    fill: str = "uniform"


# --- statements --------------------------------------------------------------

@dataclass
class Alloc:
    buf: Buffer


@dataclass
class Let:
    """`name = value`: a scalar temporary (per thread outside tile ops)."""
    name: str
    value: Any


@dataclass
class Store:
    buf: str
    idx: List[Any]
    value: Any


@dataclass
class AtomicAdd:
    buf: str
    idx: List[Any]
    value: Any


@dataclass
class Copy:
    src: Operand
    dst: Operand


@dataclass
class Gemm:
    a: str
    b: str
    c: str
    trans_a: bool = False
    trans_b: bool = False
    clear: bool = False


@dataclass
class Reduce:
    """kind in sum max min abssum absmax; dst has src's shape without dim."""
    kind: str
    src: str
    dst: str
    dim: int
    clear: bool = True


@dataclass
class Fill:
    dst: Operand
    value: Any
    as_clear: bool = False    # printed T.clear(dst); value is 0


@dataclass
class FinalizeReducer:
    buf: str


@dataclass
class Parallel:
    vars: List[str]
    extents: List[int]
    body: List[Any]


@dataclass
class For:
    """kind in serial, pipelined, unroll, range; stages for pipelined."""
    var: str
    extent: Any
    body: List[Any]
    kind: str = "serial"
    stages: int = 0


@dataclass
class If:
    cond: Any
    then: List[Any]
    orelse: List[Any] = field(default_factory=list)


Stmt = Union[Alloc, Let, Store, AtomicAdd, Copy, Gemm, Reduce, Fill, FinalizeReducer,
             Parallel, For, If]
TILE_OPS = (Copy, Gemm, Reduce, Fill, FinalizeReducer, Parallel)


# --- the program -------------------------------------------------------------

@dataclass
class Program:
    """grid: 1 to 3 expressions over the symbols; symbols: each symbol's
    value at each check (all lists have the same length, the number of
    checks). features: the generator features the program uses
    (features.py). expect_error: a part of the message tilejit must raise
    when it compiles the program (an invalid program), else None."""
    name: str
    params: List[Param]
    symbols: Dict[str, List[int]]
    grid: List[Any]
    threads: int
    body: List[Any]
    features: List[str] = field(default_factory=list)
    expect_error: Optional[str] = None

    def buffers(self) -> Dict[str, Buffer]:
        out = {p.buf.name: p.buf for p in self.params}
        for s in walk(self.body):
            if isinstance(s, Alloc):
                out[s.buf.name] = s.buf
        return out

    def checks(self) -> int:
        return max((len(v) for v in self.symbols.values()), default=1)


def walk(stmts: List[Any]):
    """Every statement, nested ones included, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, (Parallel, For)):
            yield from walk(s.body)
        elif isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)


def contains_tile_op(stmts: List[Any]) -> bool:
    return any(isinstance(s, TILE_OPS) for s in walk(stmts))


# --- JSON --------------------------------------------------------------------

_CLASSES = {c.__name__: c for c in (
    Const, Var, ThreadIdx, Bin, Un, Cast, Select, Load, Buffer, Operand, Param, Alloc, Let,
    Store, AtomicAdd, Copy, Gemm, Reduce, Fill, FinalizeReducer, Parallel, For, If, Program)}


def to_json(x: Any) -> Any:
    if dataclasses.is_dataclass(x):
        d = {"_": type(x).__name__}
        for f in dataclasses.fields(x):
            d[f.name] = to_json(getattr(x, f.name))
        return d
    if isinstance(x, list):
        return [to_json(v) for v in x]
    if isinstance(x, dict):
        return {k: to_json(v) for k, v in x.items()}
    return x


def from_json(x: Any) -> Any:
    if isinstance(x, dict) and "_" in x:
        cls = _CLASSES[x["_"]]
        return cls(**{k: from_json(v) for k, v in x.items() if k != "_"})
    if isinstance(x, list):
        return [from_json(v) for v in x]
    if isinstance(x, dict):
        return {k: from_json(v) for k, v in x.items()}
    return x

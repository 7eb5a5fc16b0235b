"""The trace of one prim_func: what running its (rewritten) body records.

A Tracer is both the object the rewritten body calls for the constructs
Python cannot overload (``__tj.if_(c)``, ``__tj.for_(it, names)``, ...;
rewrite.py) and the state the T.* functions record into. It holds:

* the signature (parameter proxies) and phase 1's launch and source bodies;
* the builder (builder.py), made on first need, so a phase-1 body written
  with ``T.source`` never makes one; on creation it declares the parameters
  and opens the kernel the body is in;
* a stack of frames (kernel, IR loop, symbolic if, Python loop) that decides
  what ``break``, ``continue`` and ``return`` may do.

Conditions that are Python values specialise statically: only the branch
taken is traced. Symbolic ones record an If and trace both branches once.
A loop over T.serial / T.Parallel / T.Pipelined / T.unroll / T.vectorized
(or range() inside a kernel) records a For and traces its body once with a
symbolic loop variable; any other iterable is a Python loop.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _C
from .active import active, tracing
from .loops import LoopRange, serial_range
from .spans import Span, error, span_text, user_span
from .values import (PY_BINARY, PY_COMPARE, PY_INPLACE, BufferProxy, Value,
                     VarBuffer, as_bool_handle, binary, is_symbolic, reads, static_value,
                     to_handle)

# Frame kinds.
KERNEL, FOR, WHILE, IF, PY = "kernel", "for", "while", "if", "py"


UNSET = object()  # the previous value of a name not bound yet


class _IfState:
    __slots__ = ("symbolic", "static")

    def __init__(self, symbolic: bool, static: bool) -> None:
        self.symbolic = symbolic
        self.static = static


class KernelFrame:
    def __init__(self, grid: List[Any], threads: List[int], span: Span) -> None:
        self.grid = grid
        self.threads = threads
        self.span = span
        self.indices: List["BlockIndex"] = []
        self.begun = False  # on the builder


class BlockIndex(Value):
    """bx / by / bz of a T.Kernel: a Value whose handle exists once the
    builder does (a phase-1 body only prints its name)."""

    __slots__ = ("name", "_tracer")

    def __init__(self, tracer: "Tracer", name: str) -> None:
        super().__init__(None)
        self.name = name
        self._tracer = tracer

    @property
    def h(self) -> Any:
        if self._h is None:
            self._tracer.ensure_builder()
        return self._h

    def __repr__(self) -> str:
        return self.name


class ScalarParam(Value):
    """A scalar parameter: a symbol of the signature."""

    __slots__ = ("name", "dtype_name", "_tracer")

    def __init__(self, tracer: "Tracer", name: str, dtype: str) -> None:
        super().__init__(None)
        self.name = name
        self.dtype_name = dtype
        self._tracer = tracer

    @property
    def h(self) -> Any:
        if self._h is None:
            self._tracer.ensure_builder()
        return self._h

    @property
    def dtype(self) -> str:
        return self.dtype_name

    def __repr__(self) -> str:
        return f"<scalar {self.name}: {self.dtype_name}>"


class ParamBuffer(BufferProxy):
    """A tensor parameter: its builder buffer exists once the builder does."""

    def __init__(self, tracer: "Tracer", name: str, shape: Sequence[Any], dtype: str) -> None:
        super().__init__(name, shape, dtype, "global")
        self._tracer = tracer

    @property
    def buf(self) -> Any:
        if self._buf is None:
            self._tracer.ensure_builder()
        return self._buf

    def __repr__(self) -> str:
        return f"<tensor {self.name}: {self.dtype}{list(self.shape)}>"


class Tracer:
    """See the module docstring. `params` holds (name, dtype, shape or
    None); `make_builder(name)` makes the builder."""

    UNSET = UNSET

    def __init__(self, name: str, params: List[Tuple[str, str, Any]],
                 make_builder: Callable[[str], Any]) -> None:
        self.name = name
        self.params = params
        self.make_builder = make_builder
        self._b: Any = None
        self.mode: Optional[str] = None  # None, "source" or "tile"
        self.mode_span: Optional[Span] = None
        self.frames: List[Any] = []
        self.loop_extents: List[Any] = []  # of the open IR loops (ascend.py counts with them)
        self.parallel_depth = 0  # of the open T.Parallel loops (ascend_memory.py skips them)
        self.kernels_entered = 0
        self.npu_lockstep = False  # ascend.py, Note [Cube and vector in lockstep]
        self.npu_state: Any = None
        self.reducers: List[Any] = []  # the T.comm_reducers of open "reduce_scope" T.attrs
        # phase 1
        self.grid: Optional[List[Any]] = None
        self.threads: Any = 1
        self.bodies: Dict[str, str] = {}
        # names of buffers made so far (allocations get unique ones)
        self.names: Dict[str, int] = {p[0]: 1 for p in params}
        self.target: Optional[str] = None  # the name being assigned (rewrite.py)
        self.proxies: List[Any] = []
        self.param_spans: Dict[str, Span] = {}  # set by prim_func from the rewrite
        for pname, dtype, shape in params:
            if shape is None:
                self.proxies.append(ScalarParam(self, pname, dtype))
            else:
                self.proxies.append(ParamBuffer(self, pname, shape, dtype))

    # --- the builder -------------------------------------------------------

    @property
    def b(self) -> Any:
        """The builder, made on first use."""
        return self._b if self._b is not None else self.ensure_builder()

    def ensure_builder(self) -> Any:
        if self._b is not None:
            return self._b
        b = self.make_builder(self.name)
        for proxy in self.proxies:
            span = self.param_spans.get(proxy.name, ("", 0, 0))
            if isinstance(proxy, ScalarParam):
                proxy._h = b.scalar_param(proxy.name, proxy.dtype_name, span)
            else:
                shape = [self._shape_handle(b, d) for d in proxy.shape]
                proxy._buf = b.tensor_param(proxy.name, shape, proxy.dtype, span)
        self._b = b
        for frame in self.frames:
            if isinstance(frame, KernelFrame):
                self._begin_kernel(frame)
        return b

    def _shape_handle(self, b: Any, d: Any) -> Any:
        if isinstance(d, _C.Expr):
            return b.symbol(d)
        return b.const(d, "int64")

    def _begin_kernel(self, frame: KernelFrame) -> None:
        grid = [to_handle(self, g, "int32", "grid extent") for g in frame.grid]
        handles = self.b.begin_kernel(grid, frame.threads, frame.span)
        for index, h in zip(frame.indices, handles):
            index._h = h
        frame.begun = True

    def tile(self, what: str, span: Optional[Span] = None) -> Any:
        """A tile-IR statement is about to be recorded: the body is a tile
        body (not phase 1's T.source), and the builder exists."""
        if self.mode == "source":
            raise error(ValueError, f"{what}: a prim_func body is either T.source text or tile "
                                    f"operations, not both (T.source at "
                                    f"{span_text(self.mode_span)})", span)
        if self.mode is None:
            self.mode = "tile"
            self.mode_span = span or user_span()
        self.ensure_builder()
        if not any(isinstance(f, KernelFrame) for f in self.frames) and what != "T.alloc_global":
            raise error(ValueError, f"{what} is only valid inside a T.Kernel block", span)
        return self.b

    def in_kernel(self) -> bool:
        return any(isinstance(f, KernelFrame) for f in self.frames)

    # --- kernels -----------------------------------------------------------

    def enter_kernel(self, grid: List[Any], threads: Any, span: Span) -> Any:
        if self.in_kernel():
            raise error(ValueError, "T.Kernel: a T.Kernel block inside another one", span)
        if not 1 <= len(grid) <= 3:
            raise ValueError(f"{self.name}: T.Kernel takes 1 to 3 grid extents, got {len(grid)}")
        if isinstance(threads, int) and not isinstance(threads, bool):
            threads_list = [threads]
        elif isinstance(threads, (tuple, list)) and 1 <= len(threads) <= 3 and all(
                isinstance(t, int) and not isinstance(t, bool) for t in threads):
            threads_list = list(threads)
        else:
            raise error(TypeError, f"T.Kernel: threads must be an int or a tuple of 1 to 3 "
                                   f"ints, got {threads!r}", span)
        self.kernels_entered += 1
        frame = KernelFrame(list(grid), threads_list, span)
        names = ("bx", "by", "bz")[: len(grid)]
        frame.indices = [BlockIndex(self, n) for n in names]
        if self.grid is None:
            self.grid = list(grid)
            self.threads = threads
        self.frames.append(frame)
        if self._b is not None:
            self._begin_kernel(frame)
        indices = tuple(frame.indices)
        return indices[0] if len(indices) == 1 else indices

    def exit_kernel(self, failed: bool) -> None:
        frame = self.frames.pop()
        if not failed and frame.begun:
            self.b.end_kernel(user_span())

    def thread_binding(self, dim: int) -> Value:
        span = user_span()
        b = self.tile("T.get_thread_binding", span)
        return Value(b.thread_binding(dim, span))

    def block_binding(self, dim: int) -> Value:
        """bx, by or bz of the innermost T.Kernel (T.get_block_binding)."""
        span = user_span()
        self.tile("T.get_block_binding", span)
        frame = next(f for f in reversed(self.frames) if isinstance(f, KernelFrame))
        if dim >= len(frame.indices):
            raise error(ValueError, f"T.get_block_binding: dim {dim}, but the T.Kernel at "
                                    f"{span_text(frame.span)} has a grid of "
                                    f"{len(frame.indices)} dimension(s)", span)
        return frame.indices[dim]

    # --- phase 1 -----------------------------------------------------------

    def source(self, given: Dict[str, str]) -> None:
        span = user_span()
        if self.mode == "tile":
            raise error(ValueError, f"T.source: a prim_func body is either T.source text or tile "
                                    f"operations, not both (a tile operation at "
                                    f"{span_text(self.mode_span)})", span)
        self.mode = "source"
        self.mode_span = span
        if self.kernels_entered > 1:
            raise ValueError(f"{self.name}: T.Kernel entered twice; a prim_func has one launch")
        for target, text in given.items():
            if not isinstance(text, str):
                raise TypeError(f"{self.name}: the {target} body must be a str, "
                                f"got {type(text).__name__}")
            if target in self.bodies:
                raise ValueError(f"{self.name}: T.source gave a {target} body twice")
            self.bodies[target] = text

    # --- names -------------------------------------------------------------

    def fresh_name(self, base: Optional[str]) -> str:
        base = base or "buf"
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def take_target(self) -> Optional[str]:
        name, self.target = self.target, None
        return name

    # --- statements --------------------------------------------------------

    def store(self, buf: BufferProxy, idx: Tuple[Any, ...], value: Any) -> None:
        span = user_span()
        b = self.tile(f"storing to {buf.name}", span)
        handles = [to_handle(self, k, what="index") for k in idx]
        h = to_handle(self, value, buf.dtype, "stored value")
        if b.dtype(h) != buf.dtype:
            h = b.cast(buf.dtype, h)
        b.store(buf.buf, handles, h, span)

    # --- what the rewritten body calls (rewrite.py) -------------------------

    def bind(self, name: str, value: Any, old: Any) -> Any:
        """`name = value`: an assignment to an alloc_var stores into it; a
        value that reads a buffer becomes a let (so a later store to the
        buffer cannot change it); anything else is Python's binding."""
        self.target = None
        if isinstance(old, VarBuffer) and not isinstance(value, BufferProxy):
            old.set(value)
            return old
        if isinstance(value, Value) and value._reads and self.in_kernel():
            span = user_span()
            self.tile("an assignment", span)
            return Value(self.b.let(name, value.h, span))
        return value

    def aug(self, name: str, old: Any, op: str, value: Any) -> Any:
        """`name op= value`."""
        if isinstance(old, VarBuffer):
            old.set(PY_BINARY[op](old.load(), value))
            return old
        return self.bind(name, PY_INPLACE[op](old, value), UNSET)

    def cmp(self, a: Any, op: str, b: Any) -> Any:
        if op in ("is", "is_not", "in", "not_in") or not (is_symbolic(a) or is_symbolic(b)):
            return PY_COMPARE[op](static_value(a), static_value(b))
        return binary(op, a, b)

    def chain(self, first: Any, ops: Sequence[str], *rest: Callable[[], Any]) -> Any:
        """`a < b < c`: each operand evaluated once, left to right; a
        static False stops the chain, as in Python."""
        left = first
        result: Any = True
        for op, thunk in zip(ops, rest):
            right = thunk()
            part = self.cmp(left, op, right)
            result = self.and_(lambda r=result: r, lambda p=part: p)
            if not is_symbolic(result) and not result:
                return result
            left = right
        return result

    def and_(self, *thunks: Callable[[], Any]) -> Any:
        value = thunks[0]()
        for thunk in thunks[1:]:
            if not is_symbolic(value):
                if not value:
                    return value
                value = thunk()
                continue
            other = thunk()
            if not is_symbolic(other):
                if other:
                    continue
                return other
            value = Value(self.b.binary("and", as_bool_handle(self, value),
                                        as_bool_handle(self, other)), reads=reads(value, other))
        return value

    def or_(self, *thunks: Callable[[], Any]) -> Any:
        value = thunks[0]()
        for thunk in thunks[1:]:
            if not is_symbolic(value):
                if value:
                    return value
                value = thunk()
                continue
            other = thunk()
            if not is_symbolic(other):
                if not other:
                    continue
                return other
            value = Value(self.b.binary("or", as_bool_handle(self, value),
                                        as_bool_handle(self, other)), reads=reads(value, other))
        return value

    def not_(self, value: Any) -> Any:
        if not is_symbolic(value):
            return not value
        return Value(self.b.unary("not", as_bool_handle(self, value)), reads=reads(value))

    def ifexp(self, cond: Any, then: Callable[[], Any], orelse: Callable[[], Any]) -> Any:
        if not is_symbolic(cond):
            return then() if cond else orelse()
        c = as_bool_handle(self, cond)
        t, f = then(), orelse()
        dt = None
        for x in (t, f):
            if isinstance(x, (Value, VarBuffer)):
                dt = self.b.dtype(to_handle(self, x))
                break
        return Value(self.b.select(c, to_handle(self, t, dt), to_handle(self, f, dt)),
                     reads=reads(cond, t, f))

    def if_(self, cond: Any) -> _IfState:
        if not is_symbolic(cond):
            return _IfState(False, bool(cond))
        span = user_span()
        b = self.tile("a symbolic if", span)
        h = as_bool_handle(self, cond)
        if self.npu_state is not None and self.npu_lockstep:
            self.npu_state["check_branch"](self, h, span)  # ascend.check_branch
        b.begin_if(h, span)
        self.frames.append(IF)
        return _IfState(True, False)

    def then_(self, st: _IfState) -> bool:
        return True if st.symbolic else st.static

    def else_(self, st: _IfState) -> bool:
        if st.symbolic:
            self.b.begin_else(user_span())
            return True
        return not st.static

    def endif_(self, st: _IfState) -> None:
        if st.symbolic:
            self.b.end_if(user_span())
            self.frames.pop()

    def range_(self, rng: Any, *args: Any) -> Any:
        """range(...) in a for header: inside a kernel a serial loop (as in
        TileLang), so its bounds may be symbolic."""
        if rng is builtins.range and self.in_kernel():
            return serial_range("range", "serial", *args)
        return rng(*args)

    def for_(self, it: Any, names: Any) -> Any:
        """`for <target> in it`: names is the target's name (a str), the
        names of a tuple target (a tuple), or None."""
        if type(it) is range and self.in_kernel():
            it = serial_range("range", "serial", it.start, it.stop, it.step)
        if isinstance(it, LoopRange):
            # A TileLang-Ascend kernel traced interleaved schedules its loops
            # (ascend.py, Note [Cube and vector concurrently]).
            hook = self.npu_state.get("user_loop") if self.npu_state is not None else None
            return hook(self, it, names) if hook else self.ir_loop(it, names)
        if is_symbolic(it):
            raise error(TypeError, f"a for loop over the symbolic value '{it!r}'; loop over "
                                   f"T.serial(n), T.Parallel(...) or range(n)")
        return self._py_loop(it)

    def _py_loop(self, it: Any) -> Any:
        self.frames.append(PY)
        depth = len(self.frames)
        try:
            yield from it
        finally:
            del self.frames[depth - 1:]

    def ir_loop(self, lr: LoopRange, names: Any) -> Any:
        span = user_span()
        unpack = isinstance(names, tuple)
        if isinstance(names, str):
            names = (names,)
        b = self.tile(lr.what, span)
        kinds = {"serial": "serial", "unroll": "unroll", "parallel": "parallel",
                 "vectorized": "vectorized", "pipelined": "pipelined"}
        if unpack and len(names) != len(lr.dims):
            raise error(ValueError, f"{lr.what}: {len(lr.dims)} loop variables, unpacked into "
                                    f"{len(names)} names", span)
        defaults = ("i", "j", "k", "l", "m", "n")
        loop_vars = []
        for d, (mn, ext) in enumerate(lr.dims):
            name = names[d] if names and d < len(names) else defaults[min(d, 5)]
            hmin = to_handle(self, mn, "int32", "loop bound")
            hext = to_handle(self, ext, b.dtype(hmin), "loop extent")
            v = b.begin_for(name, hmin, hext, kinds[lr.kind], lr.stages, span)
            if lr.schedule is not None and lr.kind == "pipelined":
                b.set_pipeline_schedule(*lr.schedule, span)
            if lr.origin is not None and d == 0:
                b.set_loop_origin(*lr.origin, span)
            self.frames.append(FOR)
            self.loop_extents.append(static_value(ext))
            loop_vars.append(Value(v))
        if lr.step != 1:
            stepped = loop_vars[0] * lr.step
            loop_vars[0] = stepped if static_value(lr.offset) == 0 else stepped + lr.offset
        parallel = len(lr.dims) if lr.kind == "parallel" else 0
        self.parallel_depth += parallel
        try:
            yield loop_vars[0] if len(loop_vars) == 1 and not unpack else tuple(loop_vars)
        finally:
            self.parallel_depth -= parallel
        end = user_span()
        for _ in lr.dims:
            b.end_for(end)
            self.frames.pop()
            self.loop_extents.pop()

    def while_(self, cond: Callable[[], Any]) -> Any:
        c = cond()
        if is_symbolic(c):
            span = user_span()
            b = self.tile("a symbolic while", span)
            b.begin_while(as_bool_handle(self, c), span)
            self.frames.append(WHILE)
            yield None
            b.end_while(user_span())
            self.frames.pop()
            return
        self.frames.append(PY)
        depth = len(self.frames)
        try:
            while c:
                yield None
                c = cond()
                if is_symbolic(c):
                    raise error(TypeError, "while: the condition was a Python value and became "
                                           "symbolic; a loop is either traced or run in Python")
        finally:
            del self.frames[depth - 1:]

    def jump(self, kind: str) -> bool:
        """`break` / `continue`: True when Python's should run (the loop is a
        Python loop); in a traced loop, records it and returns False."""
        under_if = False
        for frame in reversed(self.frames):
            if frame is IF:
                under_if = True
            elif frame in (FOR, WHILE):
                span = user_span()
                if kind == "break":
                    self.b.break_loop(span)
                else:
                    self.b.continue_loop(span)
                return False
            elif frame is PY:
                if under_if:
                    raise error(ValueError, f"'{kind}' under a symbolic if cannot leave a "
                                            f"Python loop (the loop is unrolled while tracing; "
                                            f"loop over T.serial to branch at run time)")
                return True
        return True

    def ret(self, value: Any = None) -> Any:
        for frame in self.frames:
            if frame in (FOR, WHILE, IF):
                what = "a symbolic if" if frame is IF else "a traced loop"
                raise error(ValueError, f"'return' inside {what} is not supported; a kernel "
                                        f"ends at the end of its body")
        return value

    # --- the end -----------------------------------------------------------

    def finish(self) -> Any:
        if self.mode == "tile":
            return self.b.finish(("", 0, 0))
        if not self.bodies:
            raise ValueError(f"{self.name}: the prim_func gives no body; call "
                             f"T.source(cpu=..., cuda=...) inside it")
        if not isinstance(self.threads, int) or isinstance(self.threads, bool):
            raise TypeError(f"{self.name}: threads must be an int, "
                            f"got {type(self.threads).__name__}")
        grid = self.grid if self.grid is not None else [1]
        return _C.make_prim_func(self.name, self.params, grid, self.threads, self.bodies)


def run(tracer: Tracer, fn: Callable[..., Any]) -> Any:
    with tracing(tracer):
        fn(*tracer.proxies)
        return tracer.finish()


__all__ = ["Tracer", "active", "run", "UNSET"]


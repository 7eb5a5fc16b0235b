"""The cube and the vector cores of a TileLang-Ascend kernel as two
concurrent programs, traced interleaved at their waits (ascend.py asks).

Note [Cube and vector concurrently]
Lockstep (ascend.py, Note [Cube and vector in lockstep]) runs the body in
program order, which is a schedule of the NPU's two programs only when every
read of a workspace comes after its write in the text. A kernel whose cube
part comes first and reads what the vector part below it writes
(examples/sparse_flash_attention: the cube's loop reads the KV rows the
vector loop gathers, and the vector loop reads the scores the cube loop
computes), or whose T.Scope("C") and T.Scope("V") wait for each other's
cross flags in turn, needs the two programs interleaved. So the body is
traced twice more:
- the survey: once in lockstep with the order checks off, recording for
  each top-level loop of the kernel body (in the order the body enters
  them) which side has statements in it and which side has cross events in
  it (reads and writes of the GM tensors the other side writes or reads,
  cross flags), and the side of each cross-flag operation;
- the interleaved trace: the body runs twice on two Python threads, the
  cube's and the vector cores', taking turns (one runs at a time, so the
  recording stays one program). Each records the statements of its side
  (an on-chip buffer's memory tells: UB is the vector cores', L1 / L0 the
  cube's; T.Scope and the cross flags' pipes tell the rest), both record
  the lets and control flow. A thread gives the turn away where the NPU
  would wait: at a read of a workspace the other side has not written
  since this side last read it, at a T.wait_cross_flag with no signal left
  to take, and at a top-level loop with cross events of its side, which
  runs in step with the other side's such loop (the two are one loop in
  the recording: their bodies interleave at the waits). A loop with no
  statement of a side is skipped by that side's thread; one with no cross
  event runs on its own.
The recorded order is a schedule of the two concurrent programs in which
each read comes after the write it waits for, so the emulation computes
what the NPU computes. When both threads wait, the NPU deadlocks, and the
error names both waits. A wait inside a loop or a branch that is not run in
step is not emulated (the other side cannot run inside it); nor are the
direct channels L0C->UB and UB->L1 here (write them through a workspace).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .active import tracing
from .spans import error, span_text
from .tracer import IF, FOR, KernelFrame, WHILE
from .values import Value, static_value, to_handle

OTHER = {"cube": "vector", "vector": "cube"}
_CUBE_MEMORIES = {"L1", "L0A", "L0B", "L0C"}
# The pipe a T.set_cross_flag follows tells its side; MTE2, S and ALL are both sides'.
_PIPE_SIDE = {"fix": "cube", "m": "cube", "mte1": "cube", "mte3": "vector", "v": "vector"}


class NeedsConcurrent(Exception):
    """Raised while a kernel is traced in lockstep when a read would have to
    wait for a write below it; T.prim_func surveys it and traces it again
    interleaved (Note [Cube and vector concurrently])."""


def side_text(side: str) -> str:
    return "the cube" if side == "cube" else "the vector cores"


def _does(side: str, verb: str) -> str:
    """'the cube waits', 'the vector cores wait'."""
    return f"{side_text(side)} {verb}s" if side == "cube" else f"{side_text(side)} {verb}"


class _Loop:
    """A top-level loop of the kernel body, as the survey saw it."""

    def __init__(self) -> None:
        self.content: set = set()  # sides with statements in it
        self.events: List[Tuple[str, str, str]] = []  # (side, "read" / "write" / "flag", name)


class Survey:
    """What the survey trace records (Note [Cube and vector concurrently])."""

    def __init__(self) -> None:
        self.loops: List[_Loop] = []
        self.open: Optional[_Loop] = None
        self.gm: Dict[Tuple[str, str], set] = {("cube", "read"): set(), ("cube", "write"): set(),
                                                ("vector", "read"): set(),
                                                ("vector", "write"): set()}
        self.flags: List[List[Any]] = []  # [kind, flag, side or None]
        self.last_side = "cube"

    def new_loop(self) -> _Loop:
        self.loops.append(_Loop())
        return self.loops[-1]

    def content(self, side: str) -> None:
        self.last_side = side
        if self.open is not None:
            self.open.content.add(side)

    def event(self, side: Any, kind: str, name: Any) -> None:
        if kind != "flag":
            self.gm[(side, kind)].add(name)
        if self.open is not None:
            self.open.events.append((side, kind, name))

    def resolve_flags(self) -> None:
        """A wait's side is the other side of its flag's signals."""
        setters: Dict[Any, str] = {}
        for kind, flag, side in self.flags:
            if kind == "set" and side is not None:
                setters[flag] = side
        for entry in self.flags:
            if entry[2] is None:
                setter = setters.get(entry[1])
                entry[2] = OTHER[setter] if setter else self.last_side

    def sync(self, loop: _Loop, side: str) -> bool:
        """Whether `side` waits or signals inside `loop`."""
        for s, kind, name in loop.events:
            s = s[2] if isinstance(s, list) else s  # a wait's flag entry, resolved
            if s != side:
                continue
            if kind == "flag" or (kind == "read" and name in self.gm[(OTHER[side], "write")]) \
                    or (kind == "write" and name in self.gm[(OTHER[side], "read")]):
                return True
        return False


class _Abort(BaseException):
    """Unwinds the vector thread when the cube's trace failed."""


class RoleBuilder:
    """The builder seen by the survey and the interleaved trace: forwards
    expressions, and records a statement only on the thread of its side
    (the survey: records every statement, noting its side)."""

    def __init__(self, real: Any, policy: Any, state: Dict[str, Any]) -> None:
        self._real = real
        self._policy = policy
        self._state = state
        self._memory: Dict[int, Tuple[str, Any]] = {}
        self._open: Dict[str, List[bool]] = {"cube": [], "vector": []}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def register(self, handle: Any, memory: str) -> None:
        self._memory[id(handle)] = (memory, handle)

    def _side(self, bufs: Tuple[Any, ...]) -> Optional[str]:
        if self._state.get("side"):
            return self._state["side"]
        mems = {self._memory.get(id(b), ("",))[0] for b in bufs}
        if "UB" in mems:
            return "vector"
        return "cube" if mems & _CUBE_MEMORIES else None

    def _ok(self, side: Optional[str]) -> bool:
        """side None: the side of the T.Scope, else the cube's (a statement
        on neither side's buffers is recorded once); "both": lets and
        control flow."""
        if side is None:
            side = self._state.get("scope_side") or "cube"
        p = self._policy
        if isinstance(p, Survey):
            if side != "both":
                p.content(side)
            return True
        role = p.turn
        if p.muted[role]:
            return False
        return side == "both" or side == role

    def _role(self) -> str:
        p = self._policy
        return "cube" if isinstance(p, Survey) else p.turn

    # --- control flow: both sides, each end matching its begin --------------

    def _begin(self) -> bool:
        ok = self._ok(self._state.get("side") or "both")
        self._open[self._role()].append(ok)
        return ok

    def begin_for(self, name, mn, extent, kind, stages, span):
        if self._begin():
            return self._real.begin_for(name, mn, extent, kind, stages, span)
        return self._real.const(0, self._real.dtype(mn))

    def end_for(self, span):
        if self._open[self._role()].pop():
            self._real.end_for(span)

    def begin_if(self, cond, span):
        if self._begin():
            self._real.begin_if(cond, span)

    def begin_else(self, span):
        if self._open[self._role()][-1]:
            self._real.begin_else(span)

    def end_if(self, span):
        if self._open[self._role()].pop():
            self._real.end_if(span)

    def begin_while(self, cond, span):
        if self._begin():
            self._real.begin_while(cond, span)

    def end_while(self, span):
        if self._open[self._role()].pop():
            self._real.end_while(span)

    def break_loop(self, span):
        if self._open[self._role()] and self._open[self._role()][-1]:
            self._real.break_loop(span)

    def continue_loop(self, span):
        if self._open[self._role()] and self._open[self._role()][-1]:
            self._real.continue_loop(span)

    # --- statements ---------------------------------------------------------

    def let(self, name, value, span):
        if self._ok(self._state.get("side") or "both"):
            return self._real.let(name, value, span)
        return value

    def alloc(self, name, shape, dtype, scope, span):
        return self._policy_alloc(lambda: self._real.alloc(name, shape, dtype, scope, span))

    def alloc_global(self, name, shape, dtype, init, span):
        return self._policy_alloc(lambda: self._real.alloc_global(name, shape, dtype, init,
                                                                  span))

    def _policy_alloc(self, make: Callable[[], Any]) -> Any:
        p = self._policy
        if isinstance(p, Survey):
            return make()
        return p.alloc(make)

    def store(self, buf, indices, value, span):
        if self._ok(self._side((buf,))):
            self._real.store(buf, indices, value, span)

    def evaluate(self, value, span):
        if self._ok(self._side(())):
            self._real.evaluate(value, span)

    def copy(self, src, dst, span, disable_tma=False):
        if self._ok(self._side((src[0], dst[0]))):
            self._real.copy(src, dst, span, disable_tma)

    def gemm(self, a, b, c, trans_a, trans_b, clear_accum, policy, span):
        if self._ok("cube"):
            self._real.gemm(a, b, c, trans_a, trans_b, clear_accum, policy, span)

    def fill(self, dst, value, span):
        if self._ok(self._side((dst[0],))):
            self._real.fill(dst, value, span)

    def reduce(self, kind, src, dst, dim, clear, span):
        if self._ok(self._side((src[0], dst[0]))):
            self._real.reduce(kind, src, dst, dim, clear, span)

    def atomic_add(self, dst, value, span):
        if self._ok(self._side((dst[0],))):
            self._real.atomic_add(dst, value, span)

    def print(self, value, msg, span):
        if self._ok(self._side(())):
            self._real.print(value, msg, span)

    def sync_threads(self, span):
        if self._ok(self._side(())):
            self._real.sync_threads(span)


class Interleaved:
    """The two threads of the interleaved trace and their turns (Note [Cube
    and vector concurrently]). The cube's is the thread that traces the
    prim_func; the vector cores' runs the body again from its start."""

    def __init__(self, tr: Any, survey: Survey, state: Dict[str, Any]) -> None:
        self.tr, self.survey, self.state = tr, survey, state
        self.cv = threading.Condition()
        self.turn = "cube"
        self.started = {"cube": True, "vector": False}
        self.done = {"cube": False, "vector": False}
        self.waiting: Dict[str, Any] = {"cube": None, "vector": None}
        self.muted = {"cube": 0, "vector": 0}
        self.ctx: Dict[str, Any] = {"vector": ([], [], None, None)}
        self.allocs: List[Any] = []
        self.n_allocs = {"cube": 0, "vector": 0}
        self.n_loops = {"cube": 0, "vector": 0}
        self.n_flags = {"cube": 0, "vector": 0}
        self.gm_avail: Dict[Tuple[str, str], int] = {}
        self.flag_avail: Dict[Tuple[Any, str], int] = {}
        self.join: Dict[str, Any] = {"cube": None, "vector": None}
        self.fused: Optional[Any] = None  # the loop var of the loop run in step
        self.closed = 0  # loops run in step and closed so far
        self.at_end = {"cube": False, "vector": False}
        self.error: Optional[BaseException] = None
        self.aborted = False
        self.kernel: Any = None  # (frames, loop extents, (cid, vid)) at the kernel's entry
        self.thread: Optional[threading.Thread] = None

    # --- turns --------------------------------------------------------------

    def _save(self, role: str) -> None:
        tr = self.tr
        self.ctx[role] = (tr.frames, tr.loop_extents, tr.target, self.state.get("scope_side"))

    def _load(self, role: str) -> None:
        tr = self.tr
        tr.frames, tr.loop_extents, tr.target, self.state["scope_side"] = self.ctx[role]

    def _switch(self, role: str) -> None:
        other = OTHER[role]
        with self.cv:
            self._save(role)
            self.turn = other
            if not self.started[other]:
                self.started[other] = True
                self.thread = threading.Thread(target=self._vector_main, daemon=True)
                self.thread.start()
            self.cv.notify_all()
            while self.turn != role and not self.aborted:
                self.cv.wait()
        if self.aborted:
            raise _Abort()
        self._load(role)
        if self.error is not None and role == "cube":
            raise self.error

    def _vector_main(self) -> None:
        with self.cv:
            while self.turn != "vector" and not self.aborted:
                self.cv.wait()
        try:
            if not self.aborted:
                self._load("vector")
                with tracing(self.tr):
                    self.state["body"](*self.tr.proxies)
        except _Abort:
            pass
        except BaseException as e:  # noqa: B036 - handed to the cube's thread
            self.error = e
        finally:
            with self.cv:
                self.done["vector"] = True
                self.turn = "cube"
                self.cv.notify_all()

    def block(self, what: str, need: str, pred: Callable[[], bool], span: Any,
              nested_ok: bool = False) -> bool:
        """Waits (gives the turn away) until pred(); False where the other
        side cannot make it true (it ended, or waits itself)."""
        role = self.turn
        while not pred():
            other = OTHER[role]
            w = self.waiting[other]
            if self.done[other] or (w is not None and not w[2]()):
                return False
            if not nested_ok and self._depth() != (1 if self.fused is not None else 0):
                raise error(NotImplementedError,
                            f"{what}: {_does(role, 'wait')} for {need} inside a loop or "
                            f"branch that {_does(other, 'do')} not run in step; the "
                            f"emulation cannot interleave the two parts there (Note [Cube "
                            f"and vector concurrently])", span)
            self.waiting[role] = (what, need, pred, span)
            try:
                self._switch(role)
            finally:
                self.waiting[role] = None
        return True

    def wait(self, what: str, need: str, pred: Callable[[], bool], span: Any,
             nested_ok: bool = False) -> None:
        if not self.block(what, need, pred, span, nested_ok):
            role, other = self.turn, OTHER[self.turn]
            w = self.waiting[other]
            then = f"{_does(other, 'end')} {'its' if other == 'cube' else 'their'} part" if w is None else \
                f"{_does(other, 'wait')} for {w[1]} ({w[0]} at {span_text(w[3])})"
            raise error(ValueError, f"{what}: {_does(role, 'wait')} for {need}, but {then}: a "
                                    f"deadlock on the NPU", span)

    def _depth(self) -> int:
        frames = self.tr.frames
        k = max(i for i, f in enumerate(frames) if isinstance(f, KernelFrame))
        return sum(1 for f in frames[k + 1:] if f in (FOR, WHILE, IF))

    # --- what the trace asks -------------------------------------------------

    def enter_vector(self) -> Any:
        """The vector thread's T.Kernel: the cube's kernel, already open."""
        frames, extents, result = self.kernel
        self.tr.frames, self.tr.loop_extents = list(frames), list(extents)
        return result

    def alloc(self, make: Callable[[], Any]) -> Any:
        """Both threads run the same allocations in the same order: the n-th
        of each is one buffer."""
        role = self.turn
        n = self.n_allocs[role]
        self.n_allocs[role] = n + 1
        if n == len(self.allocs):
            self.allocs.append(make())
        return self.allocs[n]

    def gm_event(self, side: str, kind: str, name: str, what: str, span: Any) -> None:
        """A read or write of a GM tensor by `side` (T.copy)."""
        role = self.turn
        if side != role or self.muted[role]:
            return
        other = OTHER[side]
        if kind == "write":
            key = (name, other)
            self.gm_avail[key] = self.gm_avail.get(key, 0) + 1
            return
        if name not in self.survey.gm[(other, "write")]:
            return
        key = (name, side)
        self.wait(what, f"a write of the workspace {name} by {side_text(other)}",
                  lambda: self.gm_avail.get(key, 0) > 0, span)
        self.gm_avail[key] = 0

    def flag(self, kind: str, flag: Any, span: Any) -> None:
        """T.set_cross_flag / T.wait_cross_flag: the n-th of each thread is
        the survey's n-th, whose side it has."""
        role = self.turn
        n = self.n_flags[role]
        self.n_flags[role] = n + 1
        side = self.survey.flags[n][2]
        if side != role or self.muted[role]:
            return
        if kind == "set":
            key = (flag, OTHER[side])
            self.flag_avail[key] = self.flag_avail.get(key, 0) + 1
            return
        key = (flag, side)
        self.wait(f"T.wait_cross_flag({flag!r})",
                  f"T.set_cross_flag(..., {flag!r}) by {side_text(OTHER[side])}",
                  lambda: self.flag_avail.get(key, 0) > 0, span)
        self.flag_avail[key] -= 1

    def loop(self, tr: Any, lr: Any, names: Any, span: Any) -> Any:
        """A top-level loop of the kernel body, on the running thread."""
        role = self.turn
        n = self.n_loops[role]
        self.n_loops[role] = n + 1
        info = self.survey.loops[n] if n < len(self.survey.loops) else _Loop()
        if role not in info.content:
            self.muted[role] += 1
            try:
                yield from tr.ir_loop(lr, names)
            finally:
                self.muted[role] -= 1
            return
        if not self.survey.sync(info, role) or self.muted[role]:
            yield from tr.ir_loop(lr, names)
            return
        yield from self._in_step(tr, lr, names, span)

    def _in_step(self, tr: Any, lr: Any, names: Any, span: Any) -> Any:
        role, other = self.turn, OTHER[self.turn]
        if len(lr.dims) != 1:
            raise error(NotImplementedError,
                        f"{lr.what}: a loop of {len(lr.dims)} dimensions in which "
                        f"{_does(role, 'wait')} for {side_text(other)} is not emulated; "
                        f"write it as one loop (Note [Cube and vector concurrently])", span)
        self.join[role] = (lr, span)
        if self.join[other] is None:
            if not self.block(lr.what, f"a loop of {side_text(other)} to run in step with",
                              lambda: self.fused is not None, span):
                # The other side has no such loop: this one runs on its own.
                self.join[role] = None
                yield from tr.ir_loop(lr, names)
                return
        else:
            self._open(tr, role, span)
        var = self.fused
        gen = self.closed
        tr.frames.append(FOR)
        tr.loop_extents.append(static_value(lr.dims[0][1]))
        v = var
        if lr.step != 1:
            v = var * lr.step
            v = v if static_value(lr.offset) == 0 else v + lr.offset
        yield (v,) if isinstance(names, tuple) else v
        tr.frames.pop()
        tr.loop_extents.pop()
        end = span
        self.at_end[role] = True
        if self.at_end[other]:
            self.tr.b._real.end_for(end)
            self.fused = None
            self.closed += 1
            self.at_end = {"cube": False, "vector": False}
        else:
            self.wait(lr.what, f"the end of {side_text(other)}'s loop run in step with it",
                      lambda: self.closed > gen, span, nested_ok=True)

    def _open(self, tr: Any, role: str, span: Any) -> None:
        """Both sides are at their loops: one loop, if their ranges agree."""
        other = OTHER[role]
        mine, (theirs, their_span) = self.join[role][0], self.join[other]
        b = tr.b._real

        def text(lr: Any) -> List[str]:
            out = []
            for mn, ext in lr.dims:
                out += [str(static_value(x)) if isinstance(static_value(x), int)
                        else b.text(x.h if isinstance(x, Value) else x) for x in (mn, ext)]
            return out + [str(lr.step), str(static_value(lr.offset))]
        if text(mine) != text(theirs):
            raise error(NotImplementedError,
                        f"{mine.what}: {_does(role, 'run')} this loop in step with "
                        f"{side_text(other)}'s loop at {span_text(their_span)}, whose range "
                        f"differs; the emulation interleaves loops of one range (Note [Cube "
                        f"and vector concurrently])", span)
        mn, ext = mine.dims[0]
        hmin = to_handle(tr, mn, "int32", "loop bound")
        hext = to_handle(tr, ext, b.dtype(hmin), "loop extent")
        kind = mine.kind if mine.kind == theirs.kind else "serial"
        kind = "serial" if kind == "pipelined" else kind
        self.fused = Value(b.begin_for("k", hmin, hext, kind, 0, span))
        self.join = {"cube": None, "vector": None}

    def finish_cube(self, span: Any) -> None:
        """The cube's part ended: the vector cores' must end too."""
        self.wait("T.Kernel", "the end of the vector cores' part",
                  lambda: self.done["vector"], span, nested_ok=True)

    def abort(self) -> None:
        with self.cv:
            self.aborted = True
            self.cv.notify_all()
        if self.thread is not None:
            self.thread.join()

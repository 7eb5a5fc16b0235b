"""TileLang-Ascend's dialect, emulated on tilejit's targets.

    with T.Kernel(n, is_npu=True) as (cid, vid):
        A_L1 = T.alloc_L1((128, 64), "float16")
        ...

Note [Ascend emulation]
An Ascend AI core is one cube core (matrices: L1 -> L0A / L0B -> L0C) and
two vector cores (UB), each vector core running the same program with its
own `vid`. Here a T.Kernel(n, is_npu=True) is n blocks, and each block runs
its body once per vid, 0 then 1, in a serial loop: the vector code of a
block therefore sees vid 0 and 1 as the two vector cores would, and the cube
code runs in both iterations, each computing the same tile into the block's
own L1 / L0 buffers (its GM writes store the same values twice). So a
program whose data flows from cube to vector (L0C -> UB directly, the copy
that TileLang-Ascend routes through a GM workspace, or L0C -> GM -> UB
through a workspace of the author's) computes what the NPU computes: each
vector step reads what the cube wrote at the same step before it. This is
the fast path, and every program starts on it.

Note [Cube and vector in lockstep]
A flow from vector to cube (UB -> L1, or UB -> GM workspace -> L1) needs
both vector cores' halves before the cube reads them, which one serial pass
per vid cannot give. On the NPU (TL_ASCEND_AUTO_CV_COMBINE / AUTO_CV_SYNC)
the cube part and the vector part of the body are concurrent programs, and
the k-th read of a workspace waits for its k-th write. When tracing meets
such a flow it raises NeedsLockstep, and T.prim_func traces the body again
in lockstep: the statements run once each in program order, the cube's
once per block, each vector step (a T.copy, T.tile.*, T.reduce_* or store
on a UB buffer) once per vector core inside `for v in 0..2: vid = v`, vid
being a variable the steps set, and each UB buffer one per core (a leading
dimension of 2 that the step's vid indexes). Program order is a schedule
the two concurrent programs can take whenever each read of a workspace
comes after its write in the text, so the emulation computes what the NPU
computes; the read-write pairs are checked as the kernel is traced:
- a read of a workspace before the other side's first write of it
  (the NPU would let the reader wait for a later write) is not emulated,
  reported at the read;
- more reads than writes per block (loop trip counts multiplied out, when
  static) is a read that waits forever: a deadlock on the NPU, reported at
  the read that has no write;
- T.wait_cross_flag with no T.set_cross_flag of its flag before it is the
  same deadlock; the flags order nothing further.
A read that program order puts before its write, or a T.wait_cross_flag
before its signal, needs the two parts interleaved: ascend_concurrent.py,
Note [Cube and vector concurrently]. A branch on vid outside a vector step
has no core's vid to test and is not emulated yet.

Within a core there is one instruction stream here, so the pipe flags and
barriers (T.set_flag, T.wait_flag, T.barrier_all, T.pipe_barrier;
ascend_sync.py) order nothing further and are accepted.

The on-chip buffers are tilejit tile buffers (L1, L0A, L0B and UB shared,
L0C a fragment), each tagged with its memory, and placed in it as
TileLang-Ascend's compiler places them, within the A2/A3 (910B / 910C)
capacities its code generator reserves (ascend_memory.py, Note [Ascend
memory planning]): by liveness under TL_ASCEND_MEMORY_PLANNING, else one
after another; a buffer that finds no room is an error at its line.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional

from . import ascend_tile, dtypes
from .active import factory_configs
from .ascend_concurrent import Interleaved, NeedsConcurrent, RoleBuilder, Survey
from .ascend_memory import MemoryPlan
from .loops import LoopRange
from .ops import _alloc, _region, _region_handle, _shape_list
from .spans import error, user_span
from .tracer import FOR, KernelFrame
from .values import (BufferProxy, Region, Value, _index_tuple, call_intrinsic, current_tracer,
                     is_symbolic, min_max, static_value, to_handle)

# Bytes of each memory on A2/A3, as TileLang-Ascend's code generator
# reserves them (src/target/codegen_ascend.cc: ASCEND_A2A3_*_SIZE; L1 and UB
# keep 256 bytes back).
CAPACITY: Dict[str, int] = {"L1": 524032, "L0A": 65536, "L0B": 65536, "L0C": 131072,
                            "UB": 196352}

# Memory -> tilejit scope.
_SCOPE = {"L1": "shared", "L0A": "shared", "L0B": "shared", "L0C": "fragment", "UB": "shared"}

# The data paths of the core (src, dst). L0C -> UB and UB -> L1 are
# TileLang-Ascend's "virtual channels" (through GM on the NPU, direct here;
# UB -> L1, checked apart in check_copy, needs lockstep).
_PATHS = {("GM", "L1"), ("GM", "UB"), ("L1", "L0A"), ("L1", "L0B"), ("L0C", "GM"),
          ("L0C", "UB"), ("UB", "GM"), ("UB", "UB")}
_PATHS_TEXT = "GM->L1, GM->UB, L1->L0A, L1->L0B, L0C->GM, L0C->UB, UB->GM, UB->UB, UB->L1"


class NpuBuffer(BufferProxy):
    """An on-chip buffer of the Ascend core; `memory` is L1, L0A, L0B, L0C
    or UB. In lockstep (Note [Cube and vector in lockstep]) a UB buffer is
    one per vector core: the IR buffer has a leading dimension of 2, which
    `core_prefix` (the vid of the vector core running) indexes."""

    memory = ""
    core_prefix: Optional[Value] = None
    plan: Optional[MemoryPlan] = None  # the kernel's, once allocated

    @property
    def buf(self) -> Any:
        # Every op that reads or writes the buffer asks for its handle: a
        # touch for the planning (Note [Ascend memory planning]).
        if self.plan is not None:
            _touch(self)
        return self._buf

    def check_copy(self, src: Region, dst: Region) -> None:
        """T.copy(src, dst) with this buffer on one side (ops.copy asks)."""
        check_copy(src, dst)

    def __getitem__(self, key: Any) -> Any:
        if self.core_prefix is None:
            return super().__getitem__(key)
        idx = _index_tuple(key)
        if any(isinstance(k, slice) for k in idx):
            return self.region(idx)
        self._check_rank(len(idx), "indexed")
        tr = current_tracer("indexing a buffer")
        handles = [self.core_prefix.h] + [to_handle(tr, k, what="index") for k in idx]
        return Value(tr.b.load(self.buf, handles), (self, list(idx)))

    def __setitem__(self, key: Any, value: Any) -> None:
        if self.core_prefix is None:
            return super().__setitem__(key, value)
        idx = _index_tuple(key)
        if any(isinstance(k, slice) for k in idx):
            return super().__setitem__(key, value)  # the error
        self._check_rank(len(idx), "indexed")
        tr = current_tracer("storing to a buffer")
        span = user_span()

        def store() -> None:
            b = tr.tile(f"storing to {self.name}", span)
            handles = [self.core_prefix.h] + [to_handle(tr, k, what="index") for k in idx]
            h = to_handle(tr, value, self.dtype, "stored value")
            if b.dtype(h) != self.dtype:
                h = b.cast(self.dtype, h)
            b.store(self.buf, handles, h, span)
        per_core(tr, [self], store)


def memory_of(buf: BufferProxy) -> str:
    """The Ascend memory a buffer lives in: GM for a tensor parameter or a
    global workspace, else the memory it was allocated in ("" for tilejit's
    own allocations)."""
    if isinstance(buf, NpuBuffer):
        return buf.memory
    return "GM" if buf.scope() == "global" else ""


# --- the kernel --------------------------------------------------------------

class NeedsLockstep(Exception):
    """Raised while a kernel is traced in the serial vid loop when it turns
    out to need its cube and vector parts run in lockstep; T.prim_func
    traces it again that way (Note [Cube and vector in lockstep])."""


def enter_npu_kernel(tr: Any, grid: list, span: Any) -> Any:
    """T.Kernel(n, is_npu=True).__enter__: n blocks of one thread whose body
    runs once per vector core (Note [Ascend emulation]), or in lockstep
    (Note [Cube and vector in lockstep]); yields (cid, vid)."""
    if len(grid) != 1:
        raise error(ValueError, f"T.Kernel(is_npu=True) takes one grid extent (the number of "
                                f"AI cores used), got {len(grid)}", span)
    sched = getattr(tr, "npu_state", None) and tr.npu_state.get("sched")
    if isinstance(sched, Interleaved) and sched.turn == "vector":
        return sched.enter_vector()  # the vector cores' thread (Note [Cube and vector concurrently])
    cid = tr.enter_kernel(grid, 1, span)
    b = tr.b
    b.set_dialect("ascend")  # the CPU target emulates it; "auto" picks the CPU
    configs = factory_configs() or {}
    planned = bool(configs.get("tl.ascend_memory_planning",
                               configs.get("TL_ASCEND_MEMORY_PLANNING", False)))
    state: Dict[str, Any] = {"plan": MemoryPlan(CAPACITY, planned), "vector_allocs": 0,
                             "writes": {}, "reads": {}, "flags": {}, "span": span,
                             "lockstep": bool(getattr(tr, "npu_lockstep", False)),
                             "in_vector": False,
                             # hooks of ops.py and tracer.py, which do not import this module
                             "per_core": per_core, "check_branch": check_branch,
                             "reduce": reduce_per_core, "copy_relu": ascend_tile.copy_relu}
    if state["lockstep"]:
        # vid is a variable that each vector step sets (per_core).
        zero = b.const(0, "int32")
        vid_buf = b.alloc(tr.fresh_name("vid"), [b.const(1, "int64")], "int32", "shared", span)
        b.store(vid_buf, [zero], zero, span)
        state["vid_buf"] = vid_buf
        vid = Value(b.load(vid_buf, [zero]))
        state["vid"] = vid
        survey = getattr(tr, "npu_survey", None)
        if survey is not None:
            # Note [Cube and vector concurrently]: the survey, or the interleaved trace.
            interleave = getattr(tr, "npu_interleave", False)
            state["sched"] = Interleaved(tr, survey, state) if interleave else survey
            state["user_loop"] = user_loop
            state["body"] = getattr(tr, "npu_body", None)
            tr._b = RoleBuilder(tr._b, state["sched"], state)
            if interleave:
                state["sched"].kernel = (list(tr.frames), list(tr.loop_extents), (cid, vid))
    else:
        loop = tr.ir_loop(LoopRange("T.Kernel", "serial", [(0, 2)]), "vid")
        vid = next(loop)
        state["loop"] = loop
    state["depth"] = _loop_depth(tr)
    tr.npu_state = state
    return cid, vid


def per_core(tr: Any, buffers: Iterable[Any], emit: Callable[[], Any]) -> Any:
    """Emits a vector-core step: in lockstep, when one of `buffers` is one
    per vector core, inside `for v in 0..2: vid = v` (Note [Cube and vector
    in lockstep]); otherwise as it is."""
    state = getattr(tr, "npu_state", None)
    if state is None or not state["lockstep"] or state["in_vector"] or \
            not any(getattr(x, "core_prefix", None) is not None for x in buffers):
        return emit()
    b = tr.b
    span = user_span()
    zero = b.const(0, "int32")
    state["in_vector"], state["side"] = True, "vector"  # the side, for RoleBuilder
    try:
        v = b.begin_for("vid", zero, b.const(2, "int32"), "serial", 0, span)
        b.store(state["vid_buf"], [zero], v, span)
        result = emit()
        b.end_for(span)
    finally:
        state["in_vector"], state["side"] = False, None
    return result


def user_loop(tr: Any, lr: Any, names: Any) -> Any:
    """A `for` of the body in the survey or the interleaved trace: a loop
    at the kernel body's top level is recorded (the survey) or run as the
    scheduler says (Note [Cube and vector concurrently]); Tracer.for_ asks."""
    state = tr.npu_state
    sched = state["sched"]
    k = max(i for i, f in enumerate(tr.frames) if isinstance(f, KernelFrame))
    if state["in_vector"] or any(isinstance(f, str) and f != "py" for f in tr.frames[k + 1:]):
        return tr.ir_loop(lr, names)
    if isinstance(sched, Interleaved):
        return sched.loop(tr, lr, names, user_span())
    return _survey_loop(tr, sched, lr, names)


def _survey_loop(tr: Any, survey: Survey, lr: Any, names: Any) -> Any:
    survey.open = survey.new_loop()
    try:
        yield from tr.ir_loop(lr, names)
    finally:
        survey.open = None


def reduce_per_core(tr: Any, op: str, src: Region, dst: Region, kind: str, dim: int,
                    clear: bool) -> None:
    """T.reduce_* of a UB buffer in lockstep, as element loops (the CPU
    backend's reduction takes 1-D and 2-D tiles; one per core adds the vid
    dimension). ops.reduce asks."""
    def ranges(r: Region) -> list:
        return list(r.ranges) if r.ranges is not None else [(0, e) for e in r.buffer.shape]
    s_r, d_r = ranges(src), ranges(dst)
    keep = [k for k in range(len(s_r)) if k != dim]
    if len(d_r) == len(s_r):
        d_r = [d_r[k] for k in keep]  # the reduced dimension kept with extent 1
    if len(d_r) != len(keep):
        raise error(ValueError, f"{op}: the destination {dst.buffer.name} has {len(d_r)} "
                                f"dimensions; reducing {src.buffer.name} along {dim} leaves "
                                f"{len(keep)}")

    def element(x: Any) -> Any:
        return call_intrinsic("abs", x) if kind in ("abssum", "absmax") else x

    def combine(a: Any, b: Any) -> Any:
        return a + b if kind in ("sum", "abssum") else min_max(
            "min" if kind == "min" else "max", a, b)

    def emit() -> None:
        outer = LoopRange(op, "parallel", [(0, e) for _, e in d_r]) if d_r else None
        loops = tr.ir_loop(outer, tuple("ijkl"[:len(d_r)])) if outer else iter([()])
        for ivs in loops:
            ivs = ivs if isinstance(ivs, tuple) else (ivs,)
            didx = tuple(m + i for (m, _), i in zip(d_r, ivs))

            def sidx(j: Any) -> tuple:
                idx = [0] * len(s_r)
                for k, i in zip(keep, ivs):
                    idx[k] = s_r[k][0] + i
                idx[dim] = s_r[dim][0] + j
                return tuple(idx)
            start = 0
            if clear:
                dst.buffer[didx] = element(src.buffer[sidx(0)])
                start = 1
            n = s_r[dim][1]
            for j in tr.ir_loop(LoopRange(op, "serial", [(start, n - start)]), "r"):
                dst.buffer[didx] = combine(dst.buffer[didx], element(src.buffer[sidx(j)]))
    per_core(tr, [src.buffer, dst.buffer], emit)


def check_branch(tr: Any, cond: Any, span: Any) -> None:
    """A symbolic if in lockstep: a condition on vid outside a vector step
    would see no core's vid (Tracer.if_ asks)."""
    state = tr.npu_state
    if state["in_vector"]:
        return
    name = tr.b.text(state["vid"].h)
    if name in tr.b.text(cond):
        raise error(NotImplementedError, f"a branch on vid ('{tr.b.text(cond)}') in a kernel "
                                         f"whose cube and vector parts run in lockstep is not "
                                         f"emulated yet (Note [Cube and vector in lockstep])",
                    span)


def exit_npu_kernel(tr: Any, failed: bool) -> None:
    state = getattr(tr, "npu_state", None)
    sched = state.get("sched") if state is not None else None
    if isinstance(sched, Interleaved):
        # Note [Cube and vector concurrently]: the cube's kernel ends when
        # both parts have; what follows it is traced by the cube's thread.
        if sched.turn == "vector":
            sched.muted["vector"] += 1
            return
        try:
            if not failed:
                sched.finish_cube(state["span"])
        finally:
            sched.abort()
    if sched is not None:
        tr._b = tr._b._real
    tr.npu_state = None
    if state is not None and not failed and "loop" in state:
        next(state["loop"], None)  # ends the vid loop
    elif failed:
        # The body raised inside the vid loop: drop its frames, keep the error.
        while tr.frames and not isinstance(tr.frames[-1], KernelFrame):
            tr.frames.pop()
    tr.exit_kernel(failed)
    if state is not None and not failed and sched is None:
        _check_pairs(state)
    if state is not None and not failed and not isinstance(sched, Survey):
        state["plan"].check()


def _npu_state(op: str) -> Dict[str, Any]:
    tr = current_tracer(op)
    state = getattr(tr, "npu_state", None)
    if state is None:
        raise error(ValueError, f"{op} is only valid inside a T.Kernel(..., is_npu=True) block")
    return state


# --- allocations -------------------------------------------------------------

def _alloc_npu(memory: str, op: str, shape: Any, dtype: Any) -> NpuBuffer:
    span = user_span()
    state = _npu_state(op)
    dims = [static_value(d) for d in _shape_list(op, shape)]
    for d, dim in enumerate(dims):
        if not isinstance(dim, int):
            raise error(ValueError, f"{op}: dimension {d} of the shape is '{dim!r}'; on-chip "
                                    f"buffers have static shapes", span)
    per_vid = memory == "UB" and state["lockstep"]
    buf = _alloc(op, [2] + dims if per_vid else dims, dtype, _SCOPE[memory], NpuBuffer)
    buf.memory = memory
    if per_vid:
        buf.shape, buf.ndim, buf.core_prefix = tuple(dims), len(dims), state["vid"]
    sched = state.get("sched")
    if sched is not None:
        tr_b = current_tracer(op).b
        tr_b.register(buf.buf, memory)
        if isinstance(sched, Interleaved) and sched.turn == "vector":
            # The cube's thread counted it (Note [Cube and vector
            # concurrently]); the vector cores' copy is the same buffer.
            state["plan"].alias(buf, state["vector_allocs"])
            state["vector_allocs"] += 1
            buf.plan = state["plan"]
            return buf
    count = 1
    for dim in dims:
        count *= dim
    state["plan"].allocate(buf, memory, count * dtypes.bits_of(buf.dtype) // 8, op, span)
    buf.plan = state["plan"]
    return buf


def _loop_depth(tr: Any) -> int:
    """The `for` loops open in the kernel, T.Parallel's not counted."""
    k = max(i for i, f in enumerate(tr.frames) if isinstance(f, KernelFrame))
    return sum(1 for f in tr.frames[k + 1:] if f == FOR) - tr.parallel_depth


def _touch(buf: NpuBuffer) -> None:
    tr = current_tracer("an on-chip buffer")
    state = getattr(tr, "npu_state", None)
    if state is None or state["plan"] is not buf.plan:
        return
    sched = state.get("sched")
    if isinstance(sched, Interleaved):
        # Each part's thread traces the whole body; a buffer is its side's.
        side = "vector" if buf.memory == "UB" else "cube"
        if sched.turn != side or sched.muted[side]:
            return
    buf.plan.touch(buf, user_span(), _loop_depth(tr) - state["depth"])


def alloc_L1(shape: Any, dtype: Any) -> NpuBuffer:  # noqa: N802
    """A buffer in the cube core's L1 (operands on their way to L0A / L0B)."""
    return _alloc_npu("L1", "T.alloc_L1", shape, dtype)


def alloc_L0A(shape: Any, dtype: Any) -> NpuBuffer:  # noqa: N802
    """A buffer in L0A, the cube's left operand."""
    return _alloc_npu("L0A", "T.alloc_L0A", shape, dtype)


def alloc_L0B(shape: Any, dtype: Any) -> NpuBuffer:  # noqa: N802
    """A buffer in L0B, the cube's right operand."""
    return _alloc_npu("L0B", "T.alloc_L0B", shape, dtype)


def alloc_L0C(shape: Any, dtype: Any) -> NpuBuffer:  # noqa: N802
    """A buffer in L0C, the cube's accumulator."""
    return _alloc_npu("L0C", "T.alloc_L0C", shape, dtype)


def alloc_ub(shape: Any, dtype: Any) -> NpuBuffer:
    """A buffer in the vector core's unified buffer (UB)."""
    return _alloc_npu("UB", "T.alloc_ub", shape, dtype)


# --- copies and the cube -----------------------------------------------------

def check_copy(src: Region, dst: Region) -> None:
    """T.copy between Ascend memories: only along the core's data paths.
    Called by T.copy when either side is an on-chip Ascend buffer."""
    s, d = memory_of(src.buffer), memory_of(dst.buffer)
    state = getattr(current_tracer("T.copy"), "npu_state", None)
    if state is not None and isinstance(state.get("sched"), Interleaved) and \
            (s, d) in (("UB", "L1"), ("L0C", "UB")):
        raise error(NotImplementedError,
                    f"T.copy: {s}->{d} ({src.buffer.name} to {dst.buffer.name}) in a kernel "
                    f"whose cube and vector parts are interleaved at their waits is not "
                    f"emulated yet; copy through a GM workspace (Note [Cube and vector "
                    f"concurrently])")
    if (s, d) == ("UB", "L1") and state is not None:
        # The vector-to-cube channel: the cube needs both vector cores' halves.
        if not state["lockstep"]:
            raise NeedsLockstep()
        return
    if (s, d) in _PATHS:
        if state is not None:
            _workspace_event(state, src, dst, s, d)
        return
    where = f"{src.buffer.name} ({s or src.buffer.scope()}) to {dst.buffer.name} " \
            f"({d or dst.buffer.scope()})"
    raise error(ValueError, f"T.copy: {where} is not a data path of the Ascend core; the "
                            f"paths are {_PATHS_TEXT}")


# (src, dst) memories -> (side, "read" / "write") of the GM tensor.
_GM_EVENTS = {("GM", "L1"): ("cube", "read"), ("GM", "UB"): ("vector", "read"),
              ("L0C", "GM"): ("cube", "write"), ("UB", "GM"): ("vector", "write")}
_OTHER = {"cube": "vector", "vector": "cube"}
_HOW = {("cube", "read"): "GM->L1", ("vector", "read"): "GM->UB",
        ("cube", "write"): "L0C->GM", ("vector", "write"): "UB->GM"}


def _side_text(side: str) -> str:
    return "the cube" if side == "cube" else "the vector cores"


def _workspace_event(state: Dict[str, Any], src: Region, dst: Region, s: str, d: str) -> None:
    """Records a GM read or write of one side, for the workspaces the cube
    and vector parts exchange (Note [Cube and vector in lockstep]): a
    vector-to-cube flow needs lockstep, and a read of a tensor the other
    side writes below it needs the parts interleaved (Note [Cube and vector
    concurrently]), whose scheduler then takes the event."""
    event = _GM_EVENTS.get((s, d))
    if event is None:
        return
    side, kind = event
    gm = src.buffer if kind == "read" else dst.buffer
    span = user_span()
    sched = state.get("sched")
    if isinstance(sched, Interleaved):
        sched.gm_event(side, kind, gm.name, "T.copy", span)
        return
    if sched is not None:
        sched.event(side, kind, gm.name)  # the survey
        return
    count = _loop_count(current_tracer("T.copy"))
    key = (gm.name, side)
    if kind == "write":
        state["writes"].setdefault(key, []).append((count, span))
        early = state["reads"].get((gm.name, _OTHER[side]))
        if early is not None and early[0][2]:
            # The read waits for this later write: lockstep, then interleaved
            # (Note [Cube and vector concurrently]).
            raise NeedsConcurrent() if state["lockstep"] else NeedsLockstep()
        return
    written = (gm.name, _OTHER[side]) in state["writes"]
    state["reads"].setdefault(key, []).append((count, span, not written))
    if written and side == "cube" and not state["lockstep"]:
        raise NeedsLockstep()


def _loop_count(tr: Any) -> Optional[int]:
    """How many times a statement here runs per block (the product of the
    enclosing loops' extents), None when one is symbolic."""
    n = 1
    for ext in getattr(tr, "loop_extents", ()):
        if not isinstance(ext, int):
            return None
        n *= ext
    return n


def _check_pairs(state: Dict[str, Any]) -> None:
    """At the end of the kernel: the k-th read of a workspace waits for its
    k-th write; more reads than writes is a read that waits forever."""
    for (name, side), reads in state["reads"].items():
        writes = state["writes"].get((name, _OTHER[side]))
        if not writes:
            continue  # a tensor only read here: an input, not a workspace
        if any(c is None for c, *_ in reads) or any(c is None for c, _ in writes):
            continue  # symbolic trip counts: not counted
        total = sum(c for c, _ in writes)
        seen = 0
        for c, span, _ in reads:
            seen += c
            if seen > total:
                raise error(ValueError,
                            f"T.copy: {_side_text(side)} read the workspace {name} "
                            f"({_HOW[(side, 'read')]}) {sum(c for c, *_ in reads)} times per "
                            f"block but {_side_text(_OTHER[side])} write it "
                            f"({_HOW[(_OTHER[side], 'write')]}) {total} times: read "
                            f"{total + 1} waits for a write that never comes (a deadlock "
                            f"on the NPU)", span)


def gemm_v0(A: Any, B: Any, C: Any, transpose_A: bool = False,  # noqa: N803
            transpose_B: bool = False, init: Any = False) -> None:
    """C (L0C) = op(A) @ op(B) (+ C unless init), A and B in L1 (the cube
    moves them through L0A / L0B) or already in L0A / L0B."""
    span = user_span()
    tr = current_tracer("T.gemm_v0")
    _npu_state("T.gemm_v0")
    ra, rb, rc = (_region("T.gemm_v0", n, x) for n, x in (("A operand", A), ("B operand", B),
                                                           ("C operand", C)))
    for what, r, ok in (("A", ra, ("L1", "L0A")), ("B", rb, ("L1", "L0B")), ("C", rc, ("L0C",))):
        m = memory_of(r.buffer)
        # Developer mode: T.alloc_shared / T.alloc_fragment, whose memory the
        # NPU compiler infers from their use (shared operands live in L1, a
        # fragment accumulator in L0C).
        m = {"shared": "L1", "fragment": "L0C"}.get(r.buffer.scope(), m) if not m else m
        if m not in ok:
            raise error(ValueError, f"T.gemm_v0: {what} ({r.buffer.name}) is in "
                                    f"{m or r.buffer.scope()}; it must be in "
                                    f"{' or '.join(ok)}", span)
    for flag, value in (("transpose_A", transpose_A), ("transpose_B", transpose_B)):
        if is_symbolic(value) or not isinstance(value, (bool, int)):
            raise error(TypeError, f"T.gemm_v0: {flag} must be a Python bool, got {value!r}",
                        span)
    b = tr.tile("T.gemm_v0", span)
    state = tr.npu_state
    state["side"] = "cube"  # for RoleBuilder (Note [Cube and vector concurrently])
    try:
        if is_symbolic(init):
            # init=(k == 0): zero C where it holds, then accumulate.
            st = tr.if_(init)
            c_region = _region_handle(tr, rc)
            b.fill(c_region, to_handle(tr, 0, rc.buffer.dtype), span)
            tr.endif_(st)
            init = False
        b.gemm(_region_handle(tr, ra), _region_handle(tr, rb), _region_handle(tr, rc),
               bool(transpose_A), bool(transpose_B), bool(init), 0, span)
    finally:
        state["side"] = None


def mma(A: Any, B: Any, C: Any, init: Any = False) -> None:
    """T.mma(A_L0A, B_L0B, C_L0C, init=...): the cube's multiply of L0 tiles."""
    gemm_v0(A, B, C, init=init)

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
vector step reads what the cube wrote at the same step before it. A flow from vector to cube (UB -> L1) needs both vector cores'
halves before the cube reads them, which one serial pass per vid cannot
give: it is refused as not emulated yet, as are the explicit cross-core
flags and T.Scope (the k-th read of a workspace waiting for its k-th write).
Within a core there is one instruction stream here, so the pipe flags and
barriers (T.set_flag, T.wait_flag, T.barrier_all, T.pipe_barrier) order
nothing further and are accepted.

The on-chip buffers are tilejit tile buffers (L1, L0A, L0B and UB shared,
L0C a fragment), each tagged with its memory; the sum of a memory's
buffers in a kernel is checked against the A2/A3 (910B / 910C) capacities
that TileLang-Ascend's code generator reserves, at the line that allocates.
"""

from __future__ import annotations

from typing import Any, Dict

from . import dtypes
from .loops import LoopRange
from .ops import _alloc, _region, _region_handle, _shape_list
from .spans import error, user_span
from .tracer import KernelFrame
from .values import BufferProxy, Region, current_tracer, is_symbolic, static_value, to_handle

# Bytes of each memory on A2/A3, as TileLang-Ascend's code generator
# reserves them (src/target/codegen_ascend.cc: ASCEND_A2A3_*_SIZE; L1 and UB
# keep 256 bytes back).
CAPACITY: Dict[str, int] = {"L1": 524032, "L0A": 65536, "L0B": 65536, "L0C": 131072,
                            "UB": 196352}

# Memory -> tilejit scope.
_SCOPE = {"L1": "shared", "L0A": "shared", "L0B": "shared", "L0C": "fragment", "UB": "shared"}

# The data paths of the core (src, dst). L0C -> UB is TileLang-Ascend's
# "virtual channel" (through GM on the NPU, direct here).
_PATHS = {("GM", "L1"), ("GM", "UB"), ("L1", "L0A"), ("L1", "L0B"), ("L0C", "GM"),
          ("L0C", "UB"), ("UB", "GM"), ("UB", "UB")}
_PATHS_TEXT = "GM->L1, GM->UB, L1->L0A, L1->L0B, L0C->GM, L0C->UB, UB->GM, UB->UB"


class NpuBuffer(BufferProxy):
    """An on-chip buffer of the Ascend core; `memory` is L1, L0A, L0B, L0C
    or UB."""

    memory = ""

    def check_copy(self, src: Region, dst: Region) -> None:
        """T.copy(src, dst) with this buffer on one side (ops.copy asks)."""
        check_copy(src, dst)


def memory_of(buf: BufferProxy) -> str:
    """The Ascend memory a buffer lives in: GM for a tensor parameter or a
    global workspace, else the memory it was allocated in ("" for tilejit's
    own allocations)."""
    if isinstance(buf, NpuBuffer):
        return buf.memory
    return "GM" if buf.scope() == "global" else ""


# --- the kernel --------------------------------------------------------------

def enter_npu_kernel(tr: Any, grid: list, span: Any) -> Any:
    """T.Kernel(n, is_npu=True).__enter__: n blocks of one thread whose body
    runs once per vector core (Note [Ascend emulation]); yields (cid, vid)."""
    if len(grid) != 1:
        raise error(ValueError, f"T.Kernel(is_npu=True) takes one grid extent (the number of "
                                f"AI cores used), got {len(grid)}", span)
    cid = tr.enter_kernel(grid, 1, span)
    tr.b.set_dialect("ascend")  # the CPU target emulates it; "auto" picks the CPU
    loop = tr.ir_loop(LoopRange("T.Kernel", "serial", [(0, 2)]), "vid")
    vid = next(loop)
    tr.npu_state = {"loop": loop, "usage": {}}
    return cid, vid


def exit_npu_kernel(tr: Any, failed: bool) -> None:
    state = getattr(tr, "npu_state", None)
    tr.npu_state = None
    if state is not None and not failed:
        next(state["loop"], None)  # ends the vid loop
    elif failed:
        # The body raised inside the vid loop: drop its frames, keep the error.
        while tr.frames and not isinstance(tr.frames[-1], KernelFrame):
            tr.frames.pop()
    tr.exit_kernel(failed)


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
    buf = _alloc(op, dims, dtype, _SCOPE[memory], NpuBuffer)
    buf.memory = memory
    count = 1
    for dim in dims:
        count *= dim
    nbytes = count * dtypes.bits_of(buf.dtype) // 8
    used = state["usage"].get(memory, 0)
    if used + nbytes > CAPACITY[memory]:
        shape_text = ", ".join(str(d) for d in dims)
        held = f" with the {used} bytes already allocated there" if used else ""
        raise error(ValueError, f"{op}: {buf.name} ({buf.dtype}[{shape_text}]) takes {nbytes} "
                                f"bytes{held}, over {memory}'s capacity of "
                                f"{CAPACITY[memory]} bytes", span)
    state["usage"][memory] = used + nbytes
    return buf


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
    if (s, d) in _PATHS:
        _check_gm_round_trip(src, dst, s, d)
        return
    where = f"{src.buffer.name} ({s or src.buffer.scope()}) to {dst.buffer.name} " \
            f"({d or dst.buffer.scope()})"
    if (s, d) == ("UB", "L1"):
        raise error(NotImplementedError, f"T.copy: {where}, the vector-to-cube channel, is not "
                                         f"emulated yet (Note [Ascend emulation])")
    raise error(ValueError, f"T.copy: {where} is not a data path of the Ascend core; the "
                            f"paths are {_PATHS_TEXT}")


def _check_gm_round_trip(src: Region, dst: Region, s: str, d: str) -> None:
    """A GM tensor that the vector cores write (UB -> GM) and the cube reads
    (GM -> L1) in one kernel is the vector-to-cube channel through a
    workspace: the cube needs both vector cores' writes of the same step,
    which the serial vid loop cannot give (Note [Ascend emulation])."""
    state = getattr(current_tracer("T.copy"), "npu_state", None)
    if state is None:
        return
    if (s, d) == ("UB", "GM"):
        gm, mine, other = dst.buffer, "vector_writes", "cube_reads"
    elif (s, d) == ("GM", "L1"):
        gm, mine, other = src.buffer, "cube_reads", "vector_writes"
    else:
        return
    state.setdefault(mine, set()).add(gm.name)
    if gm.name in state.get(other, ()):
        raise error(NotImplementedError, f"T.copy: {gm.name} is written by the vector cores "
                                         f"(UB->GM) and read by the cube (GM->L1): the "
                                         f"vector-to-cube channel through a workspace is not "
                                         f"emulated yet (Note [Ascend emulation])")


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
    if is_symbolic(init):
        # init=(k == 0): zero C where it holds, then accumulate.
        st = tr.if_(init)
        c_region = _region_handle(tr, rc)
        b.fill(c_region, to_handle(tr, 0, rc.buffer.dtype), span)
        tr.endif_(st)
        init = False
    b.gemm(_region_handle(tr, ra), _region_handle(tr, rb), _region_handle(tr, rc),
           bool(transpose_A), bool(transpose_B), bool(init), 0, span)


def mma(A: Any, B: Any, C: Any, init: Any = False) -> None:
    """T.mma(A_L0A, B_L0B, C_L0C, init=...): the cube's multiply of L0 tiles."""
    gemm_v0(A, B, C, init=init)


# --- synchronisation: one instruction stream per core here -------------------

_PIPES = ("mte1", "mte2", "mte3", "m", "v", "s", "fix", "all")


def _pipe(op: str, name: Any) -> None:
    if not isinstance(name, str) or name.lower() not in _PIPES:
        raise error(ValueError, f"{op}: unknown pipe {name!r}; expected one of "
                                f"{', '.join(_PIPES)}")


def set_flag(src: str, dst: str, eventId: Any) -> None:  # noqa: N803
    """Orders pipe `dst` after `src` on the NPU; accepted (Note [Ascend emulation])."""
    _npu_state("T.set_flag")
    _pipe("T.set_flag", src)
    _pipe("T.set_flag", dst)


def wait_flag(src: str, dst: str, eventId: Any) -> None:  # noqa: N803
    """Waits for T.set_flag(src, dst, eventId) on the NPU; accepted."""
    _npu_state("T.wait_flag")
    _pipe("T.wait_flag", src)
    _pipe("T.wait_flag", dst)


def barrier_all() -> None:
    """Waits for every pipe of the core on the NPU; accepted."""
    _npu_state("T.barrier_all")


def pipe_barrier(pipe: str) -> None:
    """Waits for one pipe of the core on the NPU; accepted."""
    _npu_state("T.pipe_barrier")
    _pipe("T.pipe_barrier", pipe)


def annotate_address(address_map: Dict[Any, Any]) -> None:
    """Places buffers at given on-chip addresses on the NPU; the emulation
    has no address space to place them in, so it checks the map's buffers
    and records nothing."""
    _npu_state("T.annotate_address")
    if not isinstance(address_map, dict):
        raise error(TypeError, f"T.annotate_address: expected a dict of buffer -> address, "
                               f"got {type(address_map).__name__}")
    for buf in address_map:
        if not isinstance(buf, NpuBuffer):
            raise error(TypeError, f"T.annotate_address: {buf!r} is not an on-chip buffer "
                                   f"(T.alloc_L1 / L0A / L0B / L0C / ub)")


def not_emulated(name: str) -> Any:
    """A construct of the dialect the emulation does not have yet: using it
    is an error naming it, at the user's line."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error(NotImplementedError, f"T.{name} (TileLang-Ascend) is not emulated yet")
    refuse.__name__ = name
    return refuse


set_cross_flag = not_emulated("set_cross_flag")
wait_cross_flag = not_emulated("wait_cross_flag")
sync_all = not_emulated("sync_all")
Scope = not_emulated("Scope")

"""TileLang-Ascend's synchronisation and its other statements that move no
data: pipe flags and barriers (one instruction stream per core here, Note
[Ascend emulation] in ascend.py), cross-core flags and T.Scope (Note [Cube
and vector concurrently] in ascend_concurrent.py), T.annotate_address."""

from __future__ import annotations

from typing import Any, Dict, Optional

from .ascend import NeedsLockstep, NpuBuffer, _npu_state
from .ascend_concurrent import _PIPE_SIDE, NeedsConcurrent, Survey
from .spans import error, user_span
from .values import static_value

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
    """Places buffers at given offsets of their memories on the NPU; the
    emulation has no address space to place them in, so it checks that
    they fit where TileLang-Ascend's planning would put them (Note [Ascend
    memory planning])."""
    state = _npu_state("T.annotate_address")
    span = user_span()
    if not isinstance(address_map, dict):
        raise error(TypeError, f"T.annotate_address: expected a dict of buffer -> address, "
                               f"got {type(address_map).__name__}")
    for buf, address in address_map.items():
        if not isinstance(buf, NpuBuffer):
            raise error(TypeError, f"T.annotate_address: {buf!r} is not an on-chip buffer "
                                   f"(T.alloc_L1 / L0A / L0B / L0C / ub)")
        address = static_value(address)
        if not isinstance(address, int) or address < 0:
            raise error(TypeError, f"T.annotate_address: the address of {buf.name} must be a "
                                   f"non-negative int, got {address!r}")
        state["plan"].annotate(buf, address, span)


def not_emulated(name: str) -> Any:
    """A construct of the dialect the emulation does not have yet: using it
    is an error naming it, at the user's line."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error(NotImplementedError, f"T.{name} (TileLang-Ascend) is not emulated yet")
    refuse.__name__ = name
    return refuse


def set_cross_flag(pipe: str, flag: Any) -> None:
    """Signals `flag` to the other side (cube <-> vector) after `pipe`. In
    program order it orders nothing further; it is counted, so that a wait
    with no signal before it is reported (or, interleaved, taken: Note [Cube
    and vector concurrently])."""
    state = _npu_state("T.set_cross_flag")
    _pipe("T.set_cross_flag", pipe)
    key = static_value(flag)
    sched = state.get("sched")
    if isinstance(sched, Survey):
        side = state.get("scope_side") or _PIPE_SIDE.get(pipe.lower()) or sched.last_side
        sched.flags.append(["set", key, side])
        sched.event(side, "flag", key)
    elif sched is not None:
        sched.flag("set", key, user_span())
    state["flags"][key] = state["flags"].get(key, 0) + 1


def wait_cross_flag(flag: Any) -> None:
    """Waits for the other side's T.set_cross_flag(..., flag)."""
    state = _npu_state("T.wait_cross_flag")
    key = static_value(flag)
    sched = state.get("sched")
    if isinstance(sched, Survey):
        # The side: the T.Scope's, else the other of the flag's signals'.
        entry = ["wait", key, state.get("scope_side")]
        sched.flags.append(entry)
        sched.event(entry, "flag", key)
        return
    if sched is not None:
        sched.flag("wait", key, user_span())
        return
    if not state["flags"].get(key):
        # Signalled below: interleaved (Note [Cube and vector concurrently]).
        raise NeedsConcurrent() if state["lockstep"] else NeedsLockstep()


class Scope:
    """with T.Scope("C") / T.Scope("V"): the cube's or the vector cores' part
    of the body; interleaved, its statements are that side's (Note [Cube and
    vector concurrently])."""

    def __init__(self, name: str) -> None:
        if name not in ("C", "V"):
            raise error(ValueError, f"T.Scope: expected \"C\" (the cube) or \"V\" (the "
                                    f"vector cores), got {name!r}")
        self.name = name
        self.state: Optional[Dict[str, Any]] = None

    def __enter__(self) -> "Scope":
        self.state = _npu_state("T.Scope")
        self.outer = self.state.get("scope_side")
        self.state["scope_side"] = "cube" if self.name == "C" else "vector"
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.state is not None:
            self.state["scope_side"] = self.outer


sync_all = not_emulated("sync_all")

"""The loops of a prim_func: what T.serial / T.unroll / T.vectorized /
T.Pipelined / T.Parallel (and range() inside a kernel) return. Iterating one
in a prim_func's for statement asks the active Tracer (tracer.py) to record
a For and trace the body once with a symbolic loop variable."""

from __future__ import annotations

from typing import Any, List, Tuple

from .spans import error
from .values import current_tracer, int_op, static_value, subtract


class LoopRange:
    """What T.serial / T.unroll / T.vectorized / T.Pipelined / T.Parallel
    return: loop dimensions (min, extent), a kind and, for a pipeline, its
    stages. Iterated by a for statement of a prim_func."""

    def __init__(self, what: str, kind: str, dims: List[Tuple[Any, Any]], step: Any = 1,
                 stages: int = 0) -> None:
        self.what = what
        self.kind = kind
        self.dims = dims
        self.step = step
        self.stages = stages
        self.offset: Any = 0
        self.schedule: Any = None  # T.Pipelined's (order, stage, group), or None
        # The tile op a front-end loop stands for, and why: (op, reason), or None.
        self.origin: Any = None

    def __iter__(self) -> Any:
        return current_tracer(self.what).ir_loop(self, None)

    def __repr__(self) -> str:
        return f"<{self.what} loop>"


def serial_range(what: str, kind: str, start: Any, stop: Any = None, step: Any = 1,
                 stages: int = 0) -> LoopRange:
    if stop is None:
        start, stop = 0, start
    step = static_value(step)
    if not (isinstance(step, int) and step != 0):
        raise error(ValueError, f"{what}: the step must be a nonzero int, got {step!r}")
    if step == 1:
        return LoopRange(what, kind, [(start, subtract(stop, start))], 1, stages)
    # x = start + i * step over i in [0, extent).
    if step > 0:
        extent = int_op("ceildiv", subtract(stop, start), step)
    else:
        extent = int_op("ceildiv", subtract(start, stop), -step)
    lr = LoopRange(what, kind, [(0, extent)], step, stages)
    lr.offset = start
    return lr

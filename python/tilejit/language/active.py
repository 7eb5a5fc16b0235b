"""The tracer that a running prim_func body records into, one per thread,
and the name of the factory that is building it.

A leaf of the front end: every module that needs the active tracer imports
it from here, and it imports none of them, so the modules form layers
(spans, active, dtypes -> values -> loops -> tracer -> ops, declare, macros
-> eager) with no import inside a function to break a circle."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

# trace: the active Tracer (or None); factory_name: the jit factory whose
# call is building a prim_func (python/tilejit/jit.py), for its name;
# factory_configs: that factory's pass_configs.
_state = threading.local()


def active() -> Optional[Any]:
    """The tracer of the prim_func body running on this thread, or None."""
    return getattr(_state, "trace", None)


@contextmanager
def tracing(tracer: Any) -> Iterator[Any]:
    """Makes `tracer` the active one for the duration (nested bodies restore
    the outer one)."""
    previous = active()
    _state.trace = tracer
    try:
        yield tracer
    finally:
        _state.trace = previous


def current_tracer(what: str = "this") -> Any:
    """The active tracer; outside a prim_func body, an error naming `what`."""
    tr = active()
    if tr is None:
        # Called outside any prim_func: the traceback already ends at the
        # author's line.
        raise RuntimeError(f"{what} is only valid inside a function decorated with @T.prim_func")
    return tr


def factory_name() -> Optional[str]:
    return getattr(_state, "factory_name", None)


def factory_configs() -> Optional[Dict[str, Any]]:
    """The pass_configs of the jit factory building a prim_func, if any
    (TL_ASCEND_MEMORY_PLANNING decides how ascend_memory.py places)."""
    return getattr(_state, "factory_configs", None)


@contextmanager
def building(name: str, configs: Optional[Dict[str, Any]] = None) -> Iterator[None]:
    """A jit factory named `name`, with these pass_configs, is building a
    prim_func on this thread."""
    previous = factory_name(), factory_configs()
    _state.factory_name, _state.factory_configs = name, configs
    try:
        yield
    finally:
        _state.factory_name, _state.factory_configs = previous

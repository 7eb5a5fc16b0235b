"""TileLang's eager style, which tilejit does not support yet.

In that style a ``@tilelang.jit`` function is called with the tensors
themselves; inside it ``T.const("M, N, K")`` names dimensions read from
them and ``T.empty(shape, dtype)`` makes an output. Each of the three ways
in (``T.const``, ``T.empty``, a jit function called with a tensor) raises
one NotImplementedError that says so and what to write instead, rather
than failing later on something unrelated (a tensor cannot key the kernel
cache, for one).
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Tuple

from .spans import error

EAGER = ("TileLang's eager style (T.const / T.empty / calling a jit function with tensors) is "
         "not supported yet")
INSTEAD = ("write the prim_func factory style instead: the @tilejit.jit function takes only "
           "compile-time configuration and returns a @T.prim_func whose parameters are "
           "annotated T.Tensor(shape, dtype) (T.symbolic for a dynamic dimension, outputs "
           "named in out_idx)")


def const(*args: Any, **kwargs: Any) -> Any:
    raise error(NotImplementedError, f"T.const: {EAGER}; {INSTEAD}")


def empty(*args: Any, **kwargs: Any) -> Any:
    raise error(NotImplementedError, f"T.empty: {EAGER}; {INSTEAD}")


def _is_tensor(x: Any) -> bool:
    # numpy's scalars speak the array protocols too, and are configuration.
    if isinstance(x, numbers.Number):
        return False
    t = type(x)
    return (hasattr(t, "__dlpack__") or hasattr(t, "__array_interface__") or
            hasattr(t, "__cuda_array_interface__"))


def refuse_tensors(name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    """Raises the eager style's error when a jit function's arguments hold a
    tensor (an ndarray, a torch or DLPack tensor)."""
    named = [(f"argument #{i}", a) for i, a in enumerate(args)]
    named += [(f"argument '{k}'", v) for k, v in kwargs.items()]
    for label, value in named:
        if _is_tensor(value):
            t = type(value)
            raise error(NotImplementedError,
                        f"{name}: {label} is a tensor ({t.__module__}.{t.__qualname__}); "
                        f"{EAGER}; {INSTEAD}: kernel = {name}(<configuration>), then "
                        f"kernel(<tensors>)")

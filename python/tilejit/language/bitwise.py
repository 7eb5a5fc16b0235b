"""TVM's bitwise functions as TileLang re-exports them: ``T.bitwise_and``,
``T.bitwise_or``, ``T.bitwise_xor``, ``T.bitwise_not``, ``T.shift_left`` and
``T.shift_right``, the same operations as ``& | ^ ~ << >>`` on integer
expressions (Note [Bitwise operators] in tilejit/ir/expr.h). ``span`` is
TVM's and is ignored: errors carry the author's line."""

from __future__ import annotations

from typing import Any

from .values import bitwise, bitwise_not as _bitwise_not

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
           "shift_right"]


def bitwise_and(x: Any, y: Any, span: Any = None) -> Any:
    """x & y."""
    return bitwise("and", x, y)


def bitwise_or(x: Any, y: Any, span: Any = None) -> Any:
    """x | y."""
    return bitwise("or", x, y)


def bitwise_xor(x: Any, y: Any, span: Any = None) -> Any:
    """x ^ y."""
    return bitwise("xor", x, y)


def bitwise_not(x: Any, span: Any = None) -> Any:
    """~x: the complement in x's dtype."""
    return _bitwise_not(x)


def shift_left(x: Any, y: Any, span: Any = None) -> Any:
    """x << y; y from 0 to the width of the promoted dtype less one."""
    return bitwise("shl", x, y)


def shift_right(x: Any, y: Any, span: Any = None) -> Any:
    """x >> y: arithmetic on a signed dtype, logical on an unsigned one."""
    return bitwise("shr", x, y)

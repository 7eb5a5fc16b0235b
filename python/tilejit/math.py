"""tilelang.math: integer helpers for tile sizes (also tilejit.cdiv and
tilejit.next_power_of_2)."""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2"]


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints."""
    return (a + b - 1) // b


def next_power_of_2(x: int) -> int:
    """The smallest power of 2 >= x (1 for x <= 1)."""
    return 1 << (x - 1).bit_length() if x > 1 else 1

"""Element types of the tile language: ``T.float16``, ``T.bfloat16``,
``T.float32`` (also ``T.float``), ``T.int32`` ... and the dtype strings
("float" is float32, "bf16" is bfloat16, as the C++ parser spells them).

A dtype object is three things at once, as in TileLang: an annotation of a
scalar parameter (``n: T.int32``), a dtype argument (``T.alloc_shared(shape,
T.float16)``, equal to the string "float16"), and inside a kernel body a
conversion (``T.float32(x)`` is ``T.cast(x, "float32")``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _C

# The conversion of a kernel value (values.cast), which values registers
# when it is imported: dtypes is data, below the modules that trace.
_convert: Optional[Callable[[Any, str], Any]] = None


# The check of a T.uint32(c) / T.uint64(c) constant (values.unsigned_constant),
# registered alike: its error names the author's line.
_check_unsigned: Optional[Callable[[str, Any], None]] = None


def register_conversion(convert: Callable[[Any, str], Any],
                        check_unsigned: Optional[Callable[[str, Any], None]] = None) -> None:
    global _convert, _check_unsigned
    _convert = convert
    _check_unsigned = check_unsigned


__all__ = ["DType", "ScalarType", "DataType", "UnsignedConstant", "dtype_name", "is_float",
           "is_int", "is_unsigned", "bits_of"]

# T.uint32(c) / T.uint64(c) of a Python int is an UnsignedConstant: the
# argument TVM's thread all-reduce and T.reinterpret take (allreduce.py), and
# in arithmetic a constant of that dtype (values.to_handle).
_UNSIGNED_CONSTANTS = ("uint32", "uint64")

_BITS = {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16, "int8": 8, "int16": 16,
         "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
         "bool": 1}


class DType:
    """A named element type: ``T.float16``. Compares equal to its name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        if isinstance(other, str):
            try:
                return self.name == dtype_name(other)
            except ValueError:
                return False
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def bits(self) -> int:
        return _BITS.get(self.name, 0)

    def __call__(self, value: Any) -> Any:
        """Inside a kernel body: the value converted to this dtype."""
        if self.name in _UNSIGNED_CONSTANTS and isinstance(value, int) and \
                not isinstance(value, bool):
            return UnsignedConstant(self.name, value)
        if _convert is None:
            raise RuntimeError(f"T.{self.name}(x) converts a value inside a @T.prim_func body")
        return _convert(value, self.name)


class UnsignedConstant:
    """``T.uint32(1)``, ``T.uint64(0)``: a constant that T.tvm_thread_allreduce
    and T.reinterpret take (allreduce.py), and a constant of its dtype as an
    operand."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any) -> None:
        if _check_unsigned is not None:
            _check_unsigned(name, value)
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"T.{self.name}({self.value})"


# Phase 1's name for the annotation of a scalar parameter.
ScalarType = DType


class DataType(str):
    """``tilelang.DataType("float16")``: a dtype name with its properties
    (``bits``, ``lanes``, ``is_float`` ...)."""

    def __new__(cls, name: Any) -> "DataType":
        return super().__new__(cls, dtype_name(name))

    @property
    def dtype(self) -> str:
        return str(self)

    @property
    def bits(self) -> int:
        return _BITS[str(self)]

    @property
    def lanes(self) -> int:
        return 1

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def is_float(self) -> bool:
        return is_float(str(self))

    def is_int(self) -> bool:
        return is_int(str(self))

    def is_bool(self) -> bool:
        return str(self) == "bool"


def dtype_name(dtype: Any) -> str:
    """The canonical tilejit name of a dtype given as a string ("bf16",
    "float"), a T dtype object, a numpy dtype or scalar type (np.float32,
    ml_dtypes.bfloat16) or a torch dtype (torch.bfloat16). torch is never
    imported: a torch dtype is recognised by its module."""
    if isinstance(dtype, DType) or isinstance(dtype, str):
        name = dtype.name if isinstance(dtype, DType) else dtype
        return name if isinstance(dtype, DType) else _C.parse_dtype(dtype)
    module = type(dtype).__module__ or ""
    if module == "torch" or module.startswith("torch."):
        return _C.parse_dtype(str(dtype).rpartition(".")[2])
    try:
        import numpy as np
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; expected a name such as 'float32', "
                        f"a numpy dtype or a torch dtype") from None
    return _C.parse_dtype(name)


def is_float(name: str) -> bool:
    return name in ("float64", "float32", "float16", "bfloat16")


def is_int(name: str) -> bool:
    return name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def is_unsigned(name: str) -> bool:
    return name in ("uint8", "uint16", "uint32", "uint64")


def bits_of(name: str) -> int:
    return _BITS.get(name, 0)


float64 = DType("float64")
float32 = DType("float32")
float16 = DType("float16")
bfloat16 = DType("bfloat16")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
boolean = DType("bool")
# TileLang's aliases.
float = float32  # noqa: A001
double = float64
half = float16

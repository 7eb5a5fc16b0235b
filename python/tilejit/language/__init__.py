"""tilejit.language, imported as ``T``: the tile language.

    import tilejit as tilelang
    import tilejit.language as T

A kernel is a Python function decorated with ``@T.prim_func`` whose
parameters are annotated with ``T.Tensor(shape, dtype)`` (or ``T.Buffer``)
or a scalar dtype (``T.int32``, ``T.int64``, ``T.float32``). Its body is
either tile operations, as TileLang writes them (TileLang's classic
programs run with only the import changed), or phase 1's source text.

Tile bodies: ``T.prim_func`` rewrites the function's AST (only the control
flow Python cannot overload, rewrite.py) and runs it once with parameter
proxies; every ``T.*`` call records into the C++ tile builder with the
author's file:line:col. A loop body over ``T.serial`` / ``T.Parallel`` /
``T.Pipelined`` / ``T.unroll`` / ``T.vectorized`` / ``range`` is traced
once with a symbolic loop variable (Python side effects in it happen once);
an ``if`` on a Python value keeps only the branch taken, on a symbolic one
records both. Supported: ``T.Kernel``, ``T.get_thread_binding``,
``T.alloc_shared / alloc_fragment / alloc_local / alloc_var /
alloc_reducer / alloc_global``, ``T.copy``, ``T.gemm``, ``T.fill``,
``T.clear``, ``T.reduce_sum / max / min / abssum / absmax``,
``T.atomic_add``, ``T.finalize_reducer``, ``T.print``, ``T.sync_threads``,
``T.shfl_sync / shfl_up / shfl_down / shfl_xor``, TVM's thread all-reduce
(``T.attr`` / ``T.comm_reducer`` / ``T.tvm_thread_allreduce`` /
``T.evaluate``, in the one form allreduce.py takes), ``T.cast`` /
``T.Cast`` / ``.astype``, ``T.max / min / abs / exp / exp2 / log / log2 /
sqrt / rsqrt / tanh / sigmoid``, ``T.if_then_else``, ``T.infinity``,
``T.ceildiv``, ``& | ^ ~ << >>`` on integers and ``T.bitwise_and / or / xor /
not``, ``T.shift_left / shift_right`` (bitwise.py), dtype objects (``T.float16`` ...) and strings, ``T.symbolic``
/ ``T.dynamic``, ``T.macro`` helpers (with ``T.SharedBuffer`` / ``T.FragmentBuffer`` /
``T.LocalBuffer`` parameter annotations, checked at the call),
``T.annotate_layout`` (tilejit.layout) and ``T.use_swizzle`` (the kernel's
block rasterisation: CUDA remaps bx, by; the CPU ignores it). Anything else
named ``T.x`` is an error naming it. TileLang's eager style (a jit function
whose body declares its tensor parameters, ``T.const`` dimensions read from
them and ``T.empty`` outputs it returns, called with the tensors) is in
eager.py.

Phase 1 body spelling (``T.source``): each body is C++ (CUDA C++ for
``cuda=``) statements that run once per block of the grid. They see

* every tensor parameter as a view named after it: ``Q(i, j, k)`` reads or
  writes an element, ``Q.shape(d)`` is an extent, ``Q.data()`` the pointer,
  ``Q.size()`` the element count (row-major, contiguous, no bounds checks;
  static extents are compile-time constants);
* every scalar parameter and every dynamic symbol (``T.symbolic``) as an
  ``int64_t``/``int32_t``/``float`` constant of the same name;
* the block index as ``bx``, ``by``, ``bz`` (also ``block_idx.x`` ...) and the
  grid as ``grid_dim.x`` ...;
* ``tilejit::bfloat16`` and ``tilejit::float16`` element types that convert
  to and from ``float``, and ``tilejit::ceildiv``/``min``/``max``.

A CPU body runs on one thread per block (``threads`` is ignored there), and
``return;`` ends that block. A CUDA body is the kernel body of every thread
of the block (``return;`` ends the thread) and also sees ``threadIdx``,
``blockDim``, ``__shared__`` and ``__syncthreads()``.

Python values known at declaration (``heads``, ``block``) reach the body by
formatting them into its text, e.g. an f-string or a ``constexpr`` prologue.
"""

from __future__ import annotations

from typing import Any

from .. import _C
from . import dtypes
from .builder import use_builder
from .declare import (Buffer, Expr, Kernel, PrimFunc, Tensor, TensorType, dynamic,
                      prim_func, source, symbolic)
from .layouts import annotate_layout
from .macros import BufferType, FragmentBuffer, LocalBuffer, SharedBuffer, macro
from ..layout import Fragment, Layout
from .allreduce import attr, comm_reducer, evaluate, reinterpret, tvm_thread_allreduce
from .bitwise import (bitwise_and, bitwise_not, bitwise_or, bitwise_xor, shift_left,
                      shift_right)
from .dtypes import (DType, ScalarType, bfloat16, boolean, dtype_name, float16, float32,
                     float64, int8, int16, int32, int64, uint8, uint16, uint32,
                     uint64)
from .eager import const, empty
from .ops import (Cast, GemmWarpPolicy, Parallel, Pipelined, abs, alloc_fragment,
                  alloc_global, alloc_local, alloc_reducer, alloc_shared, alloc_var, cast,
                  ceildiv, clear, copy, exp, exp2, fill, finalize_reducer, floordiv, floormod,
                  gemm, get_thread_binding, if_then_else, infinity, log, log2, max, min, ninf,
                  print, reduce, reduce_absmax, reduce_abssum, reduce_max, reduce_min,
                  reduce_sum, rsqrt, Serial, serial, sigmoid, sqrt, sync_threads, tanh, unroll,
                  use_swizzle, vectorized, Unroll, Vectorized, cdiv, clamp, get_block_binding,
                  index_to_coordinates)
from .shuffles import shfl_down, shfl_sync, shfl_up, shfl_xor
from .spans import error as _error
from . import ascend_tile as tile
from .ascend import alloc_L0A, alloc_L0B, alloc_L0C, alloc_L1, alloc_ub, gemm_v0, mma
from .ascend_sync import (Scope, annotate_address, barrier_all, pipe_barrier, set_cross_flag,
                          set_flag, sync_all, wait_cross_flag, wait_flag)

dtype = DType  # the annotation of a dtype argument: `dtype: T.dtype = T.float16`
float = float32  # noqa: A001 (TileLang's alias)
double = float64
half = float16
bool = boolean  # noqa: A001

__all__ = [
    "Expr", "PrimFunc", "symbolic", "dynamic", "Tensor", "Buffer", "TensorType", "ScalarType",
    "DType", "dtype", "dtype_name", "Kernel", "source", "prim_func", "macro",
    "SharedBuffer", "FragmentBuffer", "LocalBuffer", "BufferType", "annotate_layout", "Layout",
    "Fragment",
    "float64", "float32", "float16", "bfloat16", "float", "double", "half", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_reducer",
    "alloc_global", "finalize_reducer", "get_thread_binding", "get_block_binding",
    "serial", "Serial", "unroll", "Unroll", "vectorized", "Vectorized", "use_swizzle", "Pipelined", "Parallel",
    "copy", "gemm", "GemmWarpPolicy", "fill", "clear", "reduce", "reduce_sum", "reduce_max",
    "reduce_min", "reduce_abssum", "reduce_absmax", "atomic_add", "print", "sync_threads",
    "shfl_sync", "shfl_up", "shfl_down", "shfl_xor",
    "attr", "comm_reducer", "reinterpret", "evaluate", "tvm_thread_allreduce",
    "cast", "Cast", "max", "min", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh",
    "sigmoid", "clamp", "if_then_else", "infinity", "ninf", "ceildiv", "cdiv", "floordiv",
    "floormod", "index_to_coordinates", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "shift_left", "shift_right",
    "use_builder", "const", "empty",
    # TileLang-Ascend's dialect, emulated (ascend.py, ascend_tile.py).
    "tile", "alloc_L1", "alloc_L0A", "alloc_L0B", "alloc_L0C", "alloc_ub", "gemm_v0", "mma",
    "barrier_all", "pipe_barrier", "set_flag", "wait_flag", "annotate_address",
    "set_cross_flag", "wait_cross_flag", "sync_all", "Scope",
]

from .ops import atomic_add  # noqa: E402


def __getattr__(name: str) -> Any:
    """A T.* name outside the supported set: an error naming it, at the
    author's line when it is used in a kernel."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    raise _error(AttributeError, f"T.{name} is not supported by tilejit's tile language")

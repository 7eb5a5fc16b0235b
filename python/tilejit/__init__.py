"""tilejit: declare a kernel's signature once, with outputs and workspaces;
call it with its inputs alone.

    import tilejit
    from tilejit import language as T

    @tilejit.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7])
    def sparse_attention_fwd(heads, dim, topk, block=64):
        ...                     # returns a T.prim_func (see tilejit.language)

    out = sparse_attention_fwd(16, 128, 512)(q, kv, indices)

Calls take numpy arrays, torch tensors and any object with __dlpack__,
positionally or by parameter name (``op(q, KV=kv, Indices=indices)``), and
return the outputs in the inputs' framework (one tensor, a tuple in out_idx
order, or None). ``op.empty_workspace(*inputs)`` makes an arena for
``workspace=``; ``op.workspace_bytes(shapes=[...])`` sizes one from shapes.
Errors are ValueError, TypeError, RuntimeError, tilejit.CompileError,
tilejit.OutOfMemoryError or tilejit.InternalError, carrying the C++
library's message. A kernel that compiled, but not as its program asked (a
T.Pipelined copy left synchronous, say), raises tilejit.PerformanceWarning
at the program's line; ``op.diagnostics`` lists those.

Importing tilejit needs numpy only: no torch, no GPU.
"""

import os

from . import _C
from ._C import (CompileError, InternalError, Kernel, OutOfMemoryError, PerformanceWarning,
                 PrimFunc)
from . import language
from .jit import JitFunction, compile, jit
from .jit import _clear_all_factories, _kernel_count
# TileLang's top-level surface (import tilejit as tilelang).
from . import autotuner, cache, engine, layout, math, profiler, testing, transform
from .autotuner import autotune
from .cache import disable_cache, enable_cache, is_cache_enabled
from .language.dtypes import DataType
from .math import cdiv, next_power_of_2
from .profiler import Profiler, TensorSupplyType
from .transform import PassConfigKey

__version__ = "0.1.0"

# The seed API's name for a compiled kernel.
JITKernel = Kernel


def _get_kernel_source(self: Kernel) -> str:
    """The generated translation unit (TileLang's name for Kernel.source)."""
    return self.source


def _get_profiler(self: Kernel, tensor_supply_type: TensorSupplyType = TensorSupplyType.Auto) \
        -> Profiler:
    """A profiler over inputs generated from this kernel's signature
    (tilejit.profiler)."""
    return Profiler(self, tensor_supply_type)


Kernel.get_kernel_source = _get_kernel_source
Kernel.get_profiler = _get_profiler

__all__ = [
    "jit", "compile", "language", "Kernel", "JITKernel", "JitFunction", "PrimFunc",
    "autotune", "autotuner", "cache", "disable_cache", "enable_cache", "is_cache_enabled",
    "DataType", "cdiv", "next_power_of_2", "math", "profiler", "Profiler", "TensorSupplyType",
    "testing", "transform", "PassConfigKey",
    "CompileError", "OutOfMemoryError", "InternalError", "PerformanceWarning",
    "pool_stats", "cache_stats", "empty_cache", "set_num_threads", "get_num_threads",
    "host_cache_stats", "set_host_cache_limit",
    "set_workspace_limit", "set_cache_dir", "export", "export_c_name",
]


def export(kernel: Kernel, path) -> None:
    """Writes `kernel` as a standalone shared library `path` (a .so) and its C
    header beside it (the same stem, ".h"): functions named after
    export_c_name(kernel.name) that take DLPack tensors and need only the C
    runtime (README, "Shipping a kernel"). CPU kernels only. Raises
    ValueError for a kernel of another target, tilejit.CompileError when the
    compiler fails, RuntimeError when a file cannot be written."""
    _C.export_library(kernel, os.fspath(path))


def export_c_name(name: str) -> str:
    """The C identifier an exported kernel's functions start with: `name`
    with every character but letters, digits and '_' made '_'."""
    return _C.export_c_name(name)


def pool_stats(device: str = "cpu") -> dict:
    """The workspace pool's counters for a device ("cpu", "cuda", "cuda:N"):
    leases, hits, misses, device_allocs, device_frees, oom_retries,
    bytes_reserved, bytes_in_use, peak_bytes_reserved, blocks."""
    return _C.pool_stats(device)


def cache_stats() -> dict:
    """The compile cache's counters (memory_hits, disk_hits, compiles, loads,
    and the disk cache's under "disk"), plus "kernels": the kernels held by
    tilejit.jit factories in this process."""
    stats = _C.cache_stats()
    stats["kernels"] = _kernel_count()
    return stats


def host_cache_stats() -> dict:
    """The counters of the host block cache, where CPU outputs of 128 KiB or
    more are made and their memory kept when they die, for the next output
    of a like size: hits, misses, returns (blocks kept), frees,
    bytes_cached, blocks_cached, limit."""
    return _C.host_cache_stats()


def set_host_cache_limit(nbytes: int) -> None:
    """Caps the bytes the host block cache keeps (0: none; default
    TILEJIT_HOST_CACHE_LIMIT, else 1 GiB), freeing the least recently kept
    blocks down to it."""
    _C.set_host_cache_limit(nbytes)


def empty_cache() -> int:
    """Drops the kernels cached by tilejit.jit factories, frees the workspace
    pools' cached blocks, the host block cache's and the loaded modules no
    kernel holds. Kernels the caller still references keep working. Returns
    the bytes freed."""
    _clear_all_factories()
    return _C.empty_cache()


def set_num_threads(n: int) -> None:
    """Threads that run the blocks of a CPU launch, counting the caller
    (default: TILEJIT_NUM_THREADS, else the number of hardware threads)."""
    _C.set_num_threads(n)


def get_num_threads() -> int:
    return _C.get_num_threads()


def set_workspace_limit(nbytes: int, device: str = "cpu") -> None:
    """Caps the bytes a device's workspace pool may reserve (0: no cap;
    default TILEJIT_WORKSPACE_LIMIT). Past it a call raises OutOfMemoryError."""
    _C.set_workspace_limit(nbytes, device)


def set_cache_dir(path: str) -> None:
    """Points the disk cache of compiled kernels at `path` ("" disables it;
    default TILEJIT_CACHE_DIR, else ~/.cache/tilejit)."""
    _C.set_cache_dir(path)

"""tilelang.transform: the names of TileLang's pass configurations.

``pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}`` is
accepted by tilejit.jit and tilejit.compile so that TileLang programs run
unchanged. They tune TVM passes that tilejit does not have, so none of them
changes what tilejit generates; a key that is not one of these names is
warned about once per process (a typo would otherwise go unnoticed).

These keys change what tilejit generates:

- ``"tl.debug_bounds": True`` (TL_DEBUG_BOUNDS, tilejit's own, or the
  environment's TILEJIT_DEBUG_BOUNDS=1) checks every index of a load or
  store of a shared, fragment or local buffer when the kernel runs, and
  fails the call with the kernel, the buffer, the dimension and the index
  when one lies outside (a RuntimeError on the CPU, a trap on CUDA);
- ``TL_DISABLE_TMA_LOWER: True``, as under TileLang, keeps the tile loads
  of pipelined loops on cp.async where Hopper's TMA would take them;
- ``TL_DISABLE_WARP_SPECIALIZED: True``, as under TileLang, keeps those TMA
  loads in the kernel's own threads instead of a producer warpgroup;
- ``"tl.disable_cluster_multicast": True`` (TL_DISABLE_CLUSTER_MULTICAST,
  tilejit's own) launches every block alone where a warp-specialised kernel
  would run in pairs of blocks that load their shared tiles once (Note
  [Cluster multicast] in src/backend/cuda/cluster_multicast.h);
- ``"tl.disable_coarse_k_steps": True`` (TL_DISABLE_COARSE_K_STEPS,
  tilejit's own) keeps the K step of a warp-specialised GEMM main loop as
  the program writes it where a step of under 128 bytes would load several
  per stage (Note [Coarser K steps] in src/backend/cuda/coarse_k_steps.h);
- ``"tl.disable_staged_epilogue": True`` (TL_DISABLE_STAGED_EPILOGUE,
  tilejit's own) stores a warp-specialised GEMM's accumulator from the
  registers, as written, where it would go through a shared tile and TMA
  (Note [Staged epilogues] in src/backend/cuda/staged_epilogue.h).
"""

from __future__ import annotations

import enum
import threading
import warnings
from typing import Any, Dict, Optional

__all__ = ["PassConfigKey", "check_pass_configs", "debug_bounds", "disable_tma",
           "disable_warp_specialized", "disable_cluster_multicast", "disable_coarse_k_steps",
           "disable_staged_epilogue"]


class PassConfigKey(str, enum.Enum):
    """TileLang's pass-configuration keys (tilelang/transform/pass_config.py)."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"
    # TileLang-Ascend's (tilejit.language.ascend emulates the dialect on the
    # CPU, where there is no pipe to synchronise and no memory to plan).
    TL_ASCEND_AUTO_SYNC = "tl.ascend_auto_sync"
    TL_ASCEND_MEMORY_PLANNING = "tl.ascend_memory_planning"
    TL_ASCEND_AUTO_CV_COMBINE = "tl.ascend_auto_cv_combine"
    TL_ASCEND_AUTO_CV_SYNC = "tl.ascend_auto_cross_core_sync"
    # tilejit's own (see the top of this file).
    TL_DEBUG_BOUNDS = "tl.debug_bounds"
    TL_DISABLE_CLUSTER_MULTICAST = "tl.disable_cluster_multicast"
    TL_DISABLE_COARSE_K_STEPS = "tl.disable_coarse_k_steps"
    TL_DISABLE_STAGED_EPILOGUE = "tl.disable_staged_epilogue"

    def __str__(self) -> str:
        return self.value


_KNOWN = {k.value for k in PassConfigKey} | {k.name for k in PassConfigKey}
# Older TVM spellings of the same keys ("tir.disable_vectorize").
_KNOWN |= {v.replace("tirx.", "tir.") for v in list(_KNOWN)}
_warned: set = set()
_lock = threading.Lock()


def check_pass_configs(configs: Optional[Dict[Any, Any]], where: str) -> Optional[Dict[str, Any]]:
    """The configs with str keys; warns once per unknown key."""
    if configs is None:
        return None
    if not isinstance(configs, dict):
        raise TypeError(f"{where}: pass_configs must be a dict, got {type(configs).__name__}")
    out = {}
    for key, value in configs.items():
        name = key.value if isinstance(key, PassConfigKey) else key
        if not isinstance(name, str):
            raise TypeError(f"{where}: a pass_configs key must be a str or a PassConfigKey, "
                            f"got {type(key).__name__}")
        if name not in _KNOWN:
            with _lock:
                first = name not in _warned
                _warned.add(name)
            if first:
                from .language.spans import user_frame
                frame = user_frame()
                warnings.warn_explicit(
                    f"{where}: unknown pass config {name!r} (not a tilejit.PassConfigKey); it "
                    f"is ignored", UserWarning,
                    frame.f_code.co_filename if frame else "<unknown>",
                    frame.f_lineno if frame else 0)
        out[name] = value
    return out


def debug_bounds(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs (check_pass_configs) turn on the run-time
    bounds checks of tile buffers."""
    return _flag(configs, PassConfigKey.TL_DEBUG_BOUNDS, where)


def disable_tma(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs turn TMA off (TL_DISABLE_TMA_LOWER)."""
    return _flag(configs, PassConfigKey.TL_DISABLE_TMA_LOWER, where)


def disable_warp_specialized(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs turn the producer warpgroup off
    (TL_DISABLE_WARP_SPECIALIZED)."""
    return _flag(configs, PassConfigKey.TL_DISABLE_WARP_SPECIALIZED, where)


def disable_cluster_multicast(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs launch every block alone
    (TL_DISABLE_CLUSTER_MULTICAST)."""
    return _flag(configs, PassConfigKey.TL_DISABLE_CLUSTER_MULTICAST, where)


def disable_coarse_k_steps(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs keep a GEMM main loop's K step as written
    (TL_DISABLE_COARSE_K_STEPS)."""
    return _flag(configs, PassConfigKey.TL_DISABLE_COARSE_K_STEPS, where)


def disable_staged_epilogue(configs: Optional[Dict[str, Any]], where: str) -> bool:
    """Whether checked configs store a GEMM's accumulator from the registers
    (TL_DISABLE_STAGED_EPILOGUE)."""
    return _flag(configs, PassConfigKey.TL_DISABLE_STAGED_EPILOGUE, where)


def _flag(configs: Optional[Dict[str, Any]], which: PassConfigKey, where: str) -> bool:
    for key in (which.value, which.name):
        if configs and key in configs:
            value = configs[key]
            if not isinstance(value, (bool, int)):
                raise TypeError(f"{where}: pass_configs[{key!r}] must be a bool, got "
                                f"{type(value).__name__}")
            return bool(value)
    return False

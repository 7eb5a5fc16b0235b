"""tilelang.cache: the kernel caches as TileLang programs reach them.

``tilejit.disable_cache()`` stops jit and compile from reading and writing
the disk cache of compiled binaries (factories still keep the kernels they
made in memory, as TileLang's do); ``tilejit.cache.clear_cache()`` drops the
factories' kernels, the loaded modules no kernel holds, and the disk cache's
entries (the compiled binaries and the autotuner's stored choices).
"""

from __future__ import annotations

import os
import re
import threading

__all__ = ["disable_cache", "enable_cache", "is_cache_enabled", "clear_cache"]

_lock = threading.Lock()
_enabled = True
_ENTRY = re.compile(r"^[0-9a-f]{32}\.bin$")  # DiskCache's entry names
_TUNED = re.compile(r"^[0-9a-f]{32}\.json$")  # the autotuner's stored choices (autotune/)


def disable_cache() -> None:
    global _enabled
    with _lock:
        _enabled = False


def enable_cache() -> None:
    global _enabled
    with _lock:
        _enabled = True


def is_cache_enabled() -> bool:
    return _enabled


def clear_cache() -> int:
    """Empties the caches (see the module docstring); returns the number of
    disk entries removed. Only files named as the disk cache and the
    autotuner name their entries are removed."""
    from . import _C, empty_cache
    empty_cache()
    directory = _C.cache_dir()
    removed = 0
    if not directory or not os.path.isdir(directory):
        return 0
    removed += _remove_matching(directory, _ENTRY)
    tuned = os.path.join(directory, "autotune")
    if os.path.isdir(tuned):
        removed += _remove_matching(tuned, _TUNED)
        try:
            os.rmdir(tuned)  # only when nothing else is in it
        except OSError:
            pass
    return removed


def _remove_matching(directory: str, pattern: "re.Pattern[str]") -> int:
    removed = 0
    for name in os.listdir(directory):
        if pattern.match(name):
            try:
                os.remove(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    return removed

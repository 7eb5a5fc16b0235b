"""tilelang.cache: the kernel caches as TileLang programs reach them.

``tilejit.disable_cache()`` stops jit and compile from reading and writing
the disk cache of compiled binaries (factories still keep the kernels they
made in memory, as TileLang's do); ``tilejit.cache.clear_cache()`` drops the
factories' kernels, the loaded modules no kernel holds, and the disk cache's
entries.
"""

from __future__ import annotations

import os
import re
import threading

__all__ = ["disable_cache", "enable_cache", "is_cache_enabled", "clear_cache"]

_lock = threading.Lock()
_enabled = True
_ENTRY = re.compile(r"^[0-9a-f]{32}\.bin$")  # DiskCache's entry names


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
    disk entries removed. Only files named as the disk cache names its
    entries are removed."""
    from . import _C, empty_cache
    empty_cache()
    directory = _C.cache_dir()
    removed = 0
    if not directory or not os.path.isdir(directory):
        return 0
    for name in os.listdir(directory):
        if _ENTRY.match(name):
            try:
                os.remove(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    return removed

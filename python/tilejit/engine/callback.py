"""TileLang's `tilelang.engine.callback`: hooks that see a kernel's
generated source before it is compiled, and may change it.

    from tilejit.engine.callback import register_cuda_postproc_callback

    @register_cuda_postproc_callback
    def tilelang_callback_cuda_postproc(code, target):
        return code.replace("...", "...")

The callback is called with the generated CUDA source of every kernel
compiled for CUDA afterwards, and the name of the target ("cuda", where
TileLang passes its Target object), and returns the source to compile
(Note [Source post-processing] in tilejit/runtime/source_postproc.h: the
compile cache keys on the returned source, and `get_kernel_source()` shows
it). A callback that raises fails the compile with its error. As in
TileLang, `override=False` refuses to replace a registered callback.
tilejit has no HIP target, so a HIP callback is registered and never called.
"""

from .. import _C

__all__ = ["register_cuda_postproc_callback", "register_hip_postproc_callback",
           "unregister_cuda_postproc_callback", "unregister_hip_postproc_callback"]

_registered = {}


def _register(target, name, func, override):
    if target in _registered and not override:
        raise ValueError(f"{name}: a {target.upper()} post-processing callback is already "
                         f"registered ({_registered[target].__qualname__}); pass override=True "
                         f"to replace it")
    if not callable(func):
        raise TypeError(f"{name}: the callback must be callable, got {type(func).__name__}")
    _registered[target] = func
    if target == "cuda":
        _C.set_source_postproc("cuda", func)
    return func


def _decorator(target, name, func, override):
    if callable(func):
        return _register(target, name, func, override)
    if func is None or isinstance(func, bool):
        keep = func if isinstance(func, bool) else override
        return lambda f: _register(target, name, f, keep)
    raise TypeError(f"{name}: expected a callable, a bool or nothing, got {type(func).__name__}")


def register_cuda_postproc_callback(func=None, override=True):
    """Registers `func(code, target) -> code` for the CUDA sources; as a
    decorator, with or without arguments (`override`)."""
    return _decorator("cuda", "register_cuda_postproc_callback", func, override)


def register_hip_postproc_callback(func=None, override=True):
    """Registers a HIP callback; tilejit compiles no HIP, so it is never
    called."""
    return _decorator("hip", "register_hip_postproc_callback", func, override)


def unregister_cuda_postproc_callback():
    """Removes the CUDA callback (tilejit's; TileLang has no remover)."""
    _registered.pop("cuda", None)
    _C.set_source_postproc("cuda", None)


def unregister_hip_postproc_callback():
    """Removes the HIP callback (tilejit's; TileLang has no remover)."""
    _registered.pop("hip", None)

"""tilejit.jit and tilejit.compile: a declared PrimFunc -> a callable Kernel.

``@tilejit.jit(out_idx=..., workspace_idx=...)`` decorates a factory: a
function whose arguments are compile-time configuration (``heads``, ``dim``)
and which returns a ``T.prim_func``. Calling the factory compiles once per
distinct arguments and returns the cached ``tilejit.Kernel``; calling the
kernel runs it (entirely in C++, see python/src/kernel_object.h).
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Union

from . import _C
from . import cache as _cache
from . import language as _language
from .language import active as _active
from . import transform as _transform
from .language import eager as _eager
from .language.eager import refuse_tensors as _refuse_tensors

__all__ = ["jit", "compile", "JitFunction"]

IndexArg = Union[None, int, Sequence[int]]

# Every factory, so that tilejit.empty_cache() can drop their kernels.
_factories: "weakref.WeakSet[JitFunction]" = weakref.WeakSet()
_factories_lock = threading.Lock()


def _copy_index(value: Any) -> Any:
    """A private copy of a list option (indices, flags): the caller's list is
    never kept, so neither mutating it later nor jit itself can change the
    other. Anything else passes through, for the C++ side to check."""
    if isinstance(value, (list, tuple, range)):
        return list(value)
    return value


def _target_name(target: Any) -> Any:
    """TileLang's spellings of a target: "llvm" and "c" are the CPU, a dict
    names its kind ({"kind": "cuda", "arch": "sm_90"})."""
    if isinstance(target, dict):
        target = target.get("kind", target)
    if target in ("llvm", "c"):
        return "cpu"
    return target


def compile(prim_func: _C.PrimFunc, out_idx: IndexArg = None,  # noqa: A001 (the seed's name)
            workspace_idx: IndexArg = None, target: str = "auto",
            workspace_init: Optional[Dict[str, str]] = None,
            compile_flags: Optional[Sequence[str]] = None,
            extra_compile_flags: Optional[Sequence[str]] = None,
            disk_cache: bool = True, pass_configs: Optional[Dict[Any, Any]] = None,
            execution_backend: Any = None, target_host: Any = None, verbose: Any = None,
            debug_root_path: Any = None) -> _C.Kernel:
    """Compiles a PrimFunc into a Kernel (no in-memory cache: every call
    builds a Kernel, though the disk cache spares the compiler).

    out_idx / workspace_idx: None, an int or a list of ints, negatives
    counting from the end of the signature; outputs return in out_idx order.
    target: "auto" (the available backend that ranks the PrimFunc highest:
    cuda, then cpu, each when the PrimFunc has a body for it), "cpu" or
    "cuda". workspace_init: {workspace name: "empty" | "zero" |
    "zero_once"}. compile_flags replace the backend's default flags;
    extra_compile_flags are appended. pass_configs (tilejit.PassConfigKey
    names) are accepted and have no effect but for tilejit's own
    "tl.debug_bounds" (run-time bounds checks of tile buffers),
    TL_DISABLE_TMA_LOWER and TL_DISABLE_WARP_SPECIALIZED (tilejit.transform),
    and an unknown key is warned
    about once;
    execution_backend, target_host, verbose and debug_root_path are
    accepted for TileLang's programs and ignored. tilejit.disable_cache()
    turns the disk cache off for every compile.
    """
    if isinstance(prim_func, _eager.EagerPrimFunc):
        # An eager function's PrimFunc (fn.get_tir): its outputs are the
        # T.empty tensors it returns.
        if out_idx is not None:
            raise ValueError(f"{prim_func.name}: out_idx is given, but the prim_func returns "
                             f"its T.empty outputs")
        prim_func, out_idx = prim_func.prim_func, prim_func.out_idx
    where = getattr(prim_func, "name", "tilejit.compile")
    configs = _transform.check_pass_configs(pass_configs, where)
    debug_bounds = _transform.debug_bounds(configs, where)
    tma = not _transform.disable_tma(configs, where)
    warp_specialize = not _transform.disable_warp_specialized(configs, where)
    cluster_multicast = not _transform.disable_cluster_multicast(configs, where)
    coarse_k_steps = not _transform.disable_coarse_k_steps(configs, where)
    staged_epilogue = not _transform.disable_staged_epilogue(configs, where)
    target = _target_name(target)
    disk_cache = bool(disk_cache) and _cache.is_cache_enabled()
    if not isinstance(prim_func, _C.PrimFunc):
        raise TypeError(f"tilejit.compile expects a T.prim_func, got {type(prim_func).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"{prim_func.name}: target must be a str, got {type(target).__name__}")
    return _C.jit(prim_func, _copy_index(out_idx), _copy_index(workspace_idx), target,
                  workspace_init, compile_flags, extra_compile_flags, bool(disk_cache),
                  debug_bounds, tma, warp_specialize, cluster_multicast, coarse_k_steps,
                  staged_epilogue)


class JitFunction:
    """A factory of kernels: calling it with configuration arguments returns
    the Kernel compiled for them, from an in-memory cache keyed by the
    arguments (which must therefore be hashable).

    A function in TileLang's eager style (its body declares its tensor
    parameters, ``A: T.Tensor((M, N), dtype)``) is called with the tensors
    instead: the call compiles per specialisation and runs
    (language/eager.py)."""

    def __init__(self, func: Callable[..., Any], options: Dict[str, Any]) -> None:
        self._func = func
        self._options = options
        self._kernels: Dict[Any, _C.Kernel] = {}
        self._lock = threading.RLock()  # a factory may call another (or itself)
        try:
            self._signature: Optional[inspect.Signature] = inspect.signature(func)
        except (TypeError, ValueError):
            self._signature = None
        functools.update_wrapper(self, func)
        tensors = _eager.tensor_parameters(func)
        self._eager: Optional[_eager.EagerFunction] = None if tensors is None else (
            _eager.EagerFunction(func, self.name, tensors, compile, options))
        with _factories_lock:
            _factories.add(self)

    @property
    def name(self) -> str:
        return getattr(self._func, "__name__", "kernel")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._eager is not None:
            return self._eager.call(args, kwargs)
        # Typed, as functools.lru_cache(typed=True): 2 and 2.0 (or 1 and
        # True) are equal keys but may format into different kernel source.
        # Positional calls (the common case) skip the keyword half.
        if kwargs:
            key = (args, tuple(map(type, args)), tuple(sorted(kwargs.items())),
                   tuple(type(v) for v in kwargs.values()))
        else:
            key = (args, tuple(map(type, args)))
        try:
            return self._kernels[key]
        except KeyError:
            pass
        except TypeError:
            _refuse_tensors(self.name, args, kwargs)  # an ndarray is not hashable
            self._raise_unhashable(args, kwargs)
        # A torch tensor is hashable: TileLang's eager style is refused here.
        _refuse_tensors(self.name, args, kwargs)
        # Calls that spell the same configuration differently (positional
        # or by keyword, defaults given or not) share one kernel.
        canonical = self._canonical_key(args, kwargs)
        with self._lock:
            kernel = self._kernels.get(canonical)
            if kernel is None:
                kernel = self._build(args, kwargs)
                self._kernels[canonical] = kernel
            self._kernels[key] = kernel
        return kernel

    def _canonical_key(self, args: tuple, kwargs: dict) -> Any:
        if self._signature is None:
            return ("canonical", args, tuple(map(type, args)), tuple(sorted(kwargs.items())),
                    tuple(type(v) for v in kwargs.values()))
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}: {e}") from None
        bound.apply_defaults()
        items = tuple(bound.arguments.items())
        return ("canonical", items, tuple(type(v) for _, v in items))

    def _raise_unhashable(self, args: tuple, kwargs: dict) -> None:
        named = [(f"argument #{i}", a) for i, a in enumerate(args)]
        named += [(f"argument '{k}'", v) for k, v in kwargs.items()]
        for label, value in named:
            try:
                hash(value)
            except TypeError:
                raise TypeError(
                    f"{self.name}: {label} of type {type(value).__name__} is not hashable; the "
                    f"arguments of a tilejit.jit function key its kernel cache (pass a tuple "
                    f"instead of a list)") from None
        raise TypeError(f"{self.name}: the arguments are not hashable")

    def _build(self, args: tuple, kwargs: dict) -> _C.Kernel:
        with _active.building(self.name, self._options.get("pass_configs")):
            result = self._func(*args, **kwargs)
        if isinstance(result, _C.Kernel):
            return result
        if not isinstance(result, _C.PrimFunc):
            raise TypeError(f"{self.name}: a tilejit.jit function must return a T.prim_func, "
                            f"got {type(result).__name__}")
        return compile(result, **self._options)

    def compile(self, *args: Any, **kwargs: Any) -> _C.Kernel:
        """The Kernel for these arguments (TileLang's ``fn.compile``): in the
        eager style without tensors, the T.const values given by keyword
        (``matmul.compile(M=1024, N=1024, K=1024, block_M=128)``); in the
        factory style, the configuration, as a call."""
        if self._eager is not None:
            return self._eager.compile(args, dict(kwargs))
        return self(*args, **kwargs)

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """The PrimFunc for these arguments, for tilejit.compile: in the
        eager style it carries its outputs (the T.empty tensors returned)."""
        if self._eager is not None:
            return self._eager.get_tir(args, dict(kwargs))
        return self._func(*args, **kwargs)

    def retarget(self, target: Any) -> "JitFunction":
        """A new factory over the same function with the same options but
        `target`, and a kernel cache of its own: the program written once
        (``@jit(target="cpu")``) serves another target,
        ``flashattn.retarget("cuda")(batch, heads, ...)``. The target takes
        compile()'s spellings and is checked, as @jit's, when the new factory
        first compiles."""
        if not isinstance(_target_name(target), str):
            raise TypeError(f"{self.name}: target must be a str, got {type(target).__name__}")
        # Private copies of the list and dict options: the two factories
        # share nothing mutable.
        options = {k: dict(v) if isinstance(v, dict) else _copy_index(v)
                   for k, v in self._options.items()}
        options["target"] = target
        return JitFunction(self._func, options)

    @property
    def target(self) -> Any:
        """The target this factory compiles for (as given to jit or retarget)."""
        return self._options["target"]

    def cache_clear(self) -> None:
        """Drops this factory's compiled kernels."""
        with self._lock:
            self._kernels.clear()
        if self._eager is not None:
            self._eager.clear()

    def cache_size(self) -> int:
        """Distinct kernels held (configurations, not spellings)."""
        if self._eager is not None:
            return self._eager.size()
        with self._lock:
            return len({id(k) for k in self._kernels.values()})

    def __repr__(self) -> str:
        return f"<tilejit.jit {self.name}>"


def jit(func: Any = None, *, out_idx: IndexArg = None, workspace_idx: IndexArg = None,
        target: str = "auto", workspace_init: Optional[Dict[str, str]] = None,
        compile_flags: Optional[Sequence[str]] = None,
        extra_compile_flags: Optional[Sequence[str]] = None, disk_cache: bool = True,
        pass_configs: Optional[Dict[Any, Any]] = None, execution_backend: Any = None,
        target_host: Any = None, verbose: Any = None, debug_root_path: Any = None) -> Any:
    """Decorates a kernel factory (a function returning a T.prim_func):

        @tilejit.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7])
        def sparse_attention_fwd(heads, dim, topk, block=64): ...

        op = sparse_attention_fwd(16, 128, 512)   # compiled once per arguments
        out = op(q, kv, indices)                  # workspaces are invisible

    Also ``@tilejit.jit`` without arguments, and ``tilejit.jit(prim_func,
    out_idx=...)`` on a PrimFunc, which compiles it at once. The options are
    those of tilejit.compile; the index lists are copied, never modified.
    """
    options = dict(out_idx=_copy_index(out_idx), workspace_idx=_copy_index(workspace_idx),
                   target=target, workspace_init=dict(workspace_init) if isinstance(
                       workspace_init, dict) else workspace_init,
                   compile_flags=_copy_index(compile_flags),
                   extra_compile_flags=_copy_index(extra_compile_flags), disk_cache=disk_cache,
                   pass_configs=_transform.check_pass_configs(pass_configs, "tilejit.jit"))
    _transform.debug_bounds(options["pass_configs"], "tilejit.jit")  # their types, checked now
    _transform.disable_tma(options["pass_configs"], "tilejit.jit")
    _transform.disable_warp_specialized(options["pass_configs"], "tilejit.jit")
    _transform.disable_cluster_multicast(options["pass_configs"], "tilejit.jit")
    _transform.disable_coarse_k_steps(options["pass_configs"], "tilejit.jit")
    _transform.disable_staged_epilogue(options["pass_configs"], "tilejit.jit")

    def wrap(f: Any) -> Any:
        if isinstance(f, _C.PrimFunc):
            return compile(f, **options)
        if not callable(f):
            raise TypeError(f"tilejit.jit decorates a function returning a T.prim_func, "
                            f"got {type(f).__name__}")
        return JitFunction(f, options)

    return wrap if func is None else wrap(func)


def _clear_all_factories() -> int:
    """Drops every factory's kernels; returns how many factories there were."""
    with _factories_lock:
        factories = list(_factories)
    for f in factories:
        f.cache_clear()
    return len(factories)


def _kernel_count() -> int:
    with _factories_lock:
        factories = list(_factories)
    return sum(f.cache_size() for f in factories)

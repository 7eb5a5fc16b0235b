"""tilelang.autotuner.autotune: choosing a factory's tuning arguments by
timing them on the target.

    @tilelang.autotune(configs=[{"block_M": 64}, {"block_M": 128}])
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128): ...

    kernel = matmul(1024, 1024, 1024)                # tunes block_M, once
    kernel = matmul(1024, 1024, 1024, block_M=64)    # given: no tuning

A call that supplies every tuned argument (a key of the configs) goes
straight to the factory. Otherwise each config fills the arguments the call
left out; the candidates compile in parallel, each is checked against
``ref_prog`` when given (a config that fails is dropped) and timed on inputs
generated from its signature (profiler.py), and the fastest kernel is
returned. The choice is remembered per call arguments: ``best_config`` and
``best_latency`` (ms) describe the latest one.

The choice also persists in the disk cache's directory (tilejit.set_cache_dir,
TILEJIT_CACHE_DIR), one JSON file per key under ``autotune/``: the key hashes
the factory's qualified name and source, the call's arguments (their repr),
the configs (their repr) and the target, so a new process that makes the
same call compiles the stored config alone and times nothing. A file is
written to a temporary name and renamed into place; one that is unreadable,
not the effective user's, or names no candidate of the current configs is
ignored and the call tunes again. tilejit.disable_cache(), jit's
disk_cache=False, or arguments whose repr is not stable (an object's
address) keep the choice in memory only.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import inspect
import json
import os
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _C
from . import cache as _cache
from .profiler import Profiler, TensorSupplyType

__all__ = ["autotune", "AutoTuneImpl"]


class AutoTuneImpl:
    def __init__(self, jit_impl: Any, configs: Union[Sequence[Dict[str, Any]], Callable[..., Any]],
                 warmup: int, rep: int, supply_type: TensorSupplyType,
                 ref_prog: Optional[Callable[..., Any]], supply_prog: Optional[Callable[..., Any]],
                 rtol: float, atol: float, max_mismatched_ratio: float, skip_check: bool) -> None:
        from .jit import JitFunction
        if not isinstance(jit_impl, JitFunction):
            raise TypeError("tilejit.autotune decorates a @tilejit.jit function (write "
                            "@autotune(...) above @jit(...))")
        self.jit_impl = jit_impl
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.supply_type = supply_type
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.rtol, self.atol, self.max_mismatched_ratio = rtol, atol, max_mismatched_ratio
        self.skip_check = skip_check
        self._signature = inspect.signature(jit_impl._func)
        self._tuned: Dict[Any, Any] = {}
        self._lock = threading.Lock()
        self.best_config: Optional[Dict[str, Any]] = None
        self.best_latency: Optional[float] = None
        self.__name__ = jit_impl.name
        self.__doc__ = jit_impl.__doc__

    def _config_list(self, args: tuple, kwargs: dict) -> List[Dict[str, Any]]:
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        if isinstance(configs, dict):
            configs = [configs]
        configs = list(configs)
        if not configs or not all(isinstance(c, dict) for c in configs):
            raise TypeError(f"{self.__name__}: autotune configs must be a non-empty list of dicts "
                            f"of argument values")
        return configs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = self._signature.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        given = dict(bound.arguments)
        configs = self._config_list(args, kwargs)
        tuned = {k for c in configs for k in c}
        unknown = tuned - set(self._signature.parameters)
        if unknown:
            raise TypeError(f"{self.__name__}: autotune config names "
                            f"{', '.join(sorted(unknown))}, which the factory does not take")
        if tuned <= set(given):
            return self.jit_impl(*args, **kwargs)
        key = tuple(sorted(given.items()))
        with self._lock:
            hit = self._tuned.get(key)
        if hit is not None:
            self.best_config, self.best_latency, kernel = hit
            return kernel
        candidates = self._candidates(given, configs)
        path, key_text = self._disk_entry(given, configs)
        best = self._load(path, key_text, candidates, configs) if path else None
        if best is None:
            best = self._tune(candidates, configs)
            if path:
                self._store(path, key_text, candidates, best)
        with self._lock:
            self._tuned[key] = best
        self.best_config, self.best_latency, kernel = best
        return kernel

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """TileLang's ``tuned.compile(...)``: a call that gives every tuned
        argument compiles that configuration (``jit_impl.compile``: an eager
        factory takes its T.const dimensions by keyword); any other call is
        tuned as ``tuned(...)`` is."""
        # Keywords beyond the signature are an eager factory's T.const values.
        given = set(list(self._signature.parameters)[:len(args)]) | set(kwargs)
        if {k for c in self._config_list(args, kwargs) for k in c} <= given:
            return self.jit_impl.compile(*args, **kwargs)
        return self(*args, **kwargs)

    def retarget(self, target: Any) -> "AutoTuneImpl":
        """The same tuning over ``jit_impl.retarget(target)``: its own
        choices, in memory and on disk."""
        return AutoTuneImpl(self.jit_impl.retarget(target), self.configs, self.warmup, self.rep,
                            self.supply_type, self.ref_prog, self.supply_prog, self.rtol,
                            self.atol, self.max_mismatched_ratio, self.skip_check)

    @staticmethod
    def _candidates(given: Dict[str, Any], configs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        candidates: List[Dict[str, Any]] = []
        for c in configs:
            merged = dict(c)
            merged.update(given)  # what the caller gave wins
            if merged not in candidates:
                candidates.append(merged)
        return candidates

    # --- the disk cache of choices -------------------------------------------

    def _disk_entry(self, given: Dict[str, Any], configs: List[Dict[str, Any]]) -> Any:
        """(path, key text) of this call's stored choice, or (None, None)
        when the choice is not to persist."""
        if not _cache.is_cache_enabled() or not self.jit_impl._options.get("disk_cache", True):
            return None, None
        directory = _C.cache_dir()
        if not directory:
            return None, None
        func = self.jit_impl._func
        try:
            source = inspect.getsource(func)
        except (OSError, TypeError):
            source = ""
        from .jit import _target_name
        target = _target_name(self.jit_impl._options.get("target", "auto"))
        if target == "auto":  # what "auto" picks depends on what this machine has
            available = [t for t in _C.registered_targets() if _C.target_available(t)]
            target = f"auto ({', '.join(available)})"
        key = {
            "factory": f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', '')}",
            "source": hashlib.sha256(source.encode()).hexdigest(),
            "arguments": repr(sorted(given.items())),
            "configs": repr(configs),
            "target": repr(target),
        }
        # An address in a repr differs from process to process: such a key
        # would never hit, and would leave a file per process.
        if any(" at 0x" in key[k] for k in ("arguments", "configs", "target")):
            return None, None
        text = json.dumps(key, sort_keys=True)
        name = hashlib.sha256(text.encode()).hexdigest()[:32] + ".json"
        return os.path.join(directory, "autotune", name), text

    def _load(self, path: str, key_text: str, candidates: List[Dict[str, Any]],
              configs: List[Dict[str, Any]]) -> Any:
        """The stored choice as (config, latency, kernel), or None."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            with os.fdopen(fd, "r", encoding="utf-8") as f:
                if os.fstat(f.fileno()).st_uid != os.geteuid():
                    return None
                entry = json.load(f)
            index = entry["candidate"]
            if entry["key"] != json.loads(key_text) or not isinstance(index, int) or \
                    not 0 <= index < len(candidates) or \
                    entry["arguments"] != repr(sorted(candidates[index].items())):
                return None
            latency = float(entry["latency_ms"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        arguments = candidates[index]
        try:
            kernel = self.jit_impl(**arguments)
        except Exception:  # no longer builds here (a new compiler, say): tune among the rest
            return None
        config = {k: arguments[k] for k in {k for c in configs for k in c}}
        return config, latency, kernel

    def _store(self, path: str, key_text: str, candidates: List[Dict[str, Any]],
               best: Any) -> None:
        config, latency, _ = best
        # Candidates are distinct and share the call's arguments: the first
        # whose tuned values are the chosen ones is the one that won.
        index = next(i for i, c in enumerate(candidates)
                     if all(c[k] == v and type(c[k]) is type(v) for k, v in config.items()))
        entry = {"key": json.loads(key_text), "candidate": index,
                 "arguments": repr(sorted(candidates[index].items())), "latency_ms": latency}
        directory = os.path.dirname(path)
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(entry, f, indent=1, sort_keys=True)
                os.replace(tmp, path)  # readers see the old file or the new one, whole
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # an unwritable cache costs the next process a tuning, nothing else

    def _tune(self, candidates: List[Dict[str, Any]], configs: List[Dict[str, Any]]) -> Any:
        errors: List[BaseException] = []

        def build(arguments: Dict[str, Any]) -> Any:
            return self.jit_impl._build((), arguments)

        workers = max(1, min(len(candidates), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(build, c) for c in candidates]
        kernels = []
        for arguments, future in zip(candidates, futures):
            try:
                kernels.append((arguments, future.result()))
            except Exception as e:  # a config that does not compile is dropped
                errors.append(e)
        best = None
        inputs = None
        for arguments, kernel in kernels:
            profiler = Profiler(kernel, self.supply_type)
            if self.supply_prog is not None:
                ins = list(self.supply_prog(kernel.prim_func.params))
            else:
                # Configs of one call share its shapes: one set of inputs.
                ins = inputs if inputs is not None else profiler._get_inputs()
                inputs = ins
            if self.ref_prog is not None and not self.skip_check:
                try:
                    profiler.assert_allclose(self.ref_prog, ins, atol=self.atol, rtol=self.rtol,
                                             max_mismatched_ratio=self.max_mismatched_ratio)
                except AssertionError as e:
                    errors.append(e)
                    continue
            latency = profiler.do_bench(input_tensors=ins, warmup=self.warmup, rep=self.rep)
            if best is None or latency < best[1]:
                best = (arguments, latency, kernel)
        if best is None:
            detail = f": {type(errors[0]).__name__}: {errors[0]}" if errors else ""
            raise RuntimeError(f"{self.__name__}: no autotune config compiled and passed its "
                               f"check ({len(candidates)} tried){detail}")
        arguments, latency, kernel = best
        config = {k: arguments[k] for k in {k for c in configs for k in c}}
        return config, latency, kernel


def autotune(func: Any = None, *, configs: Union[Sequence[Dict[str, Any]], Callable[..., Any]],
             warmup: int = 25, rep: int = 100, timeout: int = 100,
             supply_type: TensorSupplyType = TensorSupplyType.Auto,
             ref_prog: Optional[Callable[..., Any]] = None,
             supply_prog: Optional[Callable[..., Any]] = None, rtol: float = 1e-2,
             atol: float = 1e-2, max_mismatched_ratio: float = 0.01, skip_check: bool = False,
             manual_check_prog: Optional[Callable[..., Any]] = None,
             cache_input_tensors: bool = False, do_not_specialize: Any = None,
             early_stop: bool = False, early_stop_factor: float = 2.0) -> Any:
    """Decorates a @tilejit.jit factory (see the module docstring). configs:
    a list of dicts of factory arguments, or a function of the call's
    arguments returning one."""
    if func is not None:
        raise TypeError("tilejit.autotune takes its configs by keyword: "
                        "@autotune(configs=[...]) above @jit(...)")

    def decorate(impl: Any) -> AutoTuneImpl:
        return AutoTuneImpl(impl, configs, warmup, rep, supply_type, ref_prog, supply_prog, rtol,
                            atol, max_mismatched_ratio, skip_check)

    return decorate

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
"""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

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
        best = self._tune(given, configs)
        with self._lock:
            self._tuned[key] = best
        self.best_config, self.best_latency, kernel = best
        return kernel

    def _tune(self, given: Dict[str, Any], configs: List[Dict[str, Any]]) -> Any:
        candidates: List[Dict[str, Any]] = []
        for c in configs:
            merged = dict(c)
            merged.update(given)  # what the caller gave wins
            if merged not in candidates:
                candidates.append(merged)
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

"""tilelang.profiler: timing a kernel and checking it against a reference
over generated inputs.

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda A, B: A @ B, rtol=1e-2, atol=1e-2)
    ms = profiler.do_bench()

Inputs are numpy arrays for a CPU kernel and torch tensors on the GPU for a
CUDA one, made from the kernel's signature (a symbolic dimension needs a
value: ``dynamic_symbolic_constraints={"m": 1024}``). Times are wall-clock
milliseconds per call, the GPU synchronised around each call when torch has
initialised CUDA.

``Profiler.do_bench()`` times the kernel as TileLang's profiler does: the
inputs are generated once, and so are the outputs, made by a first call
and handed back through ``out=`` on every timed call, so that the time is
the kernel's (its launch and its run) and not its outputs' allocation. It
says what it timed in ``profiler.bench_description``.
"""

from __future__ import annotations

import enum
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["TensorSupplyType", "Profiler", "do_bench"]


class TensorSupplyType(enum.Enum):
    """How the profiler fills a generated input (TileLang's names)."""
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def _synchronize() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, _n_warmup: int = 0,
             _n_repeat: int = 0, quantiles: Optional[Sequence[float]] = None,
             fast_flush: bool = True, backend: str = "event", return_mode: str = "mean",
             device: Any = None, cache_size: int = 256,
             early_stop_baseline: Optional[float] = None) -> Any:
    """Milliseconds per call of fn(): warm-up for about `warmup` ms (or
    _n_warmup calls), then about `rep` ms (or _n_repeat calls), each call
    timed on its own. Returns the mean (return_mode "min", "max", "median"
    also), or the given quantiles of the times."""
    return _bench(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, return_mode)[0]


def _bench(fn: Callable[[], Any], warmup: float, rep: float, n_warmup: int, n_repeat: int,
           quantiles: Optional[Sequence[float]], return_mode: str) -> Any:
    """do_bench(), returning (its result, warm-up calls, timed calls)."""
    if return_mode not in ("mean", "min", "max", "median"):
        raise ValueError(f"do_bench: return_mode must be 'mean', 'min', 'max' or 'median', "
                         f"got {return_mode!r}")
    fn()
    _synchronize()
    start = time.perf_counter()
    for _ in range(3):
        fn()
    _synchronize()
    estimate_ms = max((time.perf_counter() - start) / 3 * 1e3, 1e-6)
    n_warmup = n_warmup if n_warmup > 0 else max(1, int(warmup / estimate_ms))
    n_repeat = n_repeat if n_repeat > 0 else max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    _synchronize()
    times = []
    for _ in range(n_repeat):
        t0 = time.perf_counter()
        fn()
        _synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return _summary(times, quantiles, return_mode), n_warmup, n_repeat


def _summary(times: List[float], quantiles: Optional[Sequence[float]], return_mode: str) -> Any:
    if quantiles is not None:
        ordered = sorted(times)
        out = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.fmean(times)


def _dim_value(dim: Any, constraints: Dict[str, int], kernel: str, param: str) -> int:
    if isinstance(dim, int):
        return dim
    if dim.is_const:
        return dim.value
    from . import _C
    names = _C.symbols(dim)
    missing = [n for n in names if n not in constraints]
    if missing:
        raise ValueError(f"{kernel}: input '{param}' has the symbolic dimension {dim!r}; give "
                         f"its value with dynamic_symbolic_constraints={{'{missing[0]}': ...}}")
    scope = {"ceildiv": lambda a, b: -(-a // b), "min": min, "max": max}
    scope.update({n: int(constraints[n]) for n in names})
    return int(eval(str(dim), {"__builtins__": {}}, scope))  # noqa: S307: the printer's text


def _numpy_dtype(dtype: str) -> Any:
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("generated bfloat16 inputs need the ml_dtypes package") from None
        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def _supply(shape: List[int], dtype: str, kind: TensorSupplyType, rng: Any) -> np.ndarray:
    floating = dtype in ("float64", "float32", "float16", "bfloat16")
    if kind == TensorSupplyType.Auto:
        kind = TensorSupplyType.Uniform if floating else TensorSupplyType.Integer
    if kind == TensorSupplyType.Zero:
        data = np.zeros(shape)
    elif kind == TensorSupplyType.One:
        data = np.ones(shape)
    elif dtype == "bool":
        data = rng.integers(0, 2, size=shape)
    elif dtype in ("uint8", "uint16", "uint32", "uint64"):
        data = rng.integers(0, 3, size=shape)
    elif kind == TensorSupplyType.Integer or not floating:
        data = rng.integers(-2, 3, size=shape)
    elif kind == TensorSupplyType.Uniform:
        data = rng.uniform(-1.0, 1.0, size=shape)
    elif kind == TensorSupplyType.Normal:
        data = rng.normal(-1.0, 1.0, size=shape)
    else:
        data = rng.standard_normal(size=shape)
    return data.astype(np.float32 if floating else data.dtype).astype(_numpy_dtype(dtype))


class Profiler:
    """Times and checks one kernel over inputs generated from its
    signature (see the module docstring)."""

    def __init__(self, kernel: Any,
                 tensor_supply_type: TensorSupplyType = TensorSupplyType.Auto) -> None:
        if not isinstance(tensor_supply_type, TensorSupplyType):
            raise TypeError(f"{kernel.name}: tensor_supply_type must be a "
                            f"tilejit.TensorSupplyType, got {tensor_supply_type!r}")
        self.kernel = kernel
        self.supply_type = tensor_supply_type
        self._rng = np.random.default_rng(0)
        #: What the last do_bench() timed, in words ("" before the first).
        self.bench_description = ""

    @property
    def func(self) -> Any:
        return self.kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)

    def _get_inputs(self, dynamic_symbolic_constraints: Optional[Dict[str, int]] = None) \
            -> List[Any]:
        constraints = dict(dynamic_symbolic_constraints or {})
        params = {p["name"]: p for p in self.kernel.prim_func.params}
        inputs: List[Any] = []
        for name in self.kernel.input_names:
            p = params[name]
            if p["kind"] == "scalar":
                value = constraints.get(name, 1)
                inputs.append(float(value) if p["dtype"].startswith("float") else int(value))
                continue
            shape = [_dim_value(d, constraints, self.kernel.name, name) for d in p["shape"]]
            inputs.append(_supply(shape, p["dtype"], self.supply_type, self._rng))
        if self.kernel.target == "cuda":
            inputs = [_to_torch_cuda(x) for x in inputs]
        return inputs

    def run_once(self, func: Optional[Callable[..., Any]] = None) -> Any:
        return (func or self.kernel)(*self._get_inputs())

    def assert_allclose(self, reference_program: Callable[..., Any],
                        input_tensors: Optional[List[Any]] = None, atol: float = 1e-2,
                        rtol: float = 1e-2, max_mismatched_ratio: float = 0.01) -> None:
        """Runs the kernel and reference_program on the same inputs and
        compares each output (testing.torch_assert_close)."""
        from .testing import torch_assert_close
        ins = self._get_inputs() if input_tensors is None else input_tensors
        ref_outs = _as_list(reference_program(*ins))
        lib_outs = _as_list(self.kernel(*ins))
        if len(lib_outs) != len(ref_outs):
            raise AssertionError(f"{self.kernel.name}: the kernel returned {len(lib_outs)} "
                                 f"outputs and the reference {len(ref_outs)}")
        for i, (lhs, rhs) in enumerate(zip(lib_outs, ref_outs)):
            if lhs is None or rhs is None:
                continue
            torch_assert_close(lhs, rhs, rtol=rtol, atol=atol,
                               max_mismatched_ratio=max_mismatched_ratio,
                               base_name=f"{self.kernel.name} output {i}", ref_name="reference",
                               check_dtype=False)

    def do_bench(self, func: Optional[Callable[..., Any]] = None, warmup: int = 25,
                 rep: int = 100, n_warmup: int = 0, n_repeat: int = 0,
                 input_tensors: Optional[List[Any]] = None, backend: str = "event",
                 quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean",
                 dynamic_symbolic_constraints: Optional[Dict[str, int]] = None,
                 device: Any = None, early_stop_baseline: Optional[float] = None) -> Any:
        """Milliseconds per call of the kernel (or `func`) on inputs
        generated once (or `input_tensors`), timed as tilejit.profiler.do_bench
        says. The kernel is timed as TileLang's profiler times it: its
        outputs are made once, by a first call, and passed back through out=
        on every timed call, so each call is the kernel's launch and run
        with no output allocated. `func` is timed as given, func(*inputs).
        Afterwards self.bench_description says what was timed: the callable,
        the calls, where the outputs came from, the statistic."""
        ins = input_tensors if input_tensors is not None else self._get_inputs(
            dynamic_symbolic_constraints)
        if func is not None:
            fn, what = (lambda: func(*ins)), "func(*inputs) as given"
        else:
            outs = _as_list(self.kernel(*ins))
            fn = (lambda: self.kernel(*ins, out=outs)) if outs else (lambda: self.kernel(*ins))
            what = (f"kernel '{self.kernel.name}' ({self.kernel.target}), its "
                    f"{len(outs)} output(s) made once and passed through out=" if outs else
                    f"kernel '{self.kernel.name}' ({self.kernel.target}), which has no outputs")
        result, warmed, timed = _bench(fn, warmup, rep, n_warmup, n_repeat, quantiles, return_mode)
        statistic = (f"quantiles {list(quantiles)}" if quantiles is not None else return_mode)
        self.bench_description = (
            f"{what}; inputs generated once; {timed} timed calls after {warmed + 4} warm-up "
            f"calls; wall-clock ms per call, {statistic}")
        return result


def _as_list(x: Any) -> List[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _to_torch_cuda(x: Any) -> Any:
    if not isinstance(x, np.ndarray):
        return x
    import torch
    if x.dtype.name == "bfloat16":
        return torch.from_numpy(x.astype(np.float32)).to("cuda", torch.bfloat16)
    return torch.from_numpy(x).to("cuda")

"""tilelang.testing: the assertion helpers TileLang's tests and examples
import. They work on numpy arrays and torch tensors alike (a torch tensor is
compared on the host), and torch is never imported here."""

from __future__ import annotations

import inspect
import random
import sys
from typing import Any, Callable

import numpy as np

__all__ = ["torch_assert_close", "assert_allclose", "set_random_seed", "main",
           "requires_cuda", "requires_package"]


def _to_numpy(x: Any) -> np.ndarray:
    module = type(x).__module__ or ""
    if module.startswith("torch"):
        return x.detach().float().cpu().numpy() if x.is_floating_point() else \
            x.detach().cpu().numpy()
    array = np.asarray(x)
    if array.dtype.name == "bfloat16" or array.dtype == np.float16:
        return array.astype(np.float32)
    return array


def _dtype_name(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    return str(dtype).rpartition(".")[2] if dtype is not None else type(x).__name__


def torch_assert_close(tensor_a: Any, tensor_b: Any, rtol: float = 1e-2, atol: float = 1e-3,
                       max_mismatched_ratio: float = 0.001, verbose: bool = False,
                       equal_nan: bool = True, check_device: bool = True,
                       check_dtype: bool = True, check_layout: bool = True,
                       check_stride: bool = False, base_name: str = "LHS",
                       ref_name: str = "RHS") -> None:
    """Asserts |a - b| <= atol + rtol * |b| for all but at most
    max_mismatched_ratio of the elements (TileLang's tolerance rule)."""
    if check_dtype and _dtype_name(tensor_a) != _dtype_name(tensor_b):
        raise AssertionError(f"dtype mismatch: {base_name} is {_dtype_name(tensor_a)}, "
                             f"{ref_name} is {_dtype_name(tensor_b)}")
    a = _to_numpy(tensor_a).astype(np.float64)
    b = _to_numpy(tensor_b).astype(np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {base_name} has shape {tuple(a.shape)}, "
                             f"{ref_name} has shape {tuple(b.shape)}")
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = int(close.size - np.count_nonzero(close))
    allowed = int(max_mismatched_ratio * close.size)
    if verbose:
        sys.stdout.write(f"{base_name} vs {ref_name}: {mismatched} of {close.size} elements "
                         f"differ beyond atol={atol}, rtol={rtol}\n")
    if mismatched > allowed:
        diff = np.abs(a - b)
        worst = np.unravel_index(int(np.nanargmax(np.where(close, -1.0, diff))), a.shape)
        raise AssertionError(
            f"Too many mismatched elements: {mismatched} > {allowed} "
            f"({mismatched / close.size * 100:.2f}% > {max_mismatched_ratio * 100:.2f}%) with "
            f"atol={atol}, rtol={rtol}; the greatest difference is {diff[worst]:g} at index "
            f"{tuple(int(i) for i in worst)} ({base_name} {a[worst]:g}, {ref_name} "
            f"{b[worst]:g})")


def assert_allclose(actual: Any, expected: Any, rtol: float = 1e-2, atol: float = 1e-2,
                    max_mismatched_ratio: float = 0.0) -> None:
    """torch_assert_close without the dtype check."""
    torch_assert_close(actual, expected, rtol=rtol, atol=atol,
                       max_mismatched_ratio=max_mismatched_ratio, check_dtype=False)


def set_random_seed(seed: int = 42) -> None:
    """Seeds Python's, numpy's and (when imported) torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)


def main() -> None:
    """Runs the calling test file under pytest (``tilelang.testing.main()``)."""
    import pytest
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file] + sys.argv[1:]))


def _skip_unless(condition: Callable[[], bool], reason: str) -> Callable[[Any], Any]:
    def decorate(func: Any) -> Any:
        import pytest
        return pytest.mark.skipif(not condition(), reason=reason)(func)
    return decorate


def _cuda_available() -> bool:
    from . import _C
    return "cuda" in _C.registered_targets() and _C.target_available("cuda")


def requires_cuda(func: Any = None) -> Any:
    """Skips a test unless tilejit's cuda target can run here."""
    deco = _skip_unless(_cuda_available, "tilejit's cuda target is not available")
    return deco if func is None else deco(func)


def requires_package(*names: str) -> Callable[[Any], Any]:
    """Skips a test unless every named package imports."""
    def available() -> bool:
        import importlib.util
        return all(importlib.util.find_spec(n) is not None for n in names)
    return _skip_unless(available, f"needs {', '.join(names)}")

"""Dtypes, input values and the comparison of results, shared by the
interpreter and the runner."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 programs are then not generated
    ml_dtypes = None

HAVE_BF16 = ml_dtypes is not None

# Per dtype: |out - ref| <= atol * scale + rtol * |ref|, where scale is the
# largest |ref| of that output (at least 1). The interpreter rounds where
# TileLang rounds (at every typed operation, store and cast); tilejit's CPU
# target computes bf16 / f16 in f32 and rounds on store, and gemm and
# atomics sum in another order, so a few units in the last place, times the
# depth of a reduction, are allowed: in the least precise dtype the program
# computes in, whatever the output's (`tolerance`).
TOLERANCE = {"float32": (1e-4, 1e-4), "float16": (8e-3, 8e-3), "bfloat16": (4e-2, 4e-2),
             "int32": (0, 0)}
# CUDA may run a float32 gemm on the tensor cores in TF32 (10-bit mantissa).
TOLERANCE_CUDA = dict(TOLERANCE, float32=(5e-3, 5e-3))


def np_dtype(name: str) -> Any:
    if name == "bfloat16":
        if ml_dtypes is None:
            raise RuntimeError("bfloat16 needs ml_dtypes")
        return ml_dtypes.bfloat16
    return {"float32": np.float32, "float16": np.float16, "int32": np.int32,
            "bool": np.bool_}[name]


def is_float(name: str) -> bool:
    return name in ("float32", "float16", "bfloat16")


def poison(name: str) -> Any:
    """What an allocation holds before the program writes it: NaN for
    floats (it shows in the outputs when a program reads what it never
    wrote), a value no index can take for ints."""
    return np.nan if is_float(name) else -(1 << 30)


def convert(x: Any, name: str) -> Any:
    """x as dtype `name`, rounded once (floats go through float32, as the
    targets convert)."""
    a = np.asarray(x)
    target = np_dtype(name)
    if a.dtype == target:
        return a
    if is_float(name) and a.dtype != np.float32:
        a = a.astype(np.float32)
    return a.astype(target)


def make_input(fill: str, shape: Tuple[int, ...], dtype: str, rng: np.random.Generator) -> Any:
    if fill.startswith("index:"):
        lo, hi = (int(v) for v in fill.split(":")[1:])
        return rng.integers(lo, hi, size=shape).astype(np.int32)
    if fill == "zeros":
        return np.zeros(shape, np_dtype(dtype))
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if fill == "nan" and x.size:
        x[rng.random(shape) < 0.05] = np.nan
    if fill == "sentinel":
        x = x + 8.0  # far from any value a program computes
    return convert(x, dtype)


def tolerance(dtypes: Iterable[str], target: str = "cpu") -> Tuple[float, float]:
    """(rtol, atol) of a program that computes in `dtypes`: the loosest."""
    table = TOLERANCE_CUDA if target == "cuda" else TOLERANCE
    return max((table[d] for d in dtypes if d in table), default=table["int32"])


def first_mismatch(out: Any, ref: Any, tol: Tuple[float, float]) -> Optional[Dict[str, Any]]:
    """None when `out` matches `ref` within `tol` (rtol, atol; NaN where ref
    has NaN), else the first mismatching element and how many differ."""
    o = np.asarray(out).astype(np.float64)
    r = np.asarray(ref).astype(np.float64)
    if o.shape != r.shape:
        return {"index": None, "got": f"shape {o.shape}", "expected": f"shape {r.shape}",
                "count": o.size}
    rtol, atol = tol
    finite = np.isfinite(r)
    scale = max(1.0, float(np.abs(r[finite]).max())) if finite.any() else 1.0
    with np.errstate(invalid="ignore"):
        ok = np.abs(o - r) <= atol * scale + rtol * np.abs(r)
    ok |= (np.isnan(o) & np.isnan(r)) | (o == r)
    bad = np.argwhere(~ok)
    if not len(bad):
        return None
    i = tuple(int(v) for v in bad[0])
    return {"index": i, "got": float(o[i]), "expected": float(r[i]), "count": len(bad),
            "size": o.size}

"""The regression corpus and the minimiser.

A regression case is one JSON file in regressions/: the program (program.py
as JSON), the seed and target it was found with, what the run said, and a
note of what it found (the defect, with its issue item where one is known).
Whether a case is expected to fail on a target is not stored: it follows
from the features the program uses and the switches in features.py, so a
case turns from an expected failure into a plain test when its feature is
switched on.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from . import render
from .detect import detect
from .interpret import InvalidProgram, interpret
from .program import Alloc, For, If, Let, Load, Parallel, Program, ThreadIdx, from_json, to_json
from .runner import Result, header, inputs

HERE = Path(__file__).resolve().parent
REGRESSIONS = HERE / "regressions"


def load(path: Path) -> Dict[str, Any]:
    case = json.loads(Path(path).read_text())
    case["program"] = from_json(case["program"])
    return case


def cases(directory: Path = REGRESSIONS) -> List[Path]:
    return sorted(Path(directory).glob("*.json"))


def save(directory: Path, program: Program, seed: Optional[int], target: str, result: Result,
         note: str, issue_item: Optional[int] = None) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{target}-{result.status}-seed{seed}" if seed is not None else \
        f"{target}-{result.status}-{program.name}"
    path = directory / f"{stem}.json"
    case = {"note": note, "issue_item": issue_item, "found_on": target, "seed": seed,
            "status": result.status, "message": result.message,
            "features": sorted(detect(program)), "program": to_json(program),
            "source": render.source(program, header(program, seed)).splitlines()}
    path.write_text(json.dumps(case, indent=1) + "\n")
    return path


# --- minimising a failing program ---------------------------------------------------

def _names(x: Any, out: set) -> set:
    """Every buffer and variable name `x` mentions."""
    if isinstance(x, Load):
        out.add(x.buf)
    if isinstance(x, list):
        for v in x:
            _names(v, out)
    elif hasattr(x, "__dataclass_fields__"):
        for f in x.__dataclass_fields__:
            v = getattr(x, f)
            if f in ("buf", "a", "b", "c", "src", "dst") and isinstance(v, str):
                out.add(v)
            elif not isinstance(v, str):
                _names(v, out)
    return out


def _prune(p: Program) -> Program:
    """Drops allocations and parameters nothing mentions any more."""
    p = copy.deepcopy(p)
    used = _names([s for s in p.body if not isinstance(s, Alloc)], set())
    p.body = [s for s in p.body if not isinstance(s, Alloc) or s.buf.name in used]
    p.params = [q for q in p.params if q.buf.name in used]
    return p


def _lists(stmts: List[Any]):
    """Every statement list in `stmts`, nested ones included."""
    yield stmts
    for s in stmts:
        if isinstance(s, (For, Parallel)):
            yield from _lists(s.body)
        elif isinstance(s, If):
            yield from _lists(s.then)
            yield from _lists(s.orelse)


def _removals(p: Program):
    """Programs with one statement fewer, or one loop / `if` replaced by a
    branch of it, outermost first."""
    lists = list(_lists(p.body))
    for li, stmts in enumerate(lists):
        for si, s in enumerate(stmts):
            if isinstance(s, Alloc) or (isinstance(s, Let) and isinstance(s.value, ThreadIdx)):
                continue
            variants = [[]]
            if isinstance(s, If):
                variants += [s.then, s.orelse]
            for v in variants:
                q = copy.deepcopy(p)
                target = list(_lists(q.body))[li]
                target[si:si + 1] = copy.deepcopy(v)
                yield _prune(q)


def _one_check(p: Program, c: int) -> Program:
    q = copy.deepcopy(p)
    q.symbols = {k: [v[c]] for k, v in q.symbols.items()}
    return q


def valid(p: Program) -> bool:
    """The interpreter accepts `p` and nothing it never wrote reaches an
    output (a removed statement may have initialised a tile)."""
    import numpy as np
    rng = np.random.default_rng(0)
    try:
        for c in range(p.checks()):
            symbols = {k: v[c] for k, v in p.symbols.items()}
            out = interpret(p, inputs(p, symbols, rng), symbols)
            if "nan" not in detect(p) and any(
                    np.isnan(np.asarray(v, np.float32)).any() for v in out.values()
                    if v.dtype.kind != "i"):
                return False
    except InvalidProgram as e:
        # An invalid program stays invalid for its reason, nothing else.
        return p.expect_error is not None and str(e).startswith("out of bounds")
    return bool(p.params) and p.expect_error is None


def minimise(p: Program, fails: Callable[[Program], bool], seconds: float = 120.0,
             failing_check: Optional[int] = None) -> Program:
    """The smallest program reached by removing statements one at a time
    while `fails` still holds (greedy, outermost first, until no removal
    is kept or `seconds` have passed)."""
    deadline = time.monotonic() + seconds
    if failing_check is not None and p.checks() > 1:
        q = _one_check(p, failing_check)
        if fails(q):
            p = q
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for q in _removals(p):
            if time.monotonic() >= deadline:
                break
            if valid(q) and fails(q):
                p, progress = q, True
                break
    p.features = sorted(detect(p))
    return p

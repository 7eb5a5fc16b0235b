"""Runs a program on a tilejit target and compares it with the interpreter.

`check(program, target, seed)` is one program: its text is written to a
file and imported (so tilejit's messages carry file:line), compiled once,
then run once per check (the symbols' values), each time on fresh inputs,
and every output compared with what interpret.py computes from the same
inputs. Outputs are passed in, filled with values no program computes, so
an element a target forgets to write shows.

`Worker` runs checks in a child process, so that a kernel that crashes or
hangs is reported as such and the next program runs in a new child.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from . import numerics as nx
from . import render
from .interpret import InvalidProgram, interpret
from .program import Program

# Statuses: pass; mismatch (an output differs); error (tilejit raised);
# accepted (tilejit compiled a program it must reject); crash / timeout
# (the child died or hung); invalid (the program breaks the tester's own
# rules: a tester bug).
FAILURES = ("mismatch", "error", "accepted", "crash", "timeout", "invalid")


@dataclass
class Result:
    status: str
    message: str = ""
    mismatch: Optional[Dict[str, Any]] = None
    compile_s: float = 0.0
    checks: int = 0
    source: str = ""

    @property
    def failed(self) -> bool:
        return self.status in FAILURES


def header(program: Program, seed: Optional[int]) -> str:
    return (f"difftest program {program.name}" + (f", seed {seed}" if seed is not None else "") +
            f"\nfeatures: {', '.join(program.features)}")


def _import(source: str, name: str, workdir: str) -> Any:
    path = os.path.join(workdir, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def inputs(program: Program, symbols: Dict[str, int], rng: np.random.Generator):
    out = {}
    for q in program.params:
        shape = tuple(symbols[d] if isinstance(d, str) else d for d in q.buf.shape)
        out[q.buf.name] = nx.make_input(q.fill, shape, q.buf.dtype, rng)
    return out


class _Device:
    """Moves arrays to the target and back (numpy on the CPU, torch on
    CUDA; bfloat16 travels as int16 bits)."""

    def __init__(self, target: str):
        self.target = target
        if target == "cuda":
            import torch
            self.torch = torch

    def put(self, a: np.ndarray) -> Any:
        if self.target == "cpu":
            return np.array(a, copy=True)
        t = self.torch
        if a.dtype.name == "bfloat16":
            return t.from_numpy(a.view(np.int16).copy()).view(t.bfloat16).cuda()
        return t.from_numpy(a.copy()).cuda()

    def get(self, x: Any, dtype: str) -> np.ndarray:
        if self.target == "cpu":
            return x
        self.torch.cuda.synchronize()
        if dtype == "bfloat16":
            return x.view(self.torch.int16).cpu().numpy().view(nx.np_dtype("bfloat16"))
        return x.cpu().numpy()


def check(program: Program, target: str = "cpu", seed: Optional[int] = None,
          workdir: Optional[str] = None) -> Result:
    """Runs `program` on `target` and compares it with the interpreter (see
    the module's doc)."""
    source = render.source(program, header(program, seed))
    rng = np.random.default_rng(seed if seed is not None else 0)
    n = program.checks()
    cases = []
    for c in range(n):
        symbols = {k: v[c] for k, v in program.symbols.items()}
        tensors = inputs(program, symbols, rng)
        try:
            ref = interpret(program, tensors, symbols)
        except InvalidProgram as e:
            if program.expect_error and str(e).startswith("out of bounds"):
                ref = None
            else:
                return Result("invalid", f"the interpreter rejects the program: {e}",
                              source=source)
        else:
            if program.expect_error:
                return Result("invalid", "a program tilejit must reject is one the "
                                         "interpreter runs", source=source)
        if ref is not None and "nan" not in program.features and \
                any(nx.is_float(str(v.dtype)) and np.isnan(v.astype(np.float32)).any()
                    for v in ref.values()):
            return Result("invalid", "the program reads tile memory it never wrote "
                                     "(NaN poison in an output)", source=source)
        cases.append((symbols, tensors, ref))
    workdir = workdir or tempfile.mkdtemp(prefix="difftest-")
    t0 = time.perf_counter()
    import tilejit
    try:
        kernel = tilejit.compile(_import(source, program.name, workdir), target=target)
    except Exception as e:  # noqa: BLE001 (any failure of tilejit is a finding)
        msg = f"{type(e).__name__}: {e}"
        if program.expect_error:  # the user's line, naming the buffer
            ok = program.expect_error in str(e) and f"{program.name}.py:" in str(e)
            return Result("pass" if ok else "error", msg, source=source)
        return Result("error", f"compile: {msg}", source=source)
    compile_s = time.perf_counter() - t0
    if program.expect_error:
        return Result("accepted", f"tilejit compiled an invalid program (expected an error "
                                  f"naming {program.expect_error})", compile_s=compile_s,
                      source=source)
    dev = _Device(target)
    tol = nx.tolerance({b.dtype for b in program.buffers().values()}, target)
    for c, (symbols, tensors, ref) in enumerate(cases):
        args = [dev.put(tensors[q.buf.name]) for q in program.params]
        try:
            kernel(*args)
        except Exception as e:  # noqa: BLE001
            return Result("error", f"call {c} ({symbols}): {type(e).__name__}: {e}",
                          compile_s=compile_s, checks=c, source=source)
        for q, arg in zip(program.params, args):
            if q.role != "out":
                continue
            got = dev.get(arg, q.buf.dtype)
            bad = nx.first_mismatch(got, ref[q.buf.name], tol)
            if bad:
                bad.update(output=q.buf.name, check=c, symbols=symbols)
                where = f"{q.buf.name}{list(bad['index']) if bad['index'] else ''}"
                return Result("mismatch", f"check {c} {symbols}: {where} = {bad['got']}, "
                              f"expected {bad['expected']} ({bad['count']} of "
                              f"{bad.get('size', '?')} elements differ)", bad,
                              compile_s=compile_s, checks=c, source=source)
    return Result("pass", compile_s=compile_s, checks=n, source=source)


def describe(result: Result, seed: Optional[int], target: str) -> str:
    """A failure as the tests print it: the seed, the message, the program."""
    return (f"difftest {result.status} on {target}" + (f", seed {seed}" if seed is not None
                                                       else "") +
            f": {result.message}\n--- program ---\n{result.source}")


# --- a child process per run of programs ---------------------------------------------

def _serve(conn: Any) -> None:
    workdir = tempfile.mkdtemp(prefix="difftest-")
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        program, target, seed = job
        try:
            result = check(program, target, seed, workdir)
        except Exception:  # noqa: BLE001 (a tester bug, reported as such)
            result = Result("invalid", "the tester failed:\n" + traceback.format_exc())
        conn.send(result)


class Worker:
    """check() in a child process (spawned once, again after a crash)."""

    def __init__(self, timeout_s: float = 300.0):
        self.timeout_s = timeout_s
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def check(self, program: Program, target: str, seed: Optional[int]) -> Result:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((program, target, seed))
        if self.conn.poll(self.timeout_s):
            try:
                return self.conn.recv()
            except (EOFError, ConnectionError):
                pass
            self.proc.join(10)
            code = self.proc.exitcode
            self.close()
            return Result("crash", f"the process running the kernel died (exit code {code})",
                          source=render.source(program, header(program, seed)))
        self.close()
        return Result("timeout", f"no result after {self.timeout_s:.0f} s",
                      source=render.source(program, header(program, seed)))

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
        self.proc = None
        if self.conn is not None:
            self.conn.close()
        self.conn = None

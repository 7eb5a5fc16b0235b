"""The features a program uses, read off the program itself.

The generator records what it drew, but a minimised regression case keeps
only part of its program; whether a case is an expected failure (a feature
off for the target, features.py) is decided on what is left, by `detect`.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Set

from .program import (AtomicAdd, Buffer, Copy, Fill, For, Gemm, If, Load, Parallel, Program,
                      Reduce, Store, ThreadIdx, Var, contains_tile_op, walk)


def _exprs(e: Any) -> Iterable[Any]:
    yield e
    for name in ("a", "b", "cond"):
        if hasattr(e, name):
            yield from _exprs(getattr(e, name))
    for i in getattr(e, "idx", []) or []:
        yield from _exprs(i)


def _uses_thread(e: Any) -> bool:
    return any(isinstance(x, ThreadIdx) or (isinstance(x, Var) and x.name == "tx")
               for x in _exprs(e))


def _buffers(stmts: List[Any]) -> Set[str]:
    """The buffers `stmts` load or store."""
    out: Set[str] = set()
    for s in walk(stmts):
        if isinstance(s, (Store, AtomicAdd)):
            out.add(s.buf)
        for e in _stmt_exprs(s):
            out.update(x.buf for x in _exprs(e) if isinstance(x, Load))
    return out


def _stmt_exprs(s: Any) -> List[Any]:
    if isinstance(s, (Store, AtomicAdd)):
        return list(s.idx) + [s.value]
    if isinstance(s, If):
        return [s.cond]
    return []


def detect(p: Program) -> Set[str]:
    bufs: Dict[str, Buffer] = p.buffers()
    out: Set[str] = set()
    if p.expect_error:
        out.add("parallel_oob")
    if p.symbols:
        out.add("symbolic")
    for b in bufs.values():
        if b.dtype in ("float16", "bfloat16"):
            out.add(b.dtype)
        if b.scope == "reducer":
            out.add("reducer")
    if any(q.fill == "nan" for q in p.params):
        out.add("nan")
    if "partial_tiles" in p.features:
        out.add("partial_tiles")
    _walk(p.body, bufs, out, in_parallel=False, in_loop=False, per_thread=False)
    return out


def _walk(stmts: List[Any], bufs: Dict[str, Buffer], out: Set[str], in_parallel: bool,
          in_loop: bool, per_thread: bool) -> None:
    """in_loop: inside a loop that holds tile ops; per_thread: inside a
    loop or `if` of per-thread code."""
    for s in stmts:
        if isinstance(s, Copy):
            for o in (s.src, s.dst):
                if o.form != "whole":
                    out.add("copy_" + o.form)
                for st in o.starts:
                    for x in _exprs(st):
                        if isinstance(x, Load) and in_loop:
                            out.add("pipelined_dependent" if bufs[x.buf].scope in
                                    ("local", "var") else "pipelined_gather")
            if s.src.form == s.dst.form == "whole" and bufs[s.src.buf].scope != "global" \
                    and bufs[s.dst.buf].scope != "global":
                out.add("copy_whole")
        elif isinstance(s, Gemm):
            out.add("gemm")
            if s.trans_a or s.trans_b:
                out.add("gemm_transpose")
            if bufs[s.a].scope == "fragment":
                out.add("gemm_fragment_a")
        elif isinstance(s, Reduce):
            out.add("reduce")
        elif isinstance(s, Fill) and bufs[s.dst.buf].scope != "reducer":
            out.add("fill")
        elif isinstance(s, Parallel):
            for name in _buffers(s.body):
                if bufs[name].scope in ("fragment", "shared"):
                    out.add("parallel_" + bufs[name].scope)
            _walk(s.body, bufs, out, True, in_loop, False)
        elif isinstance(s, For):
            collective = contains_tile_op(s.body)
            if collective:
                out.add("k_loop")
            _walk(s.body, bufs, out, in_parallel, in_loop or collective,
                  per_thread or not collective)
        elif isinstance(s, If):
            collective = contains_tile_op(s.then + s.orelse)
            if not in_parallel and _uses_thread(s.cond):
                out.add("thread_cond_tile" if collective else "thread_cond")
            _walk(s.then + s.orelse, bufs, out, in_parallel, in_loop,
                  per_thread or not (collective or in_parallel))
        elif isinstance(s, (Store, AtomicAdd)):
            scope = bufs[s.buf].scope
            atomic = isinstance(s, AtomicAdd)
            if in_parallel:
                if atomic and scope == "global":
                    out.add("atomic_global")
            elif scope in ("local", "var"):
                # A value every thread stores alike into its own local (the
                # block index of a pipelined gather) is not per-thread code.
                if per_thread or any(_uses_thread(e) for e in s.idx + [s.value]):
                    out.add("thread_var")
            elif atomic:
                out.add("atomic_shared" if scope == "shared" else "atomic_thread_global")
            else:
                out.add("thread_store")

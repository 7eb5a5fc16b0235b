"""A numpy interpreter of TileLang's semantics for the tester's programs.

It reads only program.py's classes and knows nothing of tilejit. The model:

- The blocks of the grid run one after another; a block's shared, fragment
  and reducer buffers are its own, fresh and poisoned (NaN) at its start.
- Tile ops (T.copy, T.gemm, T.fill / T.clear, T.reduce_*, T.Parallel nests,
  T.finalize_reducer) are the block's: each runs once. Their operands are
  evaluated with every active thread's values and must agree.
- Every other statement runs on every thread of the block, with its own
  thread index, T.alloc_local and T.alloc_var values and `x = ...`
  temporaries. A top-level statement (of the body, or of a loop or `if`
  that holds tile ops) is a region: TileLang puts a barrier wherever two
  statements exchange data through shared memory, so the region runs thread
  by thread, all of it for thread 0, then thread 1 and so on.
- An `if` whose body holds tile ops splits the threads: its per-thread
  statements run on the threads the condition admits, and each tile op in
  it runs once if any thread is admitted (a warp-specialised branch).
- T.copy reads an element outside a tensor as 0 and never writes one.

It also checks what the generator promises, and raises InvalidProgram when
a program breaks it: two threads of one region touching the same element of
a shared or global buffer where one writes (atomics aside), two blocks
writing one element, a T.Parallel iteration reading what another writes, an
index outside a tile or a tensor, tile-op operands that differ between
threads. An invalid program is a generator bug, unless the program is one
that tilejit must reject (Program.expect_error).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from . import numerics as nx
from .program import (Alloc, AtomicAdd, Bin, Cast, Const, Copy, Fill, FinalizeReducer, For,
                      Gemm, If, Let, Load, Operand, Parallel, Program, Reduce, Select, Store,
                      ThreadIdx, Un, Var, contains_tile_op)


class InvalidProgram(Exception):
    """The program breaks a rule of TileLang's semantics or of the
    generator (see the module's doc)."""


_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
          "max": np.maximum, "min": np.minimum}
_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}
_INT_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "//": lambda a, b: a // b, "%": lambda a, b: a % b, "max": max, "min": min,
            "ceildiv": lambda a, b: -(-a // b)}
_REDUCE_UFUNC = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _f32(x: Any) -> Any:
    return np.asarray(x).astype(np.float32)


class Interpreter:
    def __init__(self, program: Program, tensors: Dict[str, np.ndarray],
                 symbols: Dict[str, int]):
        self.p = program
        self.bufs = program.buffers()
        self.mem: Dict[str, np.ndarray] = dict(tensors)
        self.symbols = dict(symbols)
        self.threads = program.threads
        # Per global element, the block that last wrote it (-1: none) and
        # whether an atomic touched it.
        self.writer = {q.buf.name: np.full(tensors[q.buf.name].shape, -1, np.int64)
                       for q in program.params if q.role == "out"}
        self.atomic = {name: np.zeros(a.shape, bool) for name, a in self.writer.items()}
        # Per element of a tile or per-thread buffer: written yet? Reading
        # what was never written is an invalid program (tilejit would read
        # whatever the memory held).
        self.wr: Dict[str, np.ndarray] = {}
        self.block = 0
        # During a region: (buffer, index) -> (the thread that touched it, -1
        # for several; how: read, write, atomic).
        self.region: Optional[Dict[Any, Any]] = None

    # --- expressions ---------------------------------------------------------

    def eval(self, e: Any, env: Dict[str, Any], t: Optional[int]) -> Any:
        if isinstance(e, Const):
            return e.value if e.dtype in ("int32", "bool") else nx.convert(e.value, e.dtype)
        if isinstance(e, Var):
            if e.name in env:
                return env[e.name]
            if e.name in self.symbols:
                return self.symbols[e.name]
            raise InvalidProgram(f"unbound name {e.name}")
        if isinstance(e, ThreadIdx):
            if t is None:
                raise InvalidProgram("the thread index read inside a tile op")
            return t
        if isinstance(e, Bin):
            return self._bin(e, self.eval(e.a, env, t), self.eval(e.b, env, t))
        if isinstance(e, Un):
            a = self.eval(e.a, env, t)
            if e.op == "neg":
                return nx.convert(-_f32(a), e.dtype)
            if e.op == "abs":
                return nx.convert(np.abs(_f32(a)), e.dtype)
            x = _f32(a)
            y = {"exp": np.exp, "tanh": np.tanh,
                 "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[e.op](x)
            return nx.convert(y, e.dtype)
        if isinstance(e, Cast):
            return self._cast(self.eval(e.a, env, t), e.a.dtype, e.dtype)
        if isinstance(e, Select):
            c = self.eval(e.cond, env, t)
            return self._select(c, self.eval(e.a, env, t), self.eval(e.b, env, t), e.dtype)
        if isinstance(e, Load):
            return self.load(e.buf, [self.eval(i, env, t) for i in e.idx], t)
        raise InvalidProgram(f"not an expression: {e!r}")

    def _bin(self, e: Bin, a: Any, b: Any) -> Any:
        if e.op in _COMPARE or e.op in ("and", "or"):
            f = _COMPARE.get(e.op) or (np.logical_and if e.op == "and" else np.logical_or)
            r = f(a, b)
            return bool(r) if np.ndim(r) == 0 else r
        if e.dtype == "int32":
            if np.ndim(a) == 0 and np.ndim(b) == 0:
                return _INT_OPS[e.op](int(a), int(b))
            a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
            if e.op == "ceildiv":
                return -np.floor_divide(-a, b)
            return {"//": np.floor_divide, "%": np.mod}.get(e.op, _ARITH.get(e.op))(a, b)
        with np.errstate(all="ignore"):
            return nx.convert(_ARITH[e.op](_f32(a), _f32(b)), e.dtype)

    def _cast(self, a: Any, src: str, dst: str) -> Any:
        if dst == "int32":
            if nx.is_float(src):
                return np.trunc(_f32(a)).astype(np.int64)
            return a
        return nx.convert(a, dst)

    def _select(self, c: Any, a: Any, b: Any, dtype: str) -> Any:
        if isinstance(c, (bool, np.bool_)):
            return a if c else b
        out = np.where(c, a, b)
        return out if dtype == "int32" else nx.convert(out, dtype)

    # --- memory ----------------------------------------------------------------

    def _array(self, name: str, t: Optional[int]) -> np.ndarray:
        buf = self.bufs[name]
        arr = self.mem[name]
        if buf.scope in ("local", "var"):
            if t is None:
                raise InvalidProgram(f"{name}: a per-thread buffer used by a tile op")
            return arr[t]
        return arr

    def _written(self, name: str, t: Optional[int]) -> Optional[np.ndarray]:
        if name not in self.wr:
            return None
        return self.wr[name][t] if self.bufs[name].scope in ("local", "var") else self.wr[name]

    def need(self, name: str, t: Optional[int], key: Any = Ellipsis) -> None:
        """Raises unless every element `key` of `name` has been written."""
        wr = self._written(name, t)
        if wr is not None and not np.all(wr[key]):
            raise InvalidProgram(f"{name} is read where it was never written")

    def _check_index(self, name: str, arr: np.ndarray, idx: List[Any], store: bool) -> Any:
        """The in-bounds mask of `idx` (scalars or arrays); an index outside
        a tile, or a store outside a tensor, is an invalid program."""
        if len(idx) != arr.ndim:
            raise InvalidProgram(f"{name}: {len(idx)} indices into a {arr.ndim}-d buffer")
        if all(np.ndim(i) == 0 for i in idx):
            inb = all(0 <= int(i) < n for i, n in zip(idx, arr.shape))
        else:
            inb = True
            for i, n in zip(idx, arr.shape):
                inb = np.logical_and(inb, (np.asarray(i) >= 0) & (np.asarray(i) < n))
        if (self.bufs[name].scope != "global" or store) and not np.all(inb):
            where = "store into" if store else "load from"
            raise InvalidProgram(f"out of bounds: {where} {name}{list(arr.shape)}")
        return inb

    def _track(self, name: str, idx: List[Any], t: Optional[int], write: bool,
               atomic: bool = False) -> None:
        """Race check of one per-thread access: two threads of one region
        may share an element only to read it, or only to add to it
        atomically."""
        if self.region is None or t is None or self.bufs[name].scope in ("local", "var"):
            return
        key = (name, tuple(int(i) for i in idx))
        kind = "atomic" if atomic else ("write" if write else "read")
        owner, kinds = self.region.get(key, (t, frozenset()))
        if owner != t:
            both = kinds | {kind}
            if "write" in both or {"atomic", "read"} <= both:
                raise InvalidProgram(f"race on {name}{list(key[1])}: threads {owner} and {t} "
                                     f"({', '.join(sorted(both))}) in one region")
        self.region[key] = (t if owner == t else -1, kinds | {kind})

    def load(self, name: str, idx: List[Any], t: Optional[int]) -> Any:
        buf = self.bufs[name]
        arr = self._array(name, t)
        if buf.scope == "var":
            idx = [0]
        inb = self._check_index(name, arr, idx, False)
        self._track(name, idx, t, False)
        if all(np.ndim(i) == 0 for i in idx):
            if not inb:
                return 0 if buf.dtype == "int32" else nx.convert(0, buf.dtype)
            key = tuple(int(i) for i in idx)
            self.need(name, t, key)
            v = arr[key]
            return int(v) if buf.dtype == "int32" else v
        clipped = tuple(np.clip(np.asarray(i), 0, n - 1) for i, n in zip(idx, arr.shape))
        self.need(name, t, clipped)
        return np.where(inb, arr[clipped], nx.convert(0, buf.dtype)) if buf.dtype != "int32" \
            else np.where(inb, arr[clipped], 0)

    def store(self, name: str, idx: List[Any], value: Any, t: Optional[int],
              mask: Any = True, atomic: bool = False) -> None:
        buf = self.bufs[name]
        arr = self._array(name, t)
        if buf.scope == "var":
            idx = [0]
        if all(np.ndim(i) == 0 for i in idx) and np.ndim(value) == 0 \
                and np.ndim(mask) == 0:
            if not mask:
                return
            self._check_index(name, arr, idx, True)
            self._track(name, idx, t, True, atomic)
            self._note_global(name, [np.asarray(i) for i in idx], atomic)
            key = tuple(int(i) for i in idx)
            v = nx.convert(value, buf.dtype)
            if atomic:
                self.need(name, t, key)
            arr[key] = nx.convert(_f32(arr[key]) + _f32(v), buf.dtype) if atomic else v
            self._mark(name, t, key)
            return
        shape = np.broadcast(*[np.asarray(i) for i in idx], np.asarray(value),
                             np.asarray(mask)).shape
        m = np.broadcast_to(mask, shape)
        sel = [np.broadcast_to(np.asarray(i), shape)[m] for i in idx]
        vals = nx.convert(np.broadcast_to(np.asarray(value), shape)[m], buf.dtype)
        self._check_index(name, arr, sel, True)
        self._note_global(name, sel, atomic)
        if atomic:
            self.need(name, t, tuple(sel))
            acc = _f32(arr)
            np.add.at(acc, tuple(sel), _f32(vals))
            arr[...] = nx.convert(acc, buf.dtype)
            return
        flat = np.ravel_multi_index(tuple(sel), arr.shape) if arr.ndim else np.zeros(0, int)
        if len(np.unique(flat)) != len(flat):
            raise InvalidProgram(f"race: two T.Parallel iterations store one element of {name}")
        arr[tuple(sel)] = vals
        self._mark(name, t, tuple(sel))

    def _mark(self, name: str, t: Optional[int], key: Any = Ellipsis) -> None:
        wr = self._written(name, t)
        if wr is not None:
            wr[key] = True

    def _note_global(self, name: str, idx: List[Any], atomic: bool) -> None:
        if name not in self.writer:
            return
        key = tuple(np.asarray(i, np.int64) for i in idx)
        if atomic:
            if np.any(self.writer[name][key] >= 0):
                raise InvalidProgram(f"{name}: an atomic and a plain store meet on one element")
            self.atomic[name][key] = True
            return
        prev = self.writer[name][key]
        if np.any((prev >= 0) & (prev != self.block)) or np.any(self.atomic[name][key]):
            raise InvalidProgram(f"race: two blocks store one element of {name}")
        self.writer[name][key] = self.block

    # --- tile ops ----------------------------------------------------------------

    def uniform(self, e: Any, envs: List[Dict[str, Any]], active: List[int]) -> int:
        """A tile op's operand, the same on every active thread."""
        first = int(self.eval(e, envs[active[0]], active[0]))
        for t in active[1:]:
            if int(self.eval(e, envs[t], t)) != first:
                raise InvalidProgram("a tile op's operand differs between threads")
        return first

    def region_of(self, o: Operand, other: Operand, envs, active) -> tuple:
        """(array, starts, extents) of a tile op operand."""
        arr = self._array(o.buf, None)
        if o.form == "whole":
            return arr, [0] * arr.ndim, list(arr.shape)
        starts = [self.uniform(s, envs, active) for s in o.starts]
        if o.form == "slice":
            return arr, starts, list(o.extents)
        if other.form == "corner":
            raise InvalidProgram("a copy between two start corners")
        _, _, ext = self.region_of(other, o, envs, active)
        if len(ext) != len(starts):
            raise InvalidProgram("a start corner of another rank than the other side")
        return arr, starts, ext

    def read_region(self, name: str, arr, starts, ext) -> np.ndarray:
        idx = np.ix_(*[np.arange(s, s + n) for s, n in zip(starts, ext)])
        return self.load(name, list(idx), None)

    def copy(self, s: Copy, envs, active) -> None:
        sa, ss, se = self.region_of(s.src, s.dst, envs, active)
        da, ds, de = self.region_of(s.dst, s.src, envs, active)
        if [n for n in se if n != 1] != [n for n in de if n != 1]:
            raise InvalidProgram(f"copy of shape {se} into {de}")
        data = self.read_region(s.src.buf, sa, ss, se).reshape(de)
        dst = self.bufs[s.dst.buf]
        idx = np.ix_(*[np.arange(st, st + n) for st, n in zip(ds, de)])
        if dst.scope == "global":
            inb = True
            for i, n in zip(idx, da.shape):
                inb = np.logical_and(inb, (i >= 0) & (i < n))
            self.store(s.dst.buf, list(idx), data, None, mask=inb)
        else:
            self.store(s.dst.buf, list(idx), data, None)

    def gemm(self, s: Gemm) -> None:
        a = self._array(s.a, None).astype(np.float64)
        b = self._array(s.b, None).astype(np.float64)
        c = self._array(s.c, None)
        a, b = (a.T if s.trans_a else a), (b.T if s.trans_b else b)
        for name in [s.a, s.b] + ([] if s.clear else [s.c]):
            self.need(name, None)
        self._mark(s.c, None)
        if a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]):
            raise InvalidProgram(f"gemm of {a.shape} and {b.shape} into {c.shape}")
        acc = (0 if s.clear else c.astype(np.float64)) + a @ b
        c[...] = nx.convert(acc.astype(np.float32), self.bufs[s.c].dtype)

    def reduce(self, s: Reduce) -> None:
        x = self._array(s.src, None).astype(np.float64)
        dst = self._array(s.dst, None)
        for name in [s.src] + ([] if s.clear else [s.dst]):
            self.need(name, None)
        self._mark(s.dst, None)
        if s.kind in ("abssum", "absmax"):
            x = np.abs(x)
        r = x.sum(axis=s.dim) if s.kind.endswith("sum") else \
            (x.max(axis=s.dim) if s.kind.endswith("max") else x.min(axis=s.dim))
        if r.shape != dst.shape:
            raise InvalidProgram(f"reduce of {x.shape} over {s.dim} into {dst.shape}")
        if not s.clear:
            old = dst.astype(np.float64)
            r = old + r if s.kind.endswith("sum") else \
                (np.maximum(old, r) if s.kind.endswith("max") else np.minimum(old, r))
        dst[...] = nx.convert(r.astype(np.float32), self.bufs[s.dst].dtype)

    def fill(self, s: Fill, envs, active) -> None:
        buf = self.bufs[s.dst.buf]
        value = self.eval(s.value, envs[active[0]], active[0])
        if buf.scope in ("local", "var"):
            for t in active:  # each thread's own copy
                self.mem[buf.name][t][...] = nx.convert(value, buf.dtype)
                self._mark(buf.name, t)
            return
        arr, st, ext = self.region_of(s.dst, s.dst, envs, active)
        idx = np.ix_(*[np.arange(a, a + n) for a, n in zip(st, ext)])
        self.store(buf.name, list(idx), value, None)

    def parallel(self, s: Parallel, env: Dict[str, Any]) -> None:
        grids = np.meshgrid(*[np.arange(n) for n in s.extents], indexing="ij")
        penv = dict(env)
        penv.update(zip(s.vars, grids))
        self.par_body(s.body, penv, np.ones(tuple(s.extents), bool))

    def par_body(self, body: List[Any], env: Dict[str, Any], mask: np.ndarray) -> None:
        for st in body:
            if isinstance(st, Let):
                env[st.name] = self.eval(st.value, env, None)
            elif isinstance(st, Store) and self.bufs[st.buf].scope == "reducer":
                self.reducer_update(st, env, mask)
            elif isinstance(st, Store):
                self._no_cross_iteration(st, env, mask)
                self.store(st.buf, [self.eval(i, env, None) for i in st.idx],
                           self.eval(st.value, env, None), None, mask)
            elif isinstance(st, AtomicAdd):
                self.store(st.buf, [self.eval(i, env, None) for i in st.idx],
                           self.eval(st.value, env, None), None, mask, atomic=True)
            elif isinstance(st, If):
                c = np.broadcast_to(self.eval(st.cond, env, None), mask.shape)
                self.par_body(st.then, env, mask & c)
                self.par_body(st.orelse, env, mask & ~c)
            else:
                raise InvalidProgram(f"{type(st).__name__} inside T.Parallel")

    def _no_cross_iteration(self, st: Store, env, mask) -> None:
        """A T.Parallel iteration may read the element it stores, never
        another iteration's."""
        loads = [e for e in _loads(st.value) if e.buf == st.buf]
        if not loads:
            return
        own = [np.broadcast_to(self.eval(i, env, None), mask.shape) for i in st.idx]
        for ld in loads:
            other = [np.broadcast_to(self.eval(i, env, None), mask.shape) for i in ld.idx]
            if any(np.any((a != b) & mask) for a, b in zip(own, other)):
                raise InvalidProgram(f"a T.Parallel iteration reads another's {st.buf}")

    def reducer_update(self, st: Store, env, mask) -> None:
        buf = self.bufs[st.buf]
        v = st.value
        op = {"+": "sum", "max": "max", "min": "min"}.get(getattr(v, "op", None))
        if op != buf.reduce_op or not isinstance(v.a, Load) or v.a.buf != st.buf:
            raise InvalidProgram(f"{st.buf}: a reducer takes r[i] = r[i] {buf.reduce_op} v")
        idx = [np.broadcast_to(self.eval(i, env, None), mask.shape)[mask] for i in st.idx]
        val = np.broadcast_to(self.eval(v.b, env, None), mask.shape)[mask]
        arr = self.mem[st.buf]
        self._check_index(st.buf, arr, idx, True)
        self.need(st.buf, None, tuple(idx))
        acc = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):  # NaN poison stays NaN
            _REDUCE_UFUNC[op].at(acc, tuple(idx), _f32(val).astype(np.float64))
        arr[...] = nx.convert(acc.astype(np.float32), buf.dtype)

    # --- statements ------------------------------------------------------------

    def run_block(self, body: List[Any], envs: List[Dict[str, Any]], active: List[int]) -> None:
        for s in body:
            if not active:
                return
            if isinstance(s, Alloc):
                self.alloc(s)
            elif isinstance(s, Copy):
                self.copy(s, envs, active)
            elif isinstance(s, Gemm):
                self.gemm(s)
            elif isinstance(s, Reduce):
                self.reduce(s)
            elif isinstance(s, Fill):
                self.fill(s, envs, active)
            elif isinstance(s, FinalizeReducer):
                pass  # the reducer already holds the block's result
            elif isinstance(s, Parallel):
                self.parallel(s, envs[active[0]])
            elif isinstance(s, For) and contains_tile_op(s.body):
                for v in range(self.uniform(s.extent, envs, active)):
                    for t in range(self.threads):
                        envs[t][s.var] = v
                    self.run_block(s.body, envs, active)
            elif isinstance(s, If) and contains_tile_op(s.then + s.orelse):
                taken = [t for t in active if self.eval(s.cond, envs[t], t)]
                self.run_block(s.then, envs, taken)
                self.run_block(s.orelse, envs, [t for t in active if t not in taken])
            else:
                self.region = {}
                for t in active:
                    self.run_thread([s], envs[t], t)
                self.region = None

    def run_thread(self, body: List[Any], env: Dict[str, Any], t: int) -> None:
        for s in body:
            if isinstance(s, Let):
                env[s.name] = self.eval(s.value, env, t)
            elif isinstance(s, Store):
                self.store(s.buf, [self.eval(i, env, t) for i in s.idx],
                           self.eval(s.value, env, t), t)
            elif isinstance(s, AtomicAdd):
                self.store(s.buf, [self.eval(i, env, t) for i in s.idx],
                           self.eval(s.value, env, t), t, atomic=True)
            elif isinstance(s, For):
                for v in range(int(self.eval(s.extent, env, t))):
                    env[s.var] = v
                    self.run_thread(s.body, env, t)
            elif isinstance(s, If):
                self.run_thread(s.then if self.eval(s.cond, env, t) else s.orelse, env, t)
            else:
                raise InvalidProgram(f"{type(s).__name__} in per-thread code")

    def alloc(self, s: Alloc) -> None:
        b = s.buf
        shape = tuple(b.shape)
        if b.scope in ("local", "var"):
            shape = (self.threads,) + (shape if b.scope == "local" else (1,))
        fill = b.init if b.scope == "var" else nx.poison(b.dtype)
        self.wr[b.name] = np.full(shape, b.scope == "var")
        self.mem[b.name] = np.full(shape, nx.convert(fill, b.dtype) if nx.is_float(b.dtype)
                                   else fill, nx.np_dtype(b.dtype))

    def run(self) -> Dict[str, np.ndarray]:
        grid = [int(self.eval(g, {}, None)) for g in self.p.grid]
        names = ["bx", "by", "bz"]
        n = int(np.prod(grid))
        for block in range(n):
            self.block = block
            coords, rest = {}, block
            for name, g in zip(names, grid):
                coords[name], rest = rest % g, rest // g
            envs = [dict(coords) for _ in range(self.threads)]
            self.run_block(self.p.body, envs, list(range(self.threads)))
        return {q.buf.name: self.mem[q.buf.name] for q in self.p.params if q.role == "out"}


def _loads(e: Any):
    if isinstance(e, Load):
        yield e
        for i in e.idx:
            yield from _loads(i)
    for name in ("a", "b", "cond"):
        if hasattr(e, name) and not isinstance(e, Load):
            yield from _loads(getattr(e, name))


def interpret(program: Program, tensors: Dict[str, np.ndarray],
              symbols: Dict[str, int]) -> Dict[str, np.ndarray]:
    """Runs `program` on copies of `tensors` (every parameter, outputs with
    their starting values) and returns the outputs' final values."""
    mem = {k: np.array(v, copy=True) for k, v in tensors.items()}
    return Interpreter(program, mem, symbols).run()

"""Random tile programs: `generate(seed, features)` -> Program.

A program is one kernel made of one to three motifs (motifs_tile.py,
motifs_thread.py), each with its own tensors and tiles, drawn from the
features that are on (features.py). The kernel's shape is shared: a grid
of ceildiv(M, bm) row blocks (times 1 or 2 column blocks `by`), `threads`
threads, the block's rows starting at bx * bm. M (and K where a motif loops
over K) may be T.symbolic, bound to several values, one per check, so that
one compile serves several checks.

This module holds the kernel-wide state (`Gen`) and the helpers the motifs
share: names, parameters, allocations, expressions, and the copies that
move a block's tile between a tensor and a tile in any operand form. The
generator keeps every rule interpret.py checks (race freedom, indices
inside tiles), so a program is valid by construction.
"""

from __future__ import annotations

import random
from typing import Any, Callable, List, Optional, Set

from . import numerics
from .program import (Alloc, AtomicAdd, Bin, Buffer, Cast, Const, Copy, If, Let, Load, Operand,
                      Parallel, Param, Program, Select, Store, ThreadIdx, Un, Var)


def C(v: Any, dtype: str = "int32") -> Const:
    return Const(v, dtype)


def I(name: str) -> Var:  # noqa: E743 (an index variable)
    return Var(name, "int32")


def add(a, b): return Bin("+", a, b, a.dtype)
def mul(a, b): return Bin("*", a, b, a.dtype)
def lt(a, b): return Bin("<", a, b, "bool")
def AND(a, b): return Bin("and", a, b, "bool")


class Gen:
    def __init__(self, seed: Any, features: Set[str]):
        self.seed = seed
        self.rng = random.Random(seed)
        self.on_features = set(features)
        if not numerics.HAVE_BF16:
            self.on_features.discard("bfloat16")
        self.params: List[Param] = []
        self.allocs: List[Alloc] = []
        self.body: List[Any] = []
        self.symbols: dict = {}
        self.counter = 0
        self.uses_tx = False
        self.nan = False
        self.partial = False
        self.checks = 1

    # --- features and names ----------------------------------------------------

    def on(self, *names: str) -> bool:
        return all(n in self.on_features for n in names)

    def maybe(self, name: str, p: float = 0.5) -> bool:
        """Draws whether to use `name`: never when it is off."""
        return name in self.on_features and self.rng.random() < p

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, xs):
        return self.rng.choice(list(xs))

    # --- the kernel's shape ----------------------------------------------------

    def setup(self) -> None:
        r = self.rng
        self.threads = r.choice([32, 64, 128, 128, 256])
        self.bm = r.choice([16, 32, 32, 64])
        self.G = r.choice([1, 1, 2])
        self.partial = self.maybe("partial_tiles", 0.7)
        self.symbolic = self.maybe("symbolic", 0.6)
        self.checks = 2 if self.symbolic else 1
        self.M_values = [self.extent(self.bm, 3) for _ in range(self.checks)]
        if self.symbolic:
            self.symbols["M"] = self.M_values
            self.M: Any = I("M")
            self.M_shape: Any = "M"
        else:
            self.M = C(self.M_values[0])
            self.M_shape = self.M_values[0]
        self.row0 = mul(I("bx"), C(self.bm))
        self.grid = [Bin("ceildiv", self.M, C(self.bm), "int32")
                     if self.symbolic else C(-(-self.M_values[0] // self.bm))]
        if self.G > 1:
            self.grid.append(C(self.G))

    def extent(self, tile: int, tiles: int) -> int:
        """A tensor extent covering up to `tiles` tiles: a multiple of `tile`
        unless partial tiles are on."""
        n = self.rng.randint(1, tiles) * tile
        if self.partial and self.rng.random() < 0.8:
            n -= self.rng.randint(1, tile - 1)
        return n

    def col0(self, width: int) -> Any:
        return mul(I("by"), C(width)) if self.G > 1 else C(0)

    def dtype(self) -> str:
        options = ["float32"]
        if self.on("float16"):
            options.append("float16")
        if self.on("bfloat16"):
            options.append("bfloat16")
        return self.choice(options)

    def tx(self) -> Var:
        self.uses_tx = True
        return I("tx")

    # --- parameters, allocations, statements -----------------------------------

    def param(self, prefix: str, shape: List[Any], dtype: str, role: str = "in",
              fill: str = "uniform") -> Buffer:
        b = Buffer(self.name(prefix), "global", list(shape), dtype)
        self.params.append(Param(b, role, fill))
        return b

    def input_rows(self, prefix: str, cols: int, dtype: str) -> Buffer:
        """An input of M rows (the kernel's row blocks) and `cols` columns."""
        return self.param(prefix, [self.M_shape, cols], dtype,
                          fill="nan" if self.nan else "uniform")

    def alloc(self, prefix: str, scope: str, shape: List[int], dtype: str, **kw) -> Buffer:
        b = Buffer(self.name(prefix), scope, list(shape), dtype, **kw)
        self.allocs.append(Alloc(b))
        return b

    def emit(self, *stmts: Any) -> None:
        self.body.extend(stmts)

    def capture(self, fn: Callable[[], None]) -> List[Any]:
        """The statements `fn` emits, taken out of the body."""
        saved, self.body = self.body, []
        try:
            fn()
            return self.body
        finally:
            self.body = saved

    def cols(self, width: int) -> int:
        """The column count of a tensor that the G column blocks of
        `width` cover (the last one partial when partial tiles are on)."""
        n = self.G * width
        if self.partial and width > 1 and self.rng.random() < 0.6:
            n -= self.rng.randint(1, width - 1)
        return n

    # --- expressions -------------------------------------------------------------

    def cast(self, e: Any, dtype: str) -> Any:
        return e if e.dtype == dtype else Cast(e, dtype)

    def fexpr(self, leaves: List[Callable[[], Any]], dtype: str, depth: int = 2,
              conds: Optional[List[Callable[[], Any]]] = None) -> Any:
        """A random float expression of `dtype` over `leaves` (callables
        making a leaf), with selects on `conds` (index conditions)."""
        r = self.rng.random()
        if depth == 0 or r < 0.25:
            return self.cast(self.choice(leaves)(), dtype)
        if r < 0.55:
            ops = ["+", "-", "*"] + ([] if self.nan else ["max", "min"])
            return Bin(self.choice(ops), self.fexpr(leaves, dtype, depth - 1, conds),
                       self.fexpr(leaves, dtype, depth - 1, conds), dtype)
        if r < 0.7:
            k = self.choice([0.5, 2.0, -1.5, 0.25, 3.0])
            return Bin(self.choice(["*", "+"]), self.fexpr(leaves, dtype, depth - 1, conds),
                       C(k, dtype), dtype)
        if r < 0.85:
            op = self.choice(["neg", "abs", "tanh", "sigmoid", "exp"])
            a = self.fexpr(leaves, dtype, depth - 1, conds)
            if op == "exp":  # bounded, so f16 stays finite
                a = Un("tanh", a, dtype)
            return Un(op, a, dtype)
        if conds:
            return Select(self.choice(conds)(), self.fexpr(leaves, dtype, depth - 1, conds),
                          self.fexpr(leaves, dtype, depth - 1, conds), dtype)
        return self.fexpr(leaves, dtype, depth - 1, conds)

    def index_term(self, var: Any, dtype: str) -> Any:
        """A float leaf that depends on an index: var * 1/16."""
        return Bin("*", Cast(var, dtype), C(0.0625, dtype), dtype)

    # --- moving a block's tile ---------------------------------------------------

    def load_tile(self, src: Buffer, tile: Buffer, col_width: int) -> None:
        """Copies the block's [bm, col_width] tile of `src` (rows bx * bm,
        columns by * col_width) into `tile`, in a random operand form, whole
        or in two row halves."""
        self.move_tile(src, tile, col_width, to_global=False)

    def store_tile(self, tile: Buffer, dst: Buffer, col_width: int) -> None:
        self.move_tile(dst, tile, col_width, to_global=True)

    def move_tile(self, g: Buffer, tile: Buffer, width: int, to_global: bool) -> None:
        rows, cols = tile.shape
        forms = [f for f in ("corner", "slice") if self.on("copy_" + f)] or ["corner"]
        halves = self.on("copy_slice") and rows >= 2 and self.rng.random() < 0.25
        parts = [(0, rows // 2), (rows // 2, rows - rows // 2)] if halves else [(0, rows)]
        for r0, n in parts:
            form = self.choice(forms)
            start = [add(self.row0, C(r0)) if r0 else self.row0, self.col0(width)]
            full = [False, self.G == 1 and g.shape[1] == cols and form == "slice"]
            gop = Operand(g.name, form, start, [n, cols], full)
            if halves:
                top = Operand(tile.name, "slice", [C(r0), C(0)], [n, cols], [False, False])
            else:
                top = Operand(tile.name, "whole")
            if form == "corner" and top.form != "whole":
                top = Operand(tile.name, "slice", top.starts, top.extents, top.full)
            self.emit(Copy(top, gop) if to_global else Copy(gop, top))

    def guarded_parallel_store(self, tile: Buffer, dst: Buffer, width: int) -> None:
        """for i, j in T.Parallel(rows, cols): if in bounds: dst[...] = tile[i, j]."""
        rows, cols = tile.shape
        i, j = self.name("i"), self.name("j")
        gi, gj = add(self.row0, I(i)), add(self.col0(width), I(j))
        store = Store(dst.name, [gi, gj], self.cast(Load(tile.name, [I(i), I(j)], tile.dtype),
                                                     dst.dtype))
        cond = AND(lt(gi, self.M), lt(gj, C(dst.shape[1])))
        self.emit(Parallel([i, j], [rows, cols], [If(cond, [store])]))

    def output_rows(self, prefix: str, tile: Buffer, fill: str = "sentinel") -> Buffer:
        """A new output of M rows for the block's [bm, c] tiles, written
        through a copy or a guarded T.Parallel store."""
        cols = tile.shape[1]
        n = self.cols(cols)
        dtype = tile.dtype if self.rng.random() < 0.7 else self.dtype()
        out = self.param(prefix, [self.M_shape, n], dtype, role="out", fill=fill)
        scopes = {"fragment": "parallel_fragment", "shared": "parallel_shared"}
        if tile.scope in scopes and self.maybe(scopes[tile.scope], 0.25):
            self.guarded_parallel_store(tile, out, cols)
        else:
            self.store_tile(tile, out, cols)
        return out

    def output_vector(self, prefix: str, vec: Buffer) -> Buffer:
        """A new output for a block's row vector [bm]: Out[M] (G == 1) or
        Out[G, M], written by a copy or a guarded T.Parallel."""
        n = vec.shape[0]
        shape = [self.M_shape] if self.G == 1 else [self.G, self.M_shape]
        out = self.param(prefix, shape, "float32", role="out", fill="sentinel")
        forms = [f for f in ("slice", "corner") if self.on("copy_" + f)]
        if self.G == 1 and forms and self.rng.random() < 0.5:
            form = self.choice(forms)
            self.emit(Copy(Operand(vec.name), Operand(out.name, form, [self.row0], [n], [False])))
            return out
        i = self.name("i")
        gi = add(self.row0, I(i))
        idx = [gi] if self.G == 1 else [I("by"), gi]
        self.emit(Parallel([i], [n], [If(lt(gi, self.M), [
            Store(out.name, idx, self.cast(Load(vec.name, [I(i)], vec.dtype), "float32"))])]))
        return out

    def accumulate_output(self, prefix: str, tile: Buffer) -> Optional[Buffer]:
        """Every block adds `tile` into one output (T.atomic_add in a
        T.Parallel); None when atomic_global is off."""
        if not self.on("atomic_global"):
            return None
        shape = list(tile.shape)
        out = self.param(prefix, [self.G * shape[0]] + shape[1:], "float32", role="out",
                         fill="zeros")
        vs = [self.name("i") for _ in shape]
        idx = [I(v) for v in vs]
        gidx = [add(mul(I("by"), C(shape[0])), idx[0]) if self.G > 1 else idx[0]] + idx[1:]
        self.emit(Parallel(vs, shape, [AtomicAdd(out.name, gidx, self.cast(
            Load(tile.name, idx, tile.dtype), "float32"))]))
        return out

    # --- the program -------------------------------------------------------------

    def program(self) -> Program:
        head = [Let("tx", ThreadIdx())] if self.uses_tx else []
        return Program(name=f"difftest_{self.seed}", params=self.params, symbols=self.symbols,
                       grid=self.grid, threads=self.threads,
                       body=head + self.allocs + self.body,
                       features=["partial_tiles"] if self.partial else [])


def generate(seed: int, features: Set[str]) -> Program:
    """The program of `seed` under `features` (the same pair gives the same
    program)."""
    from . import motifs_thread, motifs_tile
    from .detect import detect
    # A motif may reach for a feature that is off (a T.Parallel store in a
    # motif about atomics, say): such a draw is dropped and the next one
    # taken, so a program never uses what is off.
    for attempt in range(50):
        g = Gen(seed if attempt == 0 else f"{seed}/{attempt}", features)
        g.seed = seed
        if g.on("parallel_oob") and g.rng.random() < 0.1:
            p = motifs_thread.parallel_oob(g)
        else:
            g.setup()
            motifs = [m for m in motifs_tile.MOTIFS + motifs_thread.MOTIFS if m.ready(g)]
            for motif in g.rng.sample(motifs, min(g.rng.choice([1, 2, 2, 3]), len(motifs))):
                motif.emit(g)
            p = g.program()
        used = detect(p)
        if used <= g.on_features:
            p.features = sorted(used)
            return p
    raise ValueError(f"difftest: no program for seed {seed} uses only the features "
                     f"{', '.join(sorted(features))}")

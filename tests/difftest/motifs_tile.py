"""Motifs made of tile ops: a random data flow over a block's tiles, a GEMM
over K tiles (pipelined, with gathered K tiles), and a reducer.

Each motif has its own tensors and tiles and appends its statements to the
kernel (generator.Gen). Tiles are always wholly written before they are
read (a clear precedes a partial copy), so the poison the interpreter fills
new tiles with never reaches an output.
"""

from __future__ import annotations

from typing import Any, Callable, List

from .generator import C, Gen, I, add, lt, mul
from .program import (Bin, Buffer, Const, Copy, FinalizeReducer, Fill, For, Gemm, If, Load,
                      Operand, Parallel, Reduce, Store)


class Motif:
    def __init__(self, name: str, needs: List[str], emit: Callable[[Gen], None],
                 any_of: List[str] = (), when: Callable[[Gen], bool] = lambda g: True):
        self.name, self.needs, self.emit, self.any_of = name, needs, emit, list(any_of)
        self.when = when  # what the kernel's shape must allow

    def ready(self, g: Gen) -> bool:
        return all(g.on(f) for f in self.needs) and \
            (not self.any_of or any(g.on(f) for f in self.any_of)) and self.when(g)


# --- the data flow ---------------------------------------------------------------

class Flow:
    """The tiles and vectors of one data-flow motif. `aligned` holds the
    tiles whose row i is the block's global row bx * bm + i (those go out
    by row); the rest go out through atomics."""

    def __init__(self, g: Gen):
        self.g = g
        self.tiles: List[Buffer] = []
        self.vecs: List[Buffer] = []
        self.aligned: set = set()

    def add_tile(self, b: Buffer, aligned: bool) -> None:
        self.tiles.append(b)
        if aligned:
            self.aligned.add(b.name)

    def parallel(self) -> bool:
        g = self.g
        scopes = [s for s, f in (("fragment", "parallel_fragment"), ("shared", "parallel_shared"))
                  if g.on(f)]
        if not scopes:
            return False
        src = g.choice(self.tiles)
        r, c = src.shape
        same = [t for t in self.tiles if t.shape == src.shape]
        in_place = [t for t in same if t.scope in scopes]
        if in_place and g.rng.random() < 0.35:
            dst = g.choice(in_place)
        else:
            scope = g.choice(scopes)
            dst = g.alloc("P", scope, [r, c], g.choice(["float32", src.dtype]))
            self.add_tile(dst, src.name in self.aligned)
        i, j = g.name("i"), g.name("j")
        leaves = [lambda t=t: Load(t.name, [I(i), I(j)], t.dtype) for t in same]
        leaves += [lambda v=v: Load(v.name, [I(i)], v.dtype) for v in self.vecs if v.shape[0] == r]
        leaves += [lambda v=v: Load(v.name, [I(j)], v.dtype) for v in self.vecs if v.shape[0] == c]
        leaves += [lambda: g.index_term(I(i), "float32"), lambda: g.index_term(I(j), "float32")]
        conds = [lambda: lt(I(i), I(j)),
                 lambda: Bin("==", Bin("%", I(i), C(2), "int32"), C(0), "bool"),
                 lambda: lt(add(g.row0, I(i)), g.M)]
        value = lambda: g.fexpr(leaves, dst.dtype, 2, conds)  # noqa: E731
        body: List[Any] = [Store(dst.name, [I(i), I(j)], value())]
        if g.rng.random() < 0.3:
            body = [If(g.choice(conds)(), body, [Store(dst.name, [I(i), I(j)], value())])]
        g.emit(Parallel([i, j], [r, c], body))
        return True

    def reduce(self, kinds: List[str] = None) -> bool:
        g = self.g
        if not g.on("reduce"):
            return False
        frags = [t for t in self.tiles if t.scope == "fragment"]
        if not frags:
            if not g.on("copy_whole"):
                return False
            frags = [self.copy_whole(g.choice(self.tiles), "fragment")]
        src = g.choice(frags)
        dim = g.choice([0, 1])
        n = src.shape[1 - dim]
        kind = g.choice(kinds or ["sum", "max", "min", "abssum", "absmax"])
        prior = [v for v in self.vecs if v.shape == [n] and v.scope == "fragment"]
        clear = g.rng.random() < 0.5 or not (prior or g.on("fill"))
        if clear:
            dst = g.alloc("R", "fragment", [n], "float32")
        elif prior and g.rng.random() < 0.5:
            dst = g.choice(prior)
        else:
            dst = g.alloc("R", "fragment", [n], "float32")
            g.emit(Fill(Operand(dst.name), Const(g.choice([0.0, -0.5, 0.5]), "float32")))
        g.emit(Reduce(kind, src.name, dst.name, dim, clear))
        if dst not in self.vecs:
            self.vecs.append(dst)
        if dim == 1 and src.name in self.aligned:
            self.aligned.add(dst.name)
        return True

    def copy_whole(self, src: Buffer, scope: str = None) -> Buffer:
        g = self.g
        scope = scope or g.choice(["fragment", "shared"])
        dst = g.alloc("Y", scope, list(src.shape), g.choice(["float32", g.dtype()]))
        g.emit(Copy(Operand(src.name), Operand(dst.name)))
        self.add_tile(dst, src.name in self.aligned)
        return dst

    def copy_part(self) -> bool:
        """A row band of a tile into a new, cleared tile (slice or corner
        operands on both sides)."""
        g = self.g
        forms = [f for f in ("slice", "corner") if g.on("copy_" + f)]
        if not forms or not g.on("fill"):
            return False
        src = g.choice(self.tiles)
        r, c = src.shape
        h = g.rng.randint(1, r)
        a, b = g.rng.randint(0, r - h), g.rng.randint(0, r - h)
        dst = g.alloc("Z", g.choice(["fragment", "shared"]), [r, c], g.choice(["float32",
                                                                              src.dtype]))
        g.emit(Fill(Operand(dst.name), Const(0, dst.dtype), as_clear=True))
        form = g.choice(forms)
        so = Operand(src.name, "slice", [C(a), C(0)], [h, c], [False, True])
        do = Operand(dst.name, "slice", [C(b), C(0)], [h, c], [False, True])
        if form == "corner":
            so = Operand(src.name, "corner", [C(a), C(0)])
        g.emit(Copy(so, do))
        self.add_tile(dst, a == b and src.name in self.aligned)
        return True

    def fill_band(self) -> bool:
        g = self.g
        if not g.on("fill"):
            return False
        t = g.choice(self.tiles)
        r, c = t.shape
        h = g.rng.randint(1, r)
        a = g.rng.randint(0, r - h)
        region = Operand(t.name, "slice", [C(a), C(0)], [h, c], [False, True])
        if g.rng.random() < 0.3:
            g.emit(Fill(region, Const(0, t.dtype), as_clear=True))
        else:
            g.emit(Fill(region, Const(g.choice([0.5, -1.0, 2.0]), t.dtype)))
        return True

    def gemm(self) -> bool:
        g = self.g
        if not g.on("gemm"):
            return False
        scopes = ["shared"] + (["fragment"] if g.on("gemm_fragment_a") else [])
        cands = [t for t in self.tiles if t.scope in scopes and len(t.shape) == 2
                 and all(d % 16 == 0 for d in t.shape)]
        if not cands:
            return False
        a = g.choice(cands)
        trans_a = a.scope == "shared" and g.maybe("gemm_transpose", 0.3)
        r, c = a.shape
        m, k = (c, r) if trans_a else (r, c)
        n = g.choice([16, 32])
        trans_b = g.maybe("gemm_transpose", 0.4)
        bshape = [n, k] if trans_b else [k, n]
        bs = g.alloc("B", "shared", bshape, a.dtype)
        if g.G > 1 and g.on("copy_corner"):
            gshape = [g.G * n, k] if trans_b else [k, g.G * n]
            w = g.param("W", gshape, a.dtype)
            start = [mul(I("by"), C(n)), C(0)] if trans_b else [C(0), mul(I("by"), C(n))]
            g.emit(Copy(Operand(w.name, "corner", start), Operand(bs.name)))
        else:
            w = g.param("W", bshape, a.dtype)
            g.emit(Copy(Operand(w.name), Operand(bs.name)))
        acc = g.alloc("Acc", "fragment", [m, n], "float32")
        how = g.choice(["clear_accum", "clear", "fill"] if g.on("fill") else ["clear_accum"])
        if how != "clear_accum":
            g.emit(Fill(Operand(acc.name), Const(0 if how == "clear" else 0.25, "float32"),
                        as_clear=how == "clear"))
        g.emit(Gemm(a.name, bs.name, acc.name, trans_a, trans_b, how == "clear_accum"))
        self.add_tile(acc, not trans_a and a.name in self.aligned)
        return True


def tile_flow(g: Gen) -> None:
    dt = g.dtype()
    width = g.choice([16, 32, 48, 64])
    reduce_nan = g.on("nan", "reduce") and g.rng.random() < 0.5
    g.nan = reduce_nan
    f = Flow(g)
    for _ in range(g.choice([1, 1, 2])):
        x = g.input_rows("X", g.cols(width), dt)
        tile = g.alloc("T", g.choice(["shared", "fragment"]), [g.bm, width],
                       g.choice([dt, "float32"]))
        g.load_tile(x, tile, width)
        f.add_tile(tile, True)
    if reduce_nan:
        f.reduce(["max", "min"])
    elif g.rng.random() < 0.4:
        f.reduce()
    steps = [f.parallel, f.reduce, f.gemm, f.fill_band, f.copy_part,
             lambda: g.on("copy_whole") and bool(f.copy_whole(g.choice(f.tiles)))]
    for _ in range(g.rng.randint(1, 4)):
        for step in g.rng.sample(steps, len(steps)):
            if step():
                break
    outputs = f.tiles[-2:] if g.rng.random() < 0.4 else f.tiles[-1:]
    for t in outputs:
        if t.name in f.aligned and t.shape[0] == g.bm:
            g.output_rows("O", t)
        else:
            g.accumulate_output("O", t)
    for v in f.vecs[-2:]:
        if v.name in f.aligned:
            g.output_vector("V", v)
        else:
            g.accumulate_output("V", v)
    if not any(q.role == "out" for q in g.params):
        g.output_rows("O", f.tiles[0])
    g.nan = False


# --- GEMM over K tiles -------------------------------------------------------------

def k_loop(g: Gen) -> None:
    dt = g.dtype()
    bk, bn = g.choice([16, 32]), g.choice([16, 32, 64])
    ks = [g.extent(bk, 4) for _ in range(g.checks)]
    if "K" in g.symbols:
        ks = g.symbols["K"]
        K, K_shape = I("K"), "K"
    elif g.symbolic and g.rng.random() < 0.5:
        g.symbols["K"] = ks
        K, K_shape = I("K"), "K"
    else:
        ks = [ks[0]] * g.checks
        K, K_shape = C(ks[0]), ks[0]
    trans_a = g.maybe("gemm_transpose", 0.25)
    trans_b = g.maybe("gemm_transpose", 0.3)
    ncols = g.cols(bn)
    a = g.param("A", [K_shape, g.M_shape] if trans_a else [g.M_shape, K_shape], dt)
    b = g.param("B", [ncols, K_shape] if trans_b else [K_shape, ncols], dt)
    a_s = g.alloc("A_s", "shared", [bk, g.bm] if trans_a else [g.bm, bk], dt)
    b_s = g.alloc("B_s", "shared", [bn, bk] if trans_b else [bk, bn], dt)
    acc = g.alloc("C_f", "fragment", [g.bm, bn], "float32")
    mode = g.choice(["plain"] + [m for m, f in (("gather", "pipelined_gather"),
                                                 ("dependent", "pipelined_dependent"))
                                 if g.on(f)])
    k = g.name("k")
    body: List[Any] = []
    if mode == "plain":
        extent: Any = Bin("ceildiv", K, C(bk), "int32")
        kb: Any = I(k)
    else:
        nkb = -(-min(ks) // bk)
        idx = g.param("Idx", [g.rng.randint(2, 6)], "int32", fill=f"index:0:{nkb + 1}")
        extent = C(idx.shape[0])
        kb = Load(idx.name, [I(k)], "int32")
        if mode == "dependent":
            if g.rng.random() < 0.5:
                blk = g.alloc("blk", "local", [1], "int32")
                body.append(Store(blk.name, [C(0)], kb))
                kb = Load(blk.name, [C(0)], "int32")
            else:
                blk = g.alloc("kb", "var", [1], "int32", init=0)
                body.append(Store(blk.name, [], kb))
                kb = Load(blk.name, [], "int32")
    k0 = mul(kb, C(bk))
    forms = [f for f in ("corner", "slice") if g.on("copy_" + f)] or ["corner"]
    for src, tile, start in ((a, a_s, [k0, g.row0] if trans_a else [g.row0, k0]),
                             (b, b_s, [g.col0(bn), k0] if trans_b else [k0, g.col0(bn)])):
        form = g.choice(forms)
        body.append(Copy(Operand(src.name, form, start, list(tile.shape), [False, False]),
                         Operand(tile.name)))
    if g.maybe("parallel_shared", 0.3):
        i, j = g.name("i"), g.name("j")
        body.append(Parallel([i, j], list(a_s.shape), [Store(a_s.name, [I(i), I(j)], Bin(
            "*", Load(a_s.name, [I(i), I(j)], dt), Const(0.5, dt), dt))]))
    a_op = a_s
    if not trans_a and g.maybe("gemm_fragment_a", 0.3):
        a_op = g.alloc("A_f", "fragment", [g.bm, bk], dt)
        body.append(Copy(Operand(a_s.name), Operand(a_op.name)))
    body.append(Gemm(a_op.name, b_s.name, acc.name, trans_a, trans_b))
    g.emit(Fill(Operand(acc.name), Const(0, "float32"), as_clear=True))
    pipelined = mode != "plain" or g.rng.random() < 0.6
    g.emit(For(k, extent, body, "pipelined" if pipelined else "serial",
               g.choice([2, 3]) if pipelined else 0))
    if g.maybe("parallel_fragment", 0.4):
        i, j = g.name("i"), g.name("j")
        g.emit(Parallel([i, j], [g.bm, bn], [Store(acc.name, [I(i), I(j)], g.fexpr(
            [lambda: Load(acc.name, [I(i), I(j)], "float32")], "float32", 1))]))
    g.output_rows("O", acc)


# --- T.alloc_reducer ---------------------------------------------------------------

def reducer(g: Gen) -> None:
    dt = g.dtype()
    width = g.choice([16, 32, 64])
    x = g.input_rows("X", g.cols(width), dt)
    tile = g.alloc("T", g.choice(["shared", "fragment"]), [g.bm, width], dt)
    g.load_tile(x, tile, width)
    op = g.choice(["sum", "max", "min"])
    over_rows = g.on("atomic_global") and g.rng.random() < 0.5  # red[j] over i
    n = width if over_rows else g.bm
    red = g.alloc("red", "reducer", [n], "float32", reduce_op=op)
    g.emit(Fill(Operand(red.name), Const({"sum": 0.0, "max": -4.0, "min": 4.0}[op],
                                         "float32")))
    i, j = g.name("i"), g.name("j")
    at = [I(j)] if over_rows else [I(i)]
    value = g.fexpr([lambda: Load(tile.name, [I(i), I(j)], dt),
                     lambda: g.index_term(I(j), "float32")], "float32", 1)
    red_op = {"sum": "+", "max": "max", "min": "min"}[op]
    g.emit(Parallel([i, j], [g.bm, width], [
        Store(red.name, at, Bin(red_op, Load(red.name, at, "float32"), value, "float32"))]))
    g.emit(FinalizeReducer(red.name))
    if over_rows:
        g.accumulate_output("V", red)
    else:
        g.output_vector("V", red)


MOTIFS = [
    Motif("tile_flow", [], tile_flow),
    Motif("k_loop", ["gemm", "k_loop", "fill"], k_loop),
    Motif("reducer", ["reducer"], reducer),
]

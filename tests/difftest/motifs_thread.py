"""Motifs of per-thread code: statements outside tile ops, which TileLang
runs on every thread of the block with its own T.get_thread_binding() and
its own T.alloc_local / T.alloc_var values; tile ops under a condition on
the thread index; and one invalid program (a T.Parallel past its fragment).

Race freedom, as interpret.py checks it: within one top-level statement a
shared or global element is touched by one thread only, unless every touch
is a read or every touch is an atomic add. Data crosses threads only from
one top-level statement to a later one (TileLang puts a barrier between).
"""

from __future__ import annotations

from typing import Any, List

from .generator import AND, C, Gen, I, add, lt, mul
from .motifs_tile import Motif
from .program import (AtomicAdd, Bin, Const, Copy, Fill, For, If, Let, Load, Operand, Parallel,
                      Program, Store)


def _div(a, b): return Bin("//", a, C(b), "int32")
def _mod(a, b): return Bin("%", a, C(b), "int32")


def thread_cond(g: Gen) -> Any:
    """A condition on the thread index."""
    tx = g.tx()
    t = g.threads
    return g.choice([
        lt(tx, C(g.rng.randint(1, t - 1))),
        Bin("==", _mod(tx, 2), C(0), "bool"),
        Bin("==", _mod(_div(tx, 32), 2), C(1), "bool") if t > 32 else lt(tx, C(t // 2)),
        Bin(">=", tx, C(t // 2), "bool"),
    ])


def elements(g: Gen, n: int, body_of) -> For:
    """The block's threads walk elements 0..n-1 of a tile, thread tx taking
    e = r * threads + tx in round r: `body_of(e)` is one element's code."""
    t = g.threads
    r, e = g.name("r"), g.name("e")
    inner = body_of(I(e))
    if n % t:
        inner = [If(lt(I(e), C(n)), inner)]
    return For(r, C(-(-n // t)), [Let(e, add(mul(I(r), C(t)), g.tx()))] + inner)


def _loaded_tile(g: Gen, width: int, dt: str):
    x = g.input_rows("X", g.cols(width), dt)
    tile = g.alloc("S", "shared", [g.bm, width], dt)
    g.load_tile(x, tile, width)
    return x, tile


def thread_map(g: Gen) -> None:
    """D[row, col] = f(S[row, col], tx) per thread, in row or column order;
    then maybe E = a shifted read of D (threads read each other's D), then
    out through a tile copy or per-thread global stores."""
    dt = g.dtype()
    width = g.choice([8, 16, 32])
    x, s = _loaded_tile(g, width, dt)
    d = g.alloc("D", "shared", [g.bm, width], g.choice(["float32", dt]))
    n = g.bm * width
    by_rows = g.rng.random() < 0.5

    def at(e):
        return ([_div(e, width), _mod(e, width)] if by_rows else
                [_mod(e, g.bm), _div(e, g.bm)])

    def one(e):
        idx = at(e)
        leaves = [lambda: Load(s.name, idx, dt), lambda: g.index_term(g.tx(), "float32"),
                  lambda: g.index_term(idx[0], "float32")]
        st = [Store(d.name, idx, g.fexpr(leaves, d.dtype, 2))]
        if g.maybe("thread_cond", 0.5):
            st = [If(thread_cond(g), st, [Store(d.name, idx, g.fexpr(leaves, d.dtype, 1))])]
        return st

    g.emit(elements(g, n, one))
    out_tile = d
    if g.rng.random() < 0.5:
        shift = g.rng.randint(1, width - 1) if width > 1 else 0
        e_t = g.alloc("E", "shared", [g.bm, width], d.dtype)

        def shifted(e):
            row, col = _div(e, width), _mod(e, width)
            src = Load(d.name, [row, _mod(add(col, C(shift)), width)], d.dtype)
            return [Store(e_t.name, [row, col], Bin("*", src, Const(2.0, d.dtype), d.dtype))]
        g.emit(elements(g, n, shifted))
        out_tile = e_t
    if g.rng.random() < 0.5:
        g.output_rows("O", out_tile)
        return
    out = g.param("O", [g.M_shape, g.cols(width)], out_tile.dtype, role="out", fill="sentinel")

    def direct(e):
        row, col = _div(e, width), _mod(e, width)
        grow, gcol = add(g.row0, row), add(g.col0(width), col)
        return [If(AND(lt(grow, g.M), lt(gcol, C(out.shape[1]))), [
            Store(out.name, [grow, gcol], Load(out_tile.name, [row, col], out_tile.dtype))])]
    g.emit(elements(g, n, direct))


def thread_rows(g: Gen) -> None:
    """One thread per row: a T.alloc_var accumulator over the row (through
    a T.alloc_local copy of it, sometimes), into a shared vector or
    straight into the output."""
    dt = g.dtype()
    width = g.choice([8, 16, 32])
    x, s = _loaded_tile(g, width, dt)
    acc = g.alloc("acc", "var", [1], "float32", init=0.0)
    loc = g.alloc("loc", "local", [width], "float32") if g.rng.random() < 0.5 else None
    t = g.threads
    rr, row = g.name("rr"), g.name("row")
    j = g.name("j")
    body: List[Any] = [Store(acc.name, [], Const(0.0, "float32"))]
    if loc is not None:
        body.append(For(j, C(width), [Store(loc.name, [I(j)], Bin(
            "*", g.cast(Load(s.name, [I(row), I(j)], dt), "float32"), Const(0.5, "float32"),
            "float32"))]))
        term = Bin("*", Load(loc.name, [Bin("-", C(width - 1), I(j), "int32")], "float32"),
                   g.cast(Load(s.name, [I(row), I(j)], dt), "float32"), "float32")
    else:
        term = g.fexpr([lambda: Load(s.name, [I(row), I(j)], dt),
                        lambda: g.index_term(g.tx(), "float32")], "float32", 1)
    update = [Store(acc.name, [], Bin("+", Load(acc.name, [], "float32"), term, "float32"))]
    if g.maybe("thread_cond", 0.4):
        update = [If(thread_cond(g), update, [Store(acc.name, [], Bin(
            "-", Load(acc.name, [], "float32"), term, "float32"))])]
    body.append(For(j, C(width), update))
    to_global = g.on("thread_store") and g.rng.random() < 0.4
    if to_global:
        shape = [g.M_shape] if g.G == 1 else [g.G, g.M_shape]
        out = g.param("V", shape, "float32", role="out", fill="sentinel")
        grow = add(g.row0, I(row))
        body.append(If(lt(grow, g.M), [Store(out.name, [grow] if g.G == 1 else [I("by"), grow],
                                             Load(acc.name, [], "float32"))]))
    else:
        v = g.alloc("rowv", "shared", [g.bm], "float32")
        body.append(Store(v.name, [I(row)], Load(acc.name, [], "float32")))
    if g.bm % t:
        body = [If(lt(I(row), C(g.bm)), body)]
    g.emit(For(rr, C(-(-g.bm // t)), [Let(row, add(mul(I(rr), C(t)), g.tx()))] + body))
    if not to_global:
        g.output_vector("V", v)


def atomic_shared(g: Gen) -> None:
    """Every thread adds its elements into a small shared histogram-like
    vector H[k] with T.atomic_add; H goes out through a tile op, per-thread
    global atomics, or a T.Parallel spread over the block's rows."""
    dt = g.dtype()
    width = g.choice([8, 16, 32])
    x, s = _loaded_tile(g, width, dt)
    k = g.choice([4, 8, 16])
    h = g.alloc("H", "shared", [k], "float32")
    if g.on("thread_store") and g.rng.random() < 0.5:
        tx = g.tx()
        g.emit(If(lt(tx, C(k)), [Store(h.name, [tx], Const(0.0, "float32"))]))
    else:
        g.emit(Fill(Operand(h.name), Const(0, "float32"), as_clear=True))
    n = g.bm * width
    key = g.choice(["col", "row", "flat"])

    def one(e):
        row, col = _div(e, width), _mod(e, width)
        slot = {"col": _mod(col, k), "row": _mod(row, k), "flat": _mod(e, k)}[key]
        return [AtomicAdd(h.name, [slot], g.cast(Load(s.name, [row, col], dt), "float32"))]
    g.emit(elements(g, n, one))
    how = g.choice(["spread"] + (["thread_global"] if g.on("atomic_thread_global") else []) +
                   (["tile_global"] if g.on("atomic_global") else []))
    if how == "spread":
        v = g.alloc("hv", "fragment", [g.bm], "float32")
        i = g.name("i")
        g.emit(Parallel([i], [g.bm], [Store(v.name, [I(i)], Bin(
            "*", Load(h.name, [_mod(I(i), k)], "float32"), g.index_term(I(i), "float32"),
            "float32"))]))
        g.output_vector("V", v)
    elif how == "tile_global":
        g.accumulate_output("V", h)
    else:
        out = g.param("V", [g.G * k], "float32", role="out", fill="zeros")
        tx = g.tx()
        slot = add(mul(I("by"), C(k)), tx) if g.G > 1 else tx
        g.emit(If(lt(tx, C(k)), [AtomicAdd(out.name, [slot], Load(h.name, [tx], "float32"))]))


def thread_global(g: Gen) -> None:
    """Per-thread code straight on global tensors: each thread maps its
    elements of the block's tile, guarded by the tensor's bounds; maybe
    also atomically adds them into a small global vector."""
    dt = g.dtype()
    width = g.choice([8, 16, 32])
    ncols = g.cols(width)
    x = g.input_rows("X", ncols, dt)
    out = g.param("O", [g.M_shape, ncols], g.choice(["float32", dt]), role="out",
                  fill="sentinel")
    k = g.choice([4, 8])
    acc = g.param("Acc", [k], "float32", role="out", fill="zeros") \
        if g.maybe("atomic_thread_global", 0.4) else None

    def one(e):
        row, col = add(g.row0, _div(e, width)), add(g.col0(width), _mod(e, width))
        leaves = [lambda: Load(x.name, [row, col], dt), lambda: g.index_term(g.tx(), "float32")]
        st: List[Any] = [Store(out.name, [row, col], g.fexpr(leaves, out.dtype, 2))]
        if g.maybe("thread_cond", 0.5):
            st = [If(thread_cond(g), st, [Store(out.name, [row, col],
                                                g.fexpr(leaves, out.dtype, 1))])]
        if acc is not None:
            st.append(AtomicAdd(acc.name, [_mod(col, k)], g.cast(Load(x.name, [row, col], dt),
                                                                  "float32")))
        return [If(AND(lt(row, g.M), lt(col, C(ncols))), st)]
    g.emit(elements(g, g.bm * width, one))


def warp_specialised(g: Gen) -> None:
    """if tx < c: T.copy(X tile, A_s) else: T.copy(Y tile, B_s), then a
    tile op over both: each branch's copy runs on its threads only."""
    dt = g.dtype()
    width = g.choice([16, 32])
    xs = [g.input_rows("X", g.cols(width), dt) for _ in range(2)]
    a_s = g.alloc("A_s", "shared", [g.bm, width], dt)
    b_s = g.alloc("B_s", "shared", [g.bm, width], dt)
    # Whole warps on each side (TileLang's and the CUDA backend's unit of a
    # thread range): the motif needs a block of two warps or more.
    c = g.choice([32, g.threads // 2])
    tx = g.tx()
    first = g.capture(lambda: g.load_tile(xs[0], a_s, width))
    second = g.capture(lambda: g.load_tile(xs[1], b_s, width))
    if g.rng.random() < 0.5:
        g.emit(If(lt(tx, C(c)), first, second))
    else:
        g.emit(If(Bin(">=", tx, C(c), "bool"), second, first))
    f = g.alloc("F", "fragment", [g.bm, width], "float32")
    i, j = g.name("i"), g.name("j")
    both = [lambda: Load(a_s.name, [I(i), I(j)], dt), lambda: Load(b_s.name, [I(i), I(j)], dt)]
    value = Bin("+", g.fexpr(both, "float32", 2), Bin(
        "*", g.cast(Load(b_s.name, [I(i), I(j)], dt), "float32"), g.cast(
            Load(a_s.name, [I(i), I(j)], dt), "float32"), "float32"), "float32")
    g.emit(Parallel([i, j], [g.bm, width], [Store(f.name, [I(i), I(j)], value)]))
    g.output_rows("O", f)


def parallel_oob(g: Gen) -> Program:
    """An invalid program: for i in T.Parallel(n + extra) stores f[i] of a
    fragment of n. tilejit must reject it when it compiles."""
    n = g.choice([16, 32])
    extra = g.choice([1, 8, n])
    g.threads, g.grid = 128, [C(1)]
    x = g.param("X", [n + extra], "float32")
    o = g.param("O", [n], "float32", role="out", fill="sentinel")
    f = g.alloc("frag", "fragment", [n], "float32")
    i = g.name("i")
    g.emit(Parallel([i], [n + extra], [Store(f.name, [I(i)], Load(x.name, [I(i)], "float32"))]),
           Copy(Operand(f.name), Operand(o.name)))
    p = g.program()
    p.expect_error = f.name
    return p


MOTIFS = [
    Motif("thread_map", ["thread_store"], thread_map),
    Motif("thread_rows", ["thread_var"], thread_rows),
    Motif("atomic_shared", ["atomic_shared"], atomic_shared),
    Motif("thread_global", ["thread_store"], thread_global),
    Motif("warp_specialised", ["thread_cond_tile", "parallel_fragment"], warp_specialised,
          when=lambda g: g.threads >= 64),
]

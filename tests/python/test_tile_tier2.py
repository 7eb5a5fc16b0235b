"""Tier 2 of the tile language on the CPU, each construct end to end
against numpy, and each new error by kind, exact message and span:
@T.macro helpers with T.SharedBuffer / T.FragmentBuffer / scalar
parameters, reductions with clear=False, fragment slices and
fragment-to-fragment cast copies, T.if_then_else and -T.infinity inside
T.Parallel, T.use_swizzle, T.annotate_layout, T.print, and data-dependent
gathers whose skip (-1) and sentinel (one past the end) indices are never
dereferenced."""

import ctypes
import inspect
import mmap

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import raises_exact

F = __file__


def at(line, col):
    return f"{F}:{line}:{col}"


def body_line(fn, offset):
    return inspect.getsourcelines(fn)[1] + offset


def compile_cpu(f, **options):
    options.setdefault("target", "cpu")
    return tilejit.compile(f, **options)


# --- @T.macro with buffer and scalar parameters ------------------------------

@T.macro
def load_scaled(A: T.Tensor((16, 8), "float32"), A_s: T.SharedBuffer([4, 8], "float32"),
                acc: T.FragmentBuffer([4, 8], "float32"), row0: T.int32, factor: T.float32):
    T.copy(A[row0:row0 + 4, :], A_s)
    for i, j in T.Parallel(4, 8):
        acc[i, j] = A_s[i, j] * factor


@T.macro
def add_row_max(acc: T.FragmentBuffer([4, 8], "float32"), m: T.FragmentBuffer([4], "float32")):
    T.reduce_max(acc, m, dim=1)
    for i, j in T.Parallel(4, 8):
        acc[i, j] += m[i]


def macro_kernel():
    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(4) as bx:
            A_s = T.alloc_shared([4, 8], "float32")
            acc = T.alloc_fragment([4, 8], "float32")
            m = T.alloc_fragment([4], "float32")
            load_scaled(A, A_s, acc, bx * 4, 3.0)
            add_row_max(acc, m)
            T.copy(acc, B[bx * 4, 0])
    return main


def test_macros_with_shared_fragment_and_scalar_parameters_are_inlined():
    f = macro_kernel()
    # Inlined: the helpers' statements are the kernel's own.
    script = f.script()
    assert "copy(A[bx * 4:bx * 4 + 4, 0:8], A_s[0:4, 0:8])" in script
    assert "A_s[i, j] * 3.0" in script
    k = compile_cpu(f, out_idx=[1])
    a = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    scaled = a * 3
    np.testing.assert_allclose(k(a), scaled + scaled.max(axis=1, keepdims=True), rtol=1e-6)


def test_macro_parameter_annotations_are_checked_at_the_call():
    def make(arg):
        @T.prim_func
        def main(A: T.Tensor((16, 8), "float32")):
            with T.Kernel(1) as bx:
                A_s = T.alloc_shared([4, 8], "float32")
                F16 = T.alloc_fragment([4, 8], "float16")
                acc = T.alloc_fragment([4, 8], "float32")
                m = T.alloc_fragment([4], "float32")
                add_row_max({"shared": A_s, "f16": F16, "int": 3, "rank": acc}[arg],
                            acc if arg == "rank" else m)
        return main

    line = body_line(make, 8)
    want = "T.macro add_row_max: parameter acc is a T.FragmentBuffer([4, 8], 'float32')"
    with raises_exact(TypeError, f"{at(line, 17)}: {want}; got the shared buffer A_s"):
        make("shared")
    with raises_exact(TypeError, f"{at(line, 17)}: {want}; got F16 of dtype float16"):
        make("f16")
    with raises_exact(TypeError, f"{at(line, 17)}: {want}; got int 3"):
        make("int")
    want_m = "T.macro add_row_max: parameter m is a T.FragmentBuffer([4], 'float32')"
    with raises_exact(TypeError, f"{at(line, 17)}: {want_m}; got acc with 2 dimensions"):
        make("rank")


# --- reductions with clear=False ---------------------------------------------

REDUCTIONS = [("max", lambda x, axis, init: np.maximum(x.max(axis=axis), init)),
              ("min", lambda x, axis, init: np.minimum(x.min(axis=axis), init)),
              ("sum", lambda x, axis, init: x.sum(axis=axis) + init),
              ("abssum", lambda x, axis, init: np.abs(x).sum(axis=axis) + init),
              ("absmax", lambda x, axis, init: np.maximum(np.abs(x).max(axis=axis), init))]


@pytest.mark.parametrize("dim", [0, 1])
def test_reductions_with_clear_false_fold_in_the_destination(dim):
    n_out = 6 if dim == 1 else 5
    kinds = len(REDUCTIONS)

    @T.prim_func
    def main(A: T.Tensor((6, 5), "float32"), Init: T.Tensor((kinds, n_out), "float32"),
             Out: T.Tensor((kinds, n_out), "float32")):
        with T.Kernel(1):
            a = T.alloc_fragment([6, 5], "float32")
            r = T.alloc_fragment([kinds, n_out], "float32")
            T.copy(A, a)
            T.copy(Init, r)
            for row, (kind, _) in enumerate(REDUCTIONS):  # unrolled in Python
                getattr(T, f"reduce_{kind}")(a, r[row, :], dim=dim, clear=False)
            T.copy(r, Out)

    k = compile_cpu(main, out_idx=[2])
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    init = (rng.standard_normal((kinds, n_out)) * 2).astype(np.float32)
    out = k(a, init)
    for row, (kind, fn) in enumerate(REDUCTIONS):
        np.testing.assert_allclose(out[row], fn(a, dim, init[row]), rtol=1e-6, atol=1e-5,
                                   err_msg=kind)


# --- fragment slices and fragment-to-fragment casting copies -----------------

@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_fragment_slices_and_casting_copies(low):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), Row: T.Tensor((8,), "float32"),
             Col: T.Tensor((4,), "float32"), Sums: T.Tensor((2,), "float32"),
             Low: T.Tensor((4, 8), low)):
        with T.Kernel(1):
            acc_s = T.alloc_fragment([4, 8], "float32")
            acc_s_cast = T.alloc_fragment([4, 8], low)
            row = T.alloc_fragment([8], "float32")
            col = T.alloc_fragment([4], "float32")
            sums = T.alloc_fragment([2], "float32")
            T.copy(A, acc_s)
            T.copy(acc_s[2, :], row)            # a row of a fragment
            T.copy(acc_s[:, 5], col)            # a column (element by element)
            T.reduce_sum(acc_s[1:3, :], sums, dim=1)  # a band of rows
            T.copy(acc_s, acc_s_cast)           # f32 -> f16 / bf16
            T.copy(row, Row)
            T.copy(col, Col)
            T.copy(sums, Sums)
            T.copy(acc_s_cast, Low)

    k = compile_cpu(main, out_idx=[1, 2, 3, 4])
    a = (np.arange(32, dtype=np.float32).reshape(4, 8) / 7 - 2).astype(np.float32)
    row, col, sums, lowered = k(a)
    np.testing.assert_array_equal(row, a[2])
    np.testing.assert_array_equal(col, a[:, 5])
    np.testing.assert_allclose(sums, a[1:3].sum(axis=1), rtol=1e-6)
    if low == "float16":
        np.testing.assert_array_equal(lowered, a.astype(np.float16))
    else:
        # bfloat16 comes back as its bits (uint16) without ml_dtypes; compare values.
        got = np.asarray(lowered)
        bits = got.view(np.uint16) if got.dtype.itemsize == 2 else got
        values = (bits.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(values, a, rtol=2 ** -8)


# --- T.if_then_else and -T.infinity inside T.Parallel ------------------------

def test_if_then_else_and_negative_infinity_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32"),
             M: T.Tensor((4,), "float32")):
        with T.Kernel(1):
            s = T.alloc_fragment([4, 8], "float32")
            m = T.alloc_fragment([4], "float32")
            T.copy(A, s)
            for i, j in T.Parallel(4, 8):
                s[i, j] = T.if_then_else(j <= i, s[i, j], -T.infinity(s.dtype))
            T.reduce_max(s, m, dim=1)
            T.copy(s, B)
            T.copy(m, M)

    k = compile_cpu(main, out_idx=[1, 2])
    a = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    b, m = k(a)
    want = np.where(np.tril(np.ones((4, 8), dtype=bool)), a, -np.inf)
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(m, want.max(axis=1))


# --- T.use_swizzle and T.annotate_layout -------------------------------------

def test_use_swizzle_and_swizzled_layouts_do_not_change_results():
    @T.prim_func
    def main(A: T.Tensor((40, 24), "float32"), B: T.Tensor((40, 24), "float32")):
        with T.Kernel(T.ceildiv(24, 8), T.ceildiv(40, 16)) as (bx, by):
            A_s = T.alloc_shared([16, 8], "float32")
            acc = T.alloc_fragment([16, 8], "float32")
            T.use_swizzle(panel_size=10, enable=True)
            T.annotate_layout({A_s: tilelang.layout.make_swizzled_layout(A_s),
                               acc: "row_major"})
            T.copy(A[by * 16, bx * 8], A_s)
            for i, j in T.Parallel(16, 8):
                acc[i, j] = A_s[i, j] * 2
            T.copy(acc, B[by * 16, bx * 8])

    k = compile_cpu(main, out_idx=[1])
    a = np.random.default_rng(3).standard_normal((40, 24)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a * 2)


def test_annotate_layout_errors_name_the_buffer():
    def make(what):
        @T.prim_func
        def main(A: T.Tensor((16, 8), "float32")):
            with T.Kernel(1):
                A_s = T.alloc_shared([16, 8], "float32")
                acc = T.alloc_fragment([16, 8], "float32")
                layouts = {
                    "index map": {A_s: T.Layout([16, 8], lambda i, j: (j, i))},
                    "fragment": {acc: T.Fragment([16, 8], forward_thread=lambda i, j: i)},
                    "global": {A: "row_major"},
                    "swizzled fragment": {acc: tilelang.layout.make_swizzled_layout(acc)},
                    "unknown": {A_s: "col_major"},
                    "not a dict": [A_s],
                }
                T.annotate_layout(layouts[what])
        return main

    line = body_line(make, 14)
    cases = [
        ("index map", ValueError, "T.annotate_layout: buffer A_s: T.Layout (an index map) is not "
         "a layout tilejit's targets have; they lay tiles out row_major (make_swizzled_layout "
         "is accepted for shared buffers)"),
        ("fragment", ValueError, "T.annotate_layout: buffer acc: T.Fragment (an index map) is "
         "not a layout tilejit's targets have; they lay tiles out row_major "
         "(make_swizzled_layout is accepted for shared buffers)"),
        ("global", ValueError, "T.annotate_layout: A is a global tensor; a tensor takes a "
         "T.Layout (its storage permuted), got str 'row_major'"),
        ("swizzled fragment", ValueError, "T.annotate_layout: acc is a fragment buffer; a "
         "swizzled layout is for shared buffers"),
        ("unknown", TypeError, "T.annotate_layout: buffer A_s: expected a layout "
         "(make_swizzled_layout, 'row_major', T.Layout), got str 'col_major'"),
        ("not a dict", TypeError, "T.annotate_layout: expected a dict of buffer -> layout, "
         "got list"),
    ]
    for what, kind, message in cases:
        with raises_exact(kind, f"{at(line, 17)}: {message}"):
            make(what)


def test_annotate_layout_outside_a_kernel():
    def make():
        @T.prim_func
        def main(A: T.Tensor((16, 8), "float32")):
            T.annotate_layout({})
            with T.Kernel(1):
                A[0, 0] = 1.0
    with raises_exact(ValueError, f"{at(body_line(make, 3), 13)}: T.annotate_layout is only "
                                  f"valid inside a T.Kernel block"):
        make()


# --- several T.Kernels in one prim_func --------------------------------------

def test_kernels_run_in_order_and_share_their_workspaces():
    # The first kernel's blocks fill W (declared inside it: visible to every
    # kernel); each block of the second, with its own grid and threads, sums
    # a reversed block of it, so it starts after the first ends.
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((T.ceildiv(n, 8),), "float32")):
        with T.Kernel(T.ceildiv(n, 8), threads=1) as bx:
            W = T.alloc_global((T.ceildiv(n, 8) * 8,), "float32")
            s = T.alloc_shared((8,), "float32")
            T.copy(X[bx * 8], s)  # zeros past n
            T.copy(s, W[bx * 8])
        with T.Kernel(T.ceildiv(n, 8), 1, threads=4) as (by, _):
            t = T.alloc_fragment((8,), "float32")
            r = T.alloc_fragment((1,), "float32")
            T.copy(W[(T.ceildiv(n, 8) - 1 - by) * 8], t)
            T.reduce_sum(t, r, dim=0)
            Y[by] = r[0]

    k = compile_cpu(main, out_idx=[1])
    assert main.script().count("kernel(") == 2
    for size in (1, 8, 61):
        x = np.arange(1, size + 1, dtype=np.float32)
        blocks = -(-size // 8)
        assert [w["name"] for w in k.workspace_layout(x)] == ["W"]
        assert k.workspace_bytes(x) == (blocks * 32 + 255) // 256 * 256
        padded = np.concatenate([x, np.zeros(blocks * 8 - size, np.float32)])
        np.testing.assert_array_equal(k(x), padded.reshape(blocks, 8).sum(axis=1)[::-1])


# --- T.print on the CPU ------------------------------------------------------

def test_print_of_a_value_and_a_buffer_on_the_cpu(capfd):
    @T.prim_func
    def main(A: T.Tensor((2, 3), "float32")):
        with T.Kernel(2) as bx:
            f = T.alloc_fragment([3], "float32")
            T.copy(A[bx, :], f)
            T.print(bx * 10 + 1, msg="v")
            T.print(f[1:3], msg="row")

    k = compile_cpu(main)
    capfd.readouterr()
    k(np.array([[1, 2, 3], [4, 5.5, 6]], dtype=np.float32))
    out = [ln for ln in capfd.readouterr().out.splitlines() if "BlockIdx=" in ln]
    # Blocks run on the thread pool: each block's lines in order, blocks in any order.
    per_block = {0: [], 1: []}
    for line in out:
        per_block[int(line.split("BlockIdx=(")[1][0])].append(line)
    assert per_block[0] == ["msg='v' BlockIdx=(0, 0, 0): value=1",
                            "msg='row' BlockIdx=(0, 0, 0): buffer=f, index=(1), value=2",
                            "msg='row' BlockIdx=(0, 0, 0): buffer=f, index=(2), value=3"]
    assert per_block[1] == ["msg='v' BlockIdx=(1, 0, 0): value=11",
                            "msg='row' BlockIdx=(1, 0, 0): buffer=f, index=(1), value=5.5",
                            "msg='row' BlockIdx=(1, 0, 0): buffer=f, index=(2), value=6"]


# --- data-dependent gathers ---------------------------------------------------

_PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class Guarded:
    """A C-contiguous array between two inaccessible pages: its first
    element starts right after one and its last ends right before the
    other (the array's byte size is a whole number of pages). A read one
    row before or one row past it faults."""

    def __init__(self, values):
        nbytes = values.nbytes
        assert nbytes % _PAGE == 0, "the guarded array must fill whole pages"
        self._map = mmap.mmap(-1, nbytes + 2 * _PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        for page in (base, base + _PAGE + nbytes):
            assert _libc.mprotect(page, _PAGE, 0) == 0  # PROT_NONE
        self.array = np.frombuffer(self._map, dtype=values.dtype, count=values.size,
                                   offset=_PAGE).reshape(values.shape)
        self.array[...] = values


def gather_kernels(rows, dim, topk):
    """Out[i, :] = KV[Idx[i], :] (zeros where the index is -1 or rows, the
    sentinel), once as a T.copy of a data-dependent slice and once as
    loads inside T.Parallel masked with T.if_then_else."""
    @T.prim_func
    def by_copy(KV: T.Tensor((rows, dim), "float32"), Idx: T.Tensor((topk,), "int32"),
                Out: T.Tensor((topk, dim), "float32")):
        with T.Kernel(topk) as bx:
            g = T.alloc_shared([1, dim], "float32")
            T.copy(KV[Idx[bx], :], g[0, :])
            T.copy(g, Out[bx, 0])

    @T.prim_func
    def by_load(KV: T.Tensor((rows, dim), "float32"), Idx: T.Tensor((topk,), "int32"),
                Out: T.Tensor((topk, dim), "float32")):
        with T.Kernel(T.ceildiv(topk, 4)) as bx:
            g = T.alloc_fragment([4, dim], "float32")
            for i, d in T.Parallel(4, dim):
                idx = Idx[bx * 4 + i]
                g[i, d] = T.if_then_else((idx >= 0) & (idx < rows), KV[idx, d], 0.0)
            T.copy(g, Out[bx * 4, 0])

    return [compile_cpu(by_copy, out_idx=[2]), compile_cpu(by_load, out_idx=[2])]


def test_gathers_never_dereference_skip_or_sentinel_indices():
    rows, dim, topk = 64, 64, 10  # KV is 16 KiB: four whole pages
    kv = np.random.default_rng(4).standard_normal((rows, dim)).astype(np.float32)
    guarded = Guarded(kv)
    idx = np.array([0, rows - 1, -1, rows, 5, -1, rows, rows - 1, 17, 0], dtype=np.int32)
    want = np.where((idx >= 0)[:, None] & (idx < rows)[:, None], kv[np.clip(idx, 0, rows - 1)], 0)
    for k in gather_kernels(rows, dim, topk):
        # Zero-copy: the kernel reads the guarded pages themselves.
        np.testing.assert_array_equal(k(guarded.array, idx), want)


def test_the_guard_pages_fault():
    # The check above means something only if a read past the array faults.
    import signal
    import subprocess
    import sys
    code = (
        "import sys, ctypes, numpy as np; sys.path.insert(0, %r)\n"
        "from test_tile_tier2 import Guarded\n"
        "g = Guarded(np.zeros((64, 64), np.float32))\n"
        "print('mapped', flush=True)\n"
        "ctypes.string_at(g.array.ctypes.data + g.array.nbytes, 1)\n" % str(
            __import__("pathlib").Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "mapped\n"
    assert done.returncode == -signal.SIGSEGV


def test_index_loads_inside_tile_op_regions_are_guarded():
    # The last block's rows run past the end of Idx: the loads of Idx that
    # give the copy's row are guarded as any scalar load is (they read 0),
    # and the copy's bounds keep the -1 and sentinel rows unread.
    rows, dim, topk = 64, 64, 1024  # KV: four pages; Idx: one
    rng = np.random.default_rng(5)
    kv = Guarded(rng.standard_normal((rows, dim)).astype(np.float32))
    idx_values = rng.integers(-1, rows + 1, size=topk).astype(np.int32)
    idx = Guarded(idx_values)

    @T.prim_func
    def main(KV: T.Tensor((rows, dim), "float32"), Idx: T.Tensor((topk,), "int32"),
             Out: T.Tensor((topk, dim), "float32")):
        with T.Kernel(T.ceildiv(topk, 3)) as bx:
            g = T.alloc_shared([3, dim], "float32")
            for i in T.serial(3):
                T.copy(KV[Idx[bx * 3 + i], :], g[i, :])
            T.copy(g, Out[bx * 3, 0])

    k = compile_cpu(main, out_idx=[2])
    valid = (idx_values >= 0) & (idx_values < rows)
    want = np.where(valid[:, None], kv.array[np.clip(idx_values, 0, rows - 1)], 0)
    np.testing.assert_array_equal(k(kv.array, idx.array), want)

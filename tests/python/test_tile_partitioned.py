"""Fragments that no T.gemm touches, as the CUDA lowering spreads them over
the block's threads in registers (Note [Partitioned fragments] in
src/backend/cuda/fragments.h): row reductions whose rows span several warps,
part of a warp or one warp, 16-bit tiles reduced as they are, reductions
into shared memory, a row loop that stores to global memory (one thread of
each row stores), and tiles at a tensor's edge. Each program runs on the
CPU target and, where a GPU is, on CUDA, against numpy."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
import support
from support import as_numpy, on_targets, to_target
from test_tile_kernels import needs_tile_cpu


def _rand(shape, dtype="float32", seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def softmax(m, n, block_m, dtype, threads=128):
    """TileLang's softmax: the input tile reduced as it is (16-bit or not),
    the exponentials in a float tile."""
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, block_m), threads=threads) as bx:
            x = T.alloc_fragment((block_m, n), dtype)
            e = T.alloc_fragment((block_m, n), "float32")
            mx = T.alloc_fragment((block_m,), "float32")
            sm = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(block_m, n):
                e[i, j] = T.exp(T.cast(x[i, j], "float32") - mx[i])
            T.reduce_sum(e, sm, dim=1)
            for i, j in T.Parallel(block_m, n):
                x[i, j] = e[i, j] / sm[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m, dtype", [
    (5, 8192, 1, "float16"),    # a row over 128 threads: four warps meet in shared memory
    (13, 256, 4, "float32"),    # 32 threads a row (one warp); the last tile has one row
    (64, 64, 64, "float16"),    # 8 threads a row, 4 rows each
])
def test_softmax(target, m, n, block_m, dtype):
    k = tilejit.compile(softmax(m, n, block_m, dtype), out_idx=[1], target=target)
    x = _rand((m, n), dtype, seed=n, scale=4)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    tol = 2e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(as_numpy(k(to_target(target, x))).astype(np.float64),
                               e / e.sum(axis=1, keepdims=True), rtol=tol, atol=tol * 1e-2)


def layer_norm(m, n, block_m, eps=1e-5):
    """Mean and 1 / std per row, stored to global memory from a loop over
    the rows (guarded at the tensor's edge), and the normalised rows."""
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32"),
             Mean: T.Tensor((m,), "float32"), Rstd: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float32")
            sq = T.alloc_fragment((block_m, n), "float32")
            s = T.alloc_fragment((block_m,), "float32")
            ss = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], x)
            for i, j in T.Parallel(block_m, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(x, s, dim=1)
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_m):
                s[i] = s[i] / n
                ss[i] = T.rsqrt(ss[i] / n - s[i] * s[i] + eps)
                if bx * block_m + i < m:
                    Mean[bx * block_m + i] = s[i]
                    Rstd[bx * block_m + i] = ss[i]
            for i, j in T.Parallel(block_m, n):
                x[i, j] = (x[i, j] - s[i]) * ss[i]
            T.copy(x, Y[bx * block_m, 0])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m", [(7, 1024, 2), (8, 512, 4)])
def test_layer_norm_stores_row_statistics_once(target, m, n, block_m):
    k = tilejit.compile(layer_norm(m, n, block_m), out_idx=[1, 2, 3], target=target)
    x = _rand((m, n), seed=m, scale=2) + 1
    y, mean, rstd = (as_numpy(v) for v in k(to_target(target, x)))
    xf = x.astype(np.float64)
    mu = xf.mean(axis=1)
    r = 1 / np.sqrt(xf.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, r, rtol=1e-4)
    np.testing.assert_allclose(y, (xf - mu[:, None]) * r[:, None], rtol=1e-4, atol=1e-4)


def row_stats(m, n, block_m):
    """Row sums and maxima reduced into shared memory (not a register row
    vector), then copied out; the max accumulates over two halves."""
    half = n // 2

    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), S: T.Tensor((m,), "float32"),
             Mx: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            a = T.alloc_fragment((block_m, half), "float16")
            b = T.alloc_fragment((block_m, half), "float16")
            s_sh = T.alloc_shared((block_m,), "float32")
            m_sh = T.alloc_shared((block_m,), "float32")
            T.copy(X[bx * block_m, 0], a)
            T.copy(X[bx * block_m, half], b)
            T.reduce_sum(a, s_sh, dim=1)
            T.reduce_sum(b, s_sh, dim=1, clear=False)
            T.reduce_max(a, m_sh, dim=1)
            T.reduce_max(b, m_sh, dim=1, clear=False)
            T.copy(s_sh, S[bx * block_m])
            T.copy(m_sh, Mx[bx * block_m])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, block_m", [(6, 2048, 2), (64, 128, 16)])
def test_row_reductions_into_shared_memory(target, m, n, block_m):
    k = tilejit.compile(row_stats(m, n, block_m), out_idx=[1, 2], target=target)
    x = _rand((m, n), "float16", seed=n)
    s, mx = (as_numpy(v) for v in k(to_target(target, x)))
    xf = x.astype(np.float64)
    np.testing.assert_allclose(s, xf.sum(axis=1), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(mx, xf.max(axis=1).astype(np.float32))


def reducer_rows(m, n, block_m, op):
    """A T.alloc_reducer folded over a tile in registers: each row's
    elements are spread over its threads, so the fold is an atomic (Note
    [Reductions in a T.Parallel nest]), not each thread's own."""
    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), R: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            x = T.alloc_fragment((block_m, n), "float16")
            r = T.alloc_reducer((block_m,), "float32", op=op, replication="all")
            T.copy(X[bx * block_m, 0], x)
            T.fill(r, -T.infinity("float32") if op == "max" else 0.0)
            for i, j in T.Parallel(block_m, n):
                if op == "max":
                    r[i] = T.max(r[i], T.cast(x[i, j], "float32"))
                else:
                    r[i] += T.cast(x[i, j], "float32")
            T.finalize_reducer(r)
            for i in T.Parallel(block_m):
                if bx * block_m + i < m:
                    R[bx * block_m + i] = r[i]
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("op", ["max", "sum"])
@pytest.mark.parametrize("m, n, block_m", [(45, 128, 16), (3, 1024, 1)])
def test_a_reducer_over_a_register_tile(target, op, m, n, block_m):
    k = tilejit.compile(reducer_rows(m, n, block_m, op), out_idx=[1], target=target)
    x = _rand((m, n), "float16", seed=m)
    got = as_numpy(k(to_target(target, x)))
    xf = x.astype(np.float64)
    if op == "max":
        np.testing.assert_array_equal(got, xf.max(axis=1).astype(np.float32))
    else:
        np.testing.assert_allclose(got, xf.sum(axis=1), rtol=1e-4, atol=1e-3)



# --- 1-D and one-element fragments (Note [1-D and replicated fragments]) ------
#
# A 1-D fragment that no tile's rows involve is one row of a partitioned
# tile over the block's threads; one whose every access is at constant
# indices (a T.alloc_fragment([1]) written at block level) is replicated in
# every thread's registers. On CUDA, _placements pins where they live.

def _placements(kernel):
    """Buffer name -> placement, from the kernel's lowering report."""
    return {e["name"]: e["placement"] for e in kernel.lowering_report()
            if e.get("kind") == "buffer"}


def _check_registers(target, kernel, names):
    """On CUDA, `names` are fragments in registers (none kept in shared memory)."""
    if target != "cuda":
        return
    placed = _placements(kernel)
    for name in names:
        assert placed[name] == "registers", (name, placed)


def vector_ops(m, n, dtype, threads=128):
    """1-D fragments of one row: loaded, filled, copied register to
    register, combined in T.Parallel nests, and stored."""
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype),
             Z: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=threads) as bx:
            x = T.alloc_fragment((n,), dtype)
            y = T.alloc_fragment((n,), dtype)
            z = T.alloc_fragment((n,), "float32")
            w = T.alloc_fragment((n,), "float32")
            T.copy(X[bx, 0:n], x)
            T.fill(w, 0.5)
            for j in T.Parallel(n):
                z[j] = T.cast(x[j], "float32") * 2.0 + w[j]
            T.copy(x, y)
            for j in T.Parallel(n):
                y[j] = y[j] + T.cast(j, dtype)
            T.copy(y, Y[bx, 0:n])
            T.copy(z, Z[bx, 0:n])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, dtype", [(3, 1024, "float16"), (2, 512, "float32"),
                                         (2, 128, "float32")])
def test_one_dimensional_fragments(target, m, n, dtype):
    k = tilejit.compile(vector_ops(m, n, dtype), out_idx=[1, 2], target=target)
    x = _rand((m, n), dtype, seed=n)
    y, z = (as_numpy(v) for v in k(to_target(target, x)))
    want_y = (x.astype(np.float32) + np.arange(n, dtype=np.float32).astype(dtype)).astype(dtype)
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(y.astype(np.float32), want_y.astype(np.float32), rtol=tol, atol=tol)
    np.testing.assert_allclose(z, x.astype(np.float32) * 2 + 0.5, rtol=1e-6)
    _check_registers(target, k, ["x", "y", "z", "w"])


def scalars(m, n, dtype):
    """One-element fragments written at block level (every thread holds
    them), read in a T.Parallel nest and stored by a block-level store and
    by a T.copy."""
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype),
             S: T.Tensor((m,), "float32"), C: T.Tensor((m, 2), dtype)):
        with T.Kernel(m, threads=128) as bx:
            x = T.alloc_fragment((n,), dtype)
            s = T.alloc_fragment((1,), "float32")
            c = T.alloc_fragment((2,), dtype)
            T.copy(X[bx, 0:n], x)
            T.fill(c, 1)
            s[0] = T.cast(X[bx, 0], "float32") * 3.0 + 1.0
            c[1] = T.cast(s[0] * 0.5, dtype)
            for j in T.Parallel(n):
                x[j] = T.cast(T.cast(x[j], "float32") - s[0], dtype) * c[1]
            T.copy(x, Y[bx, 0:n])
            S[bx] = s[0]
            T.copy(c, C[bx, 0:2])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_one_element_fragments_written_at_block_level(target, dtype):
    m, n = 3, 256
    k = tilejit.compile(scalars(m, n, dtype), out_idx=[1, 2, 3], target=target)
    x = _rand((m, n), dtype, seed=5)
    y, s, c = (as_numpy(v) for v in k(to_target(target, x)))
    s_want = x[:, 0].astype(np.float32) * 3 + 1
    c1 = (s_want * 0.5).astype(dtype)
    np.testing.assert_allclose(s, s_want, rtol=1e-6)
    np.testing.assert_array_equal(c, np.stack([np.ones(m, dtype), c1], axis=1))
    want = ((x.astype(np.float32) - s_want[:, None]).astype(dtype).astype(np.float32) *
            c1[:, None].astype(np.float32))
    tol = 4e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=tol, atol=tol)
    _check_registers(target, k, ["x", "s", "c"])


_NP_REDUCE = {
    "max": lambda a: a.max(axis=1), "min": lambda a: a.min(axis=1),
    "sum": lambda a: a.sum(axis=1), "abssum": lambda a: np.abs(a).sum(axis=1),
    "absmax": lambda a: np.abs(a).max(axis=1),
}
_NP_COMBINE = {"max": np.maximum, "min": np.minimum, "sum": np.add, "abssum": np.add,
               "absmax": np.maximum}


def whole_reduction(m, n, kind, dtype, out_dtype, clear, threads):
    """A 1-D fragment reduced whole into a one-element fragment (dim=0),
    which starts from 0.25 where clear=False; its value read in a nest."""
    reduce = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), R: T.Tensor((m,), out_dtype),
             Y: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=threads) as bx:
            x = T.alloc_fragment((n,), dtype)
            r = T.alloc_fragment((1,), out_dtype)
            y = T.alloc_fragment((n,), "float32")
            T.copy(X[bx, 0:n], x)
            T.fill(r, 0.25)
            reduce(x, r, dim=0, clear=clear)
            for j in T.Parallel(n):
                y[j] = T.cast(x[j], "float32") - T.cast(r[0], "float32")
            T.copy(r, R[bx:bx + 1])
            T.copy(y, Y[bx, 0:n])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("kind", ["max", "sum", "min", "abssum", "absmax"])
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("n, dtype, out_dtype, threads", [
    (2048, "float16", "float16", 128),   # four warps meet in shared memory
    (1024, "float32", "float32", 256),
    (256, "float32", "float16", 32),     # one warp: shuffles alone
])
def test_a_one_dimensional_fragment_reduced_into_one_element(target, kind, clear, n, dtype,
                                                             out_dtype, threads):
    m = 3
    k = tilejit.compile(whole_reduction(m, n, kind, dtype, out_dtype, clear, threads),
                        out_idx=[1, 2], target=target)
    x = _rand((m, n), dtype, seed=n, scale=2)
    r, y = (as_numpy(v) for v in k(to_target(target, x)))
    want = _NP_REDUCE[kind](x.astype(np.float64))
    if not clear:
        want = _NP_COMBINE[kind](want, 0.25)
    want = want.astype(out_dtype)
    tol = 2e-3 if "float16" in (dtype, out_dtype) else 1e-5
    np.testing.assert_allclose(r.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    np.testing.assert_allclose(y, x.astype(np.float32) - r.astype(np.float32)[:, None],
                               rtol=1e-6, atol=1e-6)
    _check_registers(target, k, ["x", "r", "y"])


LOG2E = 1.4426950408889634


def online_softmax(m, n, bn, threads=128, dtype="float16", accum_dtype="float32"):
    """TileLang's online softmax as bench/vs_tilelang_programs.py has it."""
    nn = (n + bn - 1) // bn
    scale = LOG2E

    @T.prim_func
    def main(X: T.Tensor([m, n], dtype), Y: T.Tensor([m, n], dtype)):
        with T.Kernel(m, threads=threads) as i_m:
            x = T.alloc_fragment([bn], dtype)
            y = T.alloc_fragment([bn], dtype)
            lse = T.alloc_fragment([1], accum_dtype)
            max_x = T.alloc_fragment([1], dtype)
            exp_x = T.alloc_fragment([bn], accum_dtype)
            sum_exp_x = T.alloc_fragment([1], accum_dtype)
            T.fill(lse, -T.infinity(accum_dtype))
            for i_n in T.Pipelined(0, nn):
                T.copy(X[i_m, i_n * bn:(i_n + 1) * bn], x)
                T.reduce_max(x, max_x, dim=0, clear=True)
                for j in T.Parallel(bn):
                    exp_x[j] = T.exp2(x[j] * scale - max_x[0] * scale)
                T.reduce_sum(exp_x, sum_exp_x, dim=0, clear=True)
                lse[0] = max_x[0] * scale + T.log2(T.exp2(lse[0] - max_x[0] * scale)
                                                   + sum_exp_x[0])
            for i_n in T.Pipelined(0, nn):
                T.copy(X[i_m, i_n * bn:(i_n + 1) * bn], x)
                for j in T.Parallel(bn):
                    y[j] = T.exp2(x[j] * scale - lse[0])
                T.copy(y, Y[i_m, i_n * bn:(i_n + 1) * bn])
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, bn", [(5, 512, 128), (3, 16384, 8192)])
def test_online_softmax(target, m, n, bn):
    k = tilejit.compile(online_softmax(m, n, bn), out_idx=[1], target=target)
    x = _rand((m, n), "float16", seed=n, scale=3)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    np.testing.assert_allclose(as_numpy(k(to_target(target, x))).astype(np.float64),
                               e / e.sum(axis=1, keepdims=True), rtol=1e-2, atol=1e-4)
    _check_registers(target, k, ["x", "y", "lse", "max_x", "exp_x", "sum_exp_x"])


def combine(heads, num_split, dim, threads=128):
    """The combine step of bench/vs_tilelang_programs.py's GQA decoding: 1-D
    float32 partials weighed by their log-sum-exps and accumulated."""
    @T.prim_func
    def main(glse: T.Tensor([heads, num_split], "float32"),
             P: T.Tensor([heads, num_split, dim], "float32"),
             O: T.Tensor([heads, dim], "float16")):
        with T.Kernel(heads, threads=threads) as hid:
            po_local = T.alloc_fragment([dim], "float32")
            o_accum_local = T.alloc_fragment([dim], "float32")
            lse_local_split = T.alloc_var("float32")
            lse_logsum_local = T.alloc_var("float32")
            lse_max_local = T.alloc_var("float32")
            scale_local = T.alloc_var("float32")
            T.clear(o_accum_local)
            lse_logsum_local = 0.0
            lse_max_local = -T.infinity("float32")
            for k in T.serial(num_split):
                lse_max_local = T.max(lse_max_local, glse[hid, k])
            for k in T.serial(num_split):
                lse_local_split = glse[hid, k]
                lse_logsum_local += T.exp2(lse_local_split - lse_max_local)
            lse_logsum_local = T.log2(lse_logsum_local) + lse_max_local
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po_local[i] = P[hid, k, i]
                lse_local_split = glse[hid, k]
                scale_local = T.exp2(lse_local_split - lse_logsum_local)
                for i in T.Parallel(dim):
                    o_accum_local[i] += po_local[i] * scale_local
            for i in T.Parallel(dim):
                O[hid, i] = o_accum_local[i]
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("dim", [128, 512])
def test_decoding_combine(target, dim):
    heads, num_split = 6, 4
    k = tilejit.compile(combine(heads, num_split, dim), out_idx=[2], target=target)
    glse = _rand((heads, num_split), seed=1, scale=2)
    p = _rand((heads, num_split, dim), seed=2)
    got = as_numpy(k(to_target(target, glse), to_target(target, p)))
    w = np.exp2(glse.astype(np.float64))
    w /= w.sum(axis=1, keepdims=True)
    want = (p.astype(np.float64) * w[:, :, None]).sum(axis=1)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)
    _check_registers(target, k, ["po_local", "o_accum_local"])


_NO_CUDA = support.tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)


def _compiled_for_cuda(program, out_idx):
    """The CUDA kernel of `program`, compiled (NVRTC) and not run."""
    return tilejit.compile(program, out_idx=out_idx, target="cuda")


@needs_cuda_target
@pytest.mark.parametrize("program, out_idx, names", [
    (vector_ops(2, 1024, "float16"), [1, 2], ["x", "y", "z", "w"]),
    (scalars(2, 256, "float16"), [1, 2, 3], ["x", "s", "c"]),
    (whole_reduction(2, 2048, "max", "float16", "float16", False, 128), [1, 2], ["x", "r", "y"]),
    (online_softmax(2, 16384, 8192), [1], ["x", "y", "lse", "max_x", "exp_x", "sum_exp_x"]),
    (combine(4, 4, 512), [2], ["po_local", "o_accum_local"]),
], ids=["vector_ops", "scalars", "whole_reduction", "online_softmax", "combine"])
def test_vectors_and_scalars_live_in_registers_on_cuda(program, out_idx, names):
    placed = _placements(_compiled_for_cuda(program, out_idx))
    for name in names:
        assert placed[name] == "registers", (name, placed)


def _forced_by(kernel, name):
    for e in kernel.lowering_report():
        if e.get("kind") == "buffer" and e["name"] == name:
            return e["placement"], (e.get("forced_by") or {}).get("reason")
    raise AssertionError(name)


@needs_cuda_target
def test_what_registers_cannot_serve_stays_in_shared_memory_and_says_why():
    # 64 elements over 128 threads: no partitioned layout.
    k = _compiled_for_cuda(vector_ops(2, 64, "float32"), [1, 2])
    assert _forced_by(k, "x") == (
        "shared", "no partitioned layout of 64 elements over 128 threads (runs of 8, 4, 2 or 1 "
        "elements that the threads divide evenly, at most 128 a thread)")

    # A one-element fragment stored in a T.Parallel nest.
    @T.prim_func
    def stored_in_a_nest(X: T.Tensor((4, 128), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_fragment((1,), "float32")
            T.fill(s, 0)
            for j in T.Parallel(1):
                s[0] = X[bx, j]
            Y[bx] = s[0]
    k = _compiled_for_cuda(stored_in_a_nest, [1])
    assert _forced_by(k, "s") == ("shared", "an element stored in a T.Parallel nest")

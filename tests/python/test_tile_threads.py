"""Thread semantics (Note [Thread semantics] in
tilejit/transform/thread_uniformity.h): every statement outside a tile op
runs on every thread of the block, with its own T.get_thread_binding() and
its own T.alloc_local / T.alloc_var values; tile ops under an `if` on a
thread range run on those threads. Checked on the CPU target, which runs a
block's threads, against numpy; the same programs run on a GPU in
test_tile_cuda.py."""

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import as_numpy, on_targets, to_target
from test_tile_kernels import needs_tile_cpu


def _rand(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# --- statements with the thread index --------------------------------------

def scale_by_thread(n, threads=128):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            if bx * threads + tx < n:
                B[bx * threads + tx] = A[bx * threads + tx] * 2
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("n", [1024, 1000])
def test_a_store_with_the_thread_index_is_every_threads(target, n):
    k = tilejit.compile(scale_by_thread(n), out_idx=[1], target=target)
    a = _rand(n)
    np.testing.assert_array_equal(as_numpy(k(to_target(target, a))), a * 2)


def gemv_one_thread_per_row(target, n, k, block_n, block_k, dtype="float16", accum="float32"):
    # TileLang's naive GEMV idiom: a thread a row, a block's rows of B and
    # the shared slice of A loaded by every thread, a local accumulator.
    @tilelang.jit(out_idx=[-1], target=target)
    def kernel():
        @T.prim_func
        def main(A: T.Tensor((k,), dtype), B: T.Tensor((n, k), dtype), C: T.Tensor((n,), dtype)):
            with T.Kernel(T.ceildiv(n, block_n), threads=block_n) as bn:
                tn = T.get_thread_binding(0)
                A_shared = T.alloc_shared((block_k,), dtype)
                B_shared = T.alloc_shared((block_n, block_k), dtype)
                C_reg = T.alloc_local((1,), accum)
                T.clear(C_reg)
                for bk in T.serial(T.ceildiv(k, block_k)):
                    for tk in T.serial(block_k):
                        A_shared[tk] = A[bk * block_k + tk]
                        B_shared[tn, tk] = B[bn * block_n + tn, bk * block_k + tk]
                    for tk in T.serial(block_k):
                        C_reg[0] += A_shared[tk].astype(accum) * B_shared[tn, tk].astype(accum)
                C[bn * block_n + tn] = C_reg[0]
        return main
    return kernel()


def gemv_split_k(target, n, k, block_n, reduce_threads, vectorized, dtype="float16",
                 accum="float32"):
    # TileLang's split-K GEMV idiom: threads (block_n, reduce_threads), each
    # thread's partial over its slice of K, T.atomic_add of it into a shared
    # row sum that the tk == 0 threads zeroed.
    tile_k = 8
    block_k = reduce_threads * tile_k
    loop = T.vectorized if vectorized else T.serial

    @tilelang.jit(out_idx=[-1], target=target)
    def kernel():
        @T.prim_func
        def main(A: T.Tensor((k,), dtype), B: T.Tensor((n, k), dtype), C: T.Tensor((n,), dtype)):
            with T.Kernel(T.ceildiv(n, block_n), threads=(block_n, reduce_threads)) as bn:
                tn = T.get_thread_binding(0)
                tk = T.get_thread_binding(1)
                A_local = T.alloc_local((tile_k,), dtype)
                B_local = T.alloc_local((tile_k,), dtype)
                C_shared = T.alloc_shared((block_n,), accum)
                C_accum = T.alloc_local((1,), accum)
                if tk == 0:
                    C_shared[tn] = 0
                T.clear(C_accum)
                for bk in T.serial(T.ceildiv(k, block_k)):
                    for i in loop(tile_k):
                        A_local[i] = A[bk * block_k + tk * tile_k + i]
                        B_local[i] = B[bn * block_n + tn, bk * block_k + tk * tile_k + i]
                    for i in T.serial(tile_k):
                        C_accum[0] += A_local[i].astype(accum) * B_local[i].astype(accum)
                T.atomic_add(C_shared[tn], C_accum[0])
                C[bn * block_n + tn] = C_shared[tn]
        return main
    return kernel()


def _gemv_inputs(n, k):
    a = (np.random.default_rng(1).standard_normal(k) / 8).astype(np.float16)
    b = (np.random.default_rng(2).standard_normal((n, k)) / 8).astype(np.float16)
    return a, b, (b.astype(np.float32) @ a.astype(np.float32))


@needs_tile_cpu
@on_targets
def test_gemv_a_thread_per_row(target):
    a, b, ref = _gemv_inputs(256, 512)
    c = gemv_one_thread_per_row(target, 256, 512, 128, 64)(to_target(target, a), to_target(target, b))
    np.testing.assert_allclose(as_numpy(c).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("vectorized", [False, True])
def test_gemv_split_k_atomics_per_thread(target, vectorized):
    a, b, ref = _gemv_inputs(256, 1024)
    c = gemv_split_k(target, 256, 1024, 32, 4, vectorized)(to_target(target, a), to_target(target, b))
    np.testing.assert_allclose(as_numpy(c).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


@needs_tile_cpu
@on_targets
def test_alloc_var_accumulates_per_thread(target):
    rows, cols, threads = 200, 37, 64

    @T.prim_func
    def row_sums(X: T.Tensor((rows, cols), "float32"), S: T.Tensor((rows,), "float32")):
        with T.Kernel(T.ceildiv(rows, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            acc = T.alloc_var("float32", init=0)
            r = bx * threads + tx
            if r < rows:
                for j in T.serial(cols):
                    acc += X[r, j]
                S[r] = acc

    x = _rand((rows, cols))
    s = tilejit.compile(row_sums, out_idx=[1], target=target)(to_target(target, x))
    np.testing.assert_allclose(as_numpy(s), x.sum(axis=1), rtol=1e-5, atol=1e-5)


@needs_tile_cpu
@on_targets
def test_a_scalar_atomic_add_is_made_by_every_thread(target):
    # TileLang's T.atomic_add of one element and a value is each thread's:
    # 128 threads add 128 times.
    @T.prim_func
    def count(C: T.Tensor((2,), "int32")):
        with T.Kernel(3, threads=128) as bx:
            tx = T.get_thread_binding()
            T.atomic_add(C[0], 1)
            if tx == 0:
                T.atomic_add(C[1], 1)

    c = to_target(target, np.zeros(2, np.int32))
    tilejit.compile(count, target=target)(c)
    np.testing.assert_array_equal(as_numpy(c), [3 * 128, 3])


@needs_tile_cpu
@on_targets
def test_thread_values_cross_a_barrier_through_shared_memory(target):
    # Thread t writes S[t]; after the (implicit) barrier thread t reads its
    # neighbour's S[t + 1]: the CPU runs the two statements in loops of
    # their own, as the GPU's barrier orders them. `v` is a let of each
    # thread's own.
    @T.prim_func
    def swap_pairs(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            v = A[tx] + 1
            S[tx] = v
            B[tx] = S[(tx + 1) % 128]

    a = _rand(128)
    b = tilejit.compile(swap_pairs, out_idx=[1], target=target)(to_target(target, a))
    np.testing.assert_allclose(as_numpy(b), np.roll(a + 1, -1), rtol=1e-6)


# --- tile ops under a thread range ------------------------------------------

@needs_tile_cpu
@on_targets
def test_a_copy_under_a_thread_range_runs_on_those_threads(target):
    @T.prim_func
    def halves(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
               C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((64, 64), "float32")
            B_s = T.alloc_shared((64, 64), "float32")
            if tx < 128:
                T.copy(A, A_s)
            else:
                T.copy(B, B_s)
            for i, j in T.Parallel(64, 64):
                C[i, j] = A_s[i, j] - B_s[i, j]

    a, b = _rand((64, 64), seed=3), _rand((64, 64), seed=4)
    c = tilejit.compile(halves, out_idx=[2], target=target)(to_target(target, a), to_target(target, b))
    np.testing.assert_array_equal(as_numpy(c), a - b)


@needs_tile_cpu
@on_targets
def test_a_gemm_and_a_copy_on_two_thread_ranges(target):
    # The producer / consumer shape: 128 threads make a gemm, the other 128
    # a copy, in one if; what each made is read after it.
    @T.prim_func
    def roles(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
              X: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32"),
              Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            Y_s = T.alloc_shared((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            if tx >= 128:
                T.copy(X, Y_s)
            else:
                T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)
            T.copy(Y_s, Y)

    a = (_rand((64, 32), seed=5) / 4).astype(np.float16)
    b = (_rand((32, 64), seed=6) / 4).astype(np.float16)
    x = _rand((64, 64), seed=7)
    c, y = tilejit.compile(roles, out_idx=[3, 4], target=target)(
        to_target(target, a), to_target(target, b), to_target(target, x))
    np.testing.assert_allclose(as_numpy(c), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
    np.testing.assert_array_equal(as_numpy(y), x)


@needs_tile_cpu
def test_a_tile_op_under_another_thread_condition_is_an_error_at_the_if():
    @T.prim_func
    def odd(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")
            if tx % 2 == 1:
                T.copy(A, S)
            T.copy(S, B)

    with pytest.raises(ValueError) as e:
        tilejit.compile(odd, target="cpu")
    msg = str(e.value)
    assert "test_tile_threads.py" in msg and ": if: T.copy (line " in msg, msg
    assert "depends on the thread index and is not such a range" in msg, msg


# --- T.sync_threads -------------------------------------------------------------

def neighbours(n=128):
    """Each thread reads its neighbours' values through shared memory and
    through a global buffer; only the author's T.sync_threads orders the
    global ones."""
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), G: T.Tensor((n,), "float32"),
             B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((n,), "float32")
            B[tx] = 0.0
            for k in T.serial(3):
                S[tx] = A[tx] + k
                G[tx] = A[tx] * k
                T.sync_threads()
                B[tx] = B[tx] + S[(tx + 1) % n] + G[(tx + 5) % n]
                T.sync_threads()
    return main


@needs_tile_cpu
@on_targets
def test_sync_threads_orders_shared_and_global_memory(target):
    prog = neighbours()
    assert prog.script().count("T.sync_threads()") == 2
    a = np.arange(128, dtype=np.float32)
    g, b = tilejit.compile(prog, out_idx=[1, 2], target=target)(to_target(target, a))
    ref = sum(np.roll(a, -1) + k + np.roll(a, -5) * k for k in range(3))
    np.testing.assert_allclose(as_numpy(b), ref)
    np.testing.assert_allclose(as_numpy(g), a * 2)


@needs_tile_cpu
def test_sync_threads_every_thread_does_not_reach_is_an_error():
    @T.prim_func
    def odd(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if tx % 2 == 1:
                T.sync_threads()
            A[tx] = 1.0

    with pytest.raises(ValueError) as e:
        tilejit.compile(odd, target="cpu")
    msg = str(e.value)
    assert ": if: T.sync_threads (line " in msg, msg
    assert "depends on the thread index and is not such a range" in msg, msg

    @T.prim_func
    def in_parallel(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = 1.0
                T.sync_threads()

    with pytest.raises(ValueError, match=r"test_tile_threads\.py:\d+:\d+: T\.sync_threads: a "
                                         r"barrier inside a T\.Parallel loop"):
        tilejit.compile(in_parallel, target="cpu")


# --- T.alloc_reducer ----------------------------------------------------------

@needs_tile_cpu
@on_targets
def test_alloc_reducer_column_sums(target):
    @T.prim_func
    def col_sums(X: T.Tensor((256, 64), "float32"), S: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_reducer((64,), "float32", replication="all")
            T.clear(s)
            for k in T.serial(8):
                for i, j in T.Parallel(32, 64):
                    s[j] += X[k * 32 + i, j]
            T.finalize_reducer(s)
            T.copy(s, S)

    x = _rand((256, 64), seed=8)
    s = tilejit.compile(col_sums, out_idx=[1], target=target)(to_target(target, x))
    np.testing.assert_allclose(as_numpy(s), x.sum(axis=0), rtol=1e-4, atol=1e-4)


def naive_gemv(n, k, rows=True, block=128):
    """TileLang's naive GEMV: thread 0 fills A's tile, each thread its own row
    of B's (rows) or its own column (not rows), element by element; the fill
    loop needs no barrier for the rows (Note [Thread-exclusive writes])."""

    @T.prim_func
    def gemv(A: T.Tensor((k,), "float16"), B: T.Tensor((n, k), "float16"),
             C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bn:
            tn = T.get_thread_binding(0)
            A_s = T.alloc_shared((block,), "float16")
            B_s = T.alloc_shared((block, block), "float16")
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(T.ceildiv(k, block)):
                for tk in T.serial(block):
                    A_s[tk] = A[bk * block + tk]
                    if rows:
                        B_s[tn, tk] = B[bn * block + tn, bk * block + tk]
                    else:
                        B_s[tk, tn] = B[bn * block + tn, bk * block + tk]
                for tk in T.serial(block):
                    b = B_s[tn, tk] if rows else B_s[tk, tn]
                    acc[0] += A_s[tk].astype("float32") * b.astype("float32")
            C[bn * block + tn] = acc[0]
    return gemv


@on_targets
@pytest.mark.parametrize("rows", [True, False])
def test_a_tile_filled_element_by_element(target, rows):
    n, k = 256, 384
    rng = np.random.default_rng(5)
    a = rng.standard_normal(k).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    kernel = tilejit.compile(naive_gemv(n, k, rows), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    np.testing.assert_allclose(c, b.astype(np.float32) @ a.astype(np.float32), rtol=1e-3, atol=1e-2)

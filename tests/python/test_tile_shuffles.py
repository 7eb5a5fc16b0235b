"""Warp shuffles (Note [Warp shuffles] in tilejit/transform/hoist_shuffles.h):
T.shfl_sync / shfl_up / shfl_down / shfl_xor with TileLang's signatures
(value, lane or delta, width=32, mask=0xFFFFFFFF), each lane reading another
lane's value of its warp by CUDA's rules. Checked on the CPU target, which
runs a block's threads one after another and so exchanges the values through
an array, against numpy models of the rules, and where a GPU is on CUDA
from the same programs; the CUDA source is compiled (NVRTC) wherever
tilejit's cuda target is available (a GPU, or the null driver of
bench/null_driver first on LD_LIBRARY_PATH). Where the CPU cannot tell
which lanes meet at a shuffle the error names it at the author's line."""

import re

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")


def _source_lane(kind, t, b, width):
    """The thread whose value thread t reads (PTX's shfl.sync rules), or t."""
    lane, base = t % 32, t - t % 32
    seg = lane // width * width
    b %= 32
    if kind == "shfl_sync":
        j = seg + b % width
    elif kind == "shfl_up":
        j = lane - b if lane - b >= seg else lane
    elif kind == "shfl_down":
        j = lane + b if lane + b < seg + width else lane
    else:
        j = lane ^ b
        j = j if j < seg + width else lane
    return base + j


def _shuffled(kind, x, b, width):
    return np.array([x[_source_lane(kind, t, b, width)] for t in range(len(x))], x.dtype)


# --- TileLang's own test program, only the import and the torch tensor changed --

@tilelang.jit
def kernel_with_shfl_sync():
    @T.prim_func
    def main(
        A: T.Tensor((32,), "int32"),
    ):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            val = tx * 10
            broadcast = T.shfl_sync(val, 31)
            A[tx] = broadcast

    return main


@needs_tile_cpu
@on_targets
def test_tilelangs_shfl_sync_program(target):
    # testing/python/language/test_tilelang_language_warp_sync.py of TileLang.
    kernel = kernel_with_shfl_sync.retarget(target)()
    a = to_target(target, np.zeros(32, np.int32))
    kernel(a)
    assert (as_numpy(a) == 310).all()


# --- each shuffle, width and delta ----------------------------------------------

def lanes(kind, b, width=32, threads=64, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((threads,), dtype), Y: T.Tensor((threads,), dtype)):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            Y[tx] = getattr(T, kind)(X[tx], b, width=width)
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("kind", ["shfl_sync", "shfl_up", "shfl_down", "shfl_xor"])
@pytest.mark.parametrize("width", [32, 8, 1])
def test_each_lane_reads_the_lane_cuda_names(target, kind, width):
    x = np.arange(64, dtype=np.float32)
    for b in (0, 1, 3, 9, 17, 33):
        k = tilejit.compile(lanes(kind, b, width), out_idx=[1], target=target)
        y = as_numpy(k(to_target(target, x)))
        np.testing.assert_array_equal(y, _shuffled(kind, x, b, width), err_msg=f"b={b}")


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "int32", "int64"])
def test_a_shuffle_keeps_the_values_dtype(target, dtype):
    k = tilejit.compile(lanes("shfl_xor", 5, dtype=dtype), out_idx=[1], target=target)
    x = (np.arange(64) * 3 - 50).astype(dtype)
    y = as_numpy(k(to_target(target, x)))
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, _shuffled("shfl_xor", x, 5, 32))


# --- warp reductions ---------------------------------------------------------

def warp_sums(n, threads=128):
    """Each warp's sum of X, by a butterfly of T.shfl_xor over a register."""
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((T.ceildiv(n, 32),), "float32")):
        with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_local((1,), "float32")
            v[0] = X[bx * threads + tx]
            for offset in (16, 8, 4, 2, 1):
                v[0] += T.shfl_xor(v[0], offset)
            if tx % 32 == 0:
                Y[(bx * threads + tx) // 32] = v[0]
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("n", [256, 200])
def test_warp_sum_by_butterfly(target, n):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = as_numpy(tilejit.compile(warp_sums(n), out_idx=[1], target=target)(to_target(target, x)))
    ref = np.concatenate([x, np.zeros(-n % 32, np.float32)]).reshape(-1, 32).sum(axis=1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def gemv_shuffle(n, k, block_n=4, dtype="float16", accum="float32"):
    """TileLang's split-K GEMV with the threads of a row in one warp, their
    partial sums reduced by T.shfl_down (the tvm_thread_allreduce of
    TileLang's examples/gemv written with shuffles)."""
    reduce_threads = 32
    tile_k = 4
    block_k = reduce_threads * tile_k

    @T.prim_func
    def main(A: T.Tensor((k,), dtype), B: T.Tensor((n, k), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block_n), threads=(reduce_threads, block_n)) as bn:
            tk = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            acc = T.alloc_local((1,), accum)
            T.clear(acc)
            for bk in T.serial(T.ceildiv(k, block_k)):
                for i in T.serial(tile_k):
                    kk = bk * block_k + tk * tile_k + i
                    acc[0] += A[kk].astype(accum) * B[bn * block_n + tn, kk].astype(accum)
            total = T.alloc_var(accum, init=acc[0])
            for offset in (16, 8, 4, 2, 1):
                total += T.shfl_down(total, offset)
            if tk == 0:
                C[bn * block_n + tn] = total
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("n, k", [(64, 256), (10, 300)])
def test_gemv_rows_reduced_by_shfl_down(target, n, k):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(k) / 8).astype(np.float16)
    b = (rng.standard_normal((n, k)) / 8).astype(np.float16)
    c = tilejit.compile(gemv_shuffle(n, k), out_idx=[2], target=target)(
        to_target(target, a), to_target(target, b))
    ref = b.astype(np.float32) @ a.astype(np.float32)
    np.testing.assert_allclose(as_numpy(c).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def group_scales(n):
    """Each group of 8 lanes: its absolute maximum by T.shfl_xor(width=8),
    lane 0 of the group's reciprocal broadcast by T.shfl_sync(width=8) (the
    idiom of TileLang's NVFP4 quantiser), over threads (32, 4)."""
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=(32, 4)) as bx:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            i = bx * 128 + ty * 32 + tx
            amax = T.alloc_var("float32", init=T.abs(X[i]))
            amax = T.max(amax, T.shfl_xor(amax, 4, width=8))
            amax = T.max(amax, T.shfl_xor(amax, 2, width=8))
            amax = T.max(amax, T.shfl_xor(amax, 1, width=8))
            scale = T.alloc_var("float32", init=0.0)
            if tx % 8 == 0:
                scale = 1.0 / amax
            scale = T.shfl_sync(scale, 0, width=8)
            Y[i] = X[i] * scale
    return main


@needs_tile_cpu
@on_targets
def test_group_maximum_and_broadcast_with_width_8(target):
    n = 1000
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    y = as_numpy(tilejit.compile(group_scales(n), out_idx=[1], target=target)(to_target(target, x)))
    padded = np.concatenate([x, np.zeros(-n % 8, np.float32)])
    amax = np.abs(padded).reshape(-1, 8).max(axis=1).repeat(8)[:n]
    np.testing.assert_allclose(y, x / amax, rtol=1e-6)


def upper_half_scan(threads=128):
    """Five steps of s += the lane below's s (T.shfl_up in a T.serial loop),
    run by the threads of `tx >= 64` only (whole warps), the others copying."""
    @T.prim_func
    def main(X: T.Tensor((threads,), "float32"), Y: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            Y[tx] = X[tx]
            if tx >= 64:
                s = T.alloc_local((1,), "float32")
                s[0] = X[tx]
                for k in T.serial(5):
                    up = T.shfl_up(s[0], 1)
                    if tx % 32 >= 1:
                        s[0] = s[0] + up
                Y[tx] = s[0]
    return main


@needs_tile_cpu
@on_targets
def test_a_shuffle_under_a_thread_range_and_in_a_loop(target):
    x = np.arange(128, dtype=np.float32)
    y = as_numpy(tilejit.compile(upper_half_scan(), out_idx=[1], target=target)(
        to_target(target, x)))
    ref = x.copy()
    s = x.copy()
    for _ in range(5):
        s = np.array([s[t] + s[t - 1] if t % 32 >= 1 else s[t] for t in range(128)], np.float32)
    ref[64:] = s[64:]
    np.testing.assert_array_equal(y, ref)


def guarded_store(n):
    """A shuffle whose value reaches a store that the partial-tile guard
    skips for some threads: every thread still shuffles."""
    m = T.symbolic("m")

    @T.prim_func
    def main(X: T.Tensor((m,), "float32"), Y: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, 64), threads=64) as bx:
            tx = T.get_thread_binding()
            Y[bx * 64 + tx] = T.shfl_down(X[bx * 64 + tx], 1) + T.if_then_else(
                tx % 2 == 0, T.shfl_xor(X[bx * 64 + tx], 1), 0.0)
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m", [128, 70])
def test_a_shuffle_in_a_guarded_store_and_a_select(target, m):
    x = np.random.default_rng(3).standard_normal(m).astype(np.float32)
    y = as_numpy(tilejit.compile(guarded_store(m), out_idx=[1], target=target)(
        to_target(target, x)))
    padded = np.concatenate([x, np.zeros(-m % 64, np.float32)])
    down = _shuffled("shfl_down", padded, 1, 32)
    xor = np.where(np.arange(len(padded)) % 2 == 0, _shuffled("shfl_xor", padded, 1, 32), 0)
    np.testing.assert_allclose(y, (down + xor)[:m], rtol=1e-6)


def test_a_python_name_bound_to_a_shuffle_keeps_its_value():
    """`t = T.shfl_xor(v, 1)` is the value at that line (a let), not the
    expression re-read after v changes."""
    @T.prim_func
    def main(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_var("float32", init=X[tx])
            t = T.shfl_xor(v, 1)
            v = 0.0
            Y[tx] = t + v

    script = main.script()
    assert re.search(r"\w+ = shfl_xor\(", script), script
    x = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(tilejit.compile(main, out_idx=[1], target="cpu")(x),
                                  _shuffled("shfl_xor", x, 1, 32))


@needs_cuda_target
def test_the_cuda_source_calls_the_shuffles():
    k = tilejit.compile(group_scales(1000), out_idx=[1], target="cuda")
    src = k.get_kernel_source()
    assert "tilejit::cuda::shfl_xor(amax[0], 4, int(8), 4294967295LL)" in src, src
    assert "tilejit::cuda::shfl_sync(scale[0], 0, int(8), 4294967295LL)" in src, src
    for prog in (warp_sums(200), gemv_shuffle(10, 300), upper_half_scan(), guarded_store(70),
                 lanes("shfl_up", 3, 4, dtype="int8")):
        assert "tilejit::cuda::shfl_" in tilejit.compile(prog, target="cuda").get_kernel_source()


# --- where the CPU cannot emulate a shuffle, and argument errors ---------------

def _expect(kind, pattern, prog):
    with pytest.raises(kind) as info:
        tilejit.compile(prog, target="cpu")
    assert type(info.value) is kind
    assert re.fullmatch(re.escape(__file__) + r":\d+:\d+: " + pattern, str(info.value)), \
        str(info.value)


@needs_tile_cpu
def test_a_shuffle_under_a_condition_that_is_not_a_thread_range():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if tx % 2 == 0:
                Y[tx] = T.shfl_xor(X[tx], 2)

    _expect(ValueError, re.escape(
        "if: T.shfl_xor (line ") + r"\d+" + re.escape(
        ") exchanges values between the lanes of a warp, which the CPU target emulates where "
        "every thread of the block, or of a range of its threads, runs it; this if depends on "
        "the thread index and is not a range of it: make it uniform, or a range of the thread "
        "index (tx < c, tx >= c, c <= tx < d)"), main)


@needs_tile_cpu
def test_a_shuffle_in_a_parallel_loop():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                f[i] = T.shfl_xor(X[i], 1)
            T.copy(f, Y)

    _expect(ValueError, re.escape("T.shfl_xor: a warp shuffle inside a T.Parallel loop (line ")
            + r"\d+" + re.escape(
                "), whose iterations the target spreads over the threads as its layout decides, "
                "so which lanes exchange values is not defined; shuffle outside the loop, a value "
                "of each thread's own (T.get_thread_binding, T.alloc_local / T.alloc_var)"), main)


@needs_tile_cpu
def test_a_full_mask_on_part_of_a_warp():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if tx < 16:
                Y[tx] = T.shfl_xor(X[tx], 1)

    _expect(ValueError, re.escape(
        "T.shfl_xor: threads [0, 16) run it here, but in warp 0 lanes 16-31 of its mask "
        "0xFFFFFFFF do not run it; every lane of the mask runs a shuffle together (CUDA's rule), "
        "and the CPU target emulates it for the lanes of the mask"), main)


@needs_tile_cpu
def test_a_shuffle_in_a_while_condition():
    @T.prim_func
    def main(Y: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_var("int32", init=0)
            while T.shfl_xor(v, 1) < 3:
                v += 1
            Y[tx] = v

    _expect(ValueError, re.escape(
        "while: the condition holds T.shfl_xor, a warp shuffle, which every lane must run "
        "together at each test; assign the shuffle's result to a T.alloc_var before the loop "
        "and at the end of its body, and test that"), main)


@needs_tile_cpu
def test_a_partial_mask_of_the_lanes_that_run_it():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            Y[tx] = X[tx]
            if tx < 16:
                Y[tx] = T.shfl_xor(X[tx], 1, mask=0xFFFF)

    x = np.arange(128, dtype=np.float32)
    y = tilejit.compile(main, out_idx=[1], target="cpu")(x)
    np.testing.assert_array_equal(y[:16], _shuffled("shfl_xor", x, 1, 32)[:16])
    np.testing.assert_array_equal(y[16:], x[16:])


@pytest.mark.parametrize("call, kind, message", [
    (lambda x: T.shfl_xor(x, 1, width=12), ValueError,
     "T.shfl_xor: width must be a power of two from 1 to 32, got int 12"),
    (lambda x: T.shfl_down(x, 1, width=64), ValueError,
     "T.shfl_down: width must be a power of two from 1 to 32, got int 64"),
    (lambda x: T.shfl_up(x, 1.5), TypeError,
     "T.shfl_up: delta must be an int or an integer expression, got float 1.5"),
    (lambda x: T.shfl_sync(x, 0, mask=1 << 32), ValueError,
     "T.shfl_sync: mask must be a 32-bit lane mask, got 4294967296"),
])
def test_shuffle_arguments(call, kind, message):
    def make():
        @T.prim_func
        def main(X: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                X[0] = call(X[1])
        return main
    with pytest.raises(kind) as info:
        make()
    assert type(info.value) is kind
    assert re.fullmatch(re.escape(__file__) + r":\d+:\d+: " + re.escape(message),
                        str(info.value)), str(info.value)

"""The TileLang surface of tilejit (import tilejit as tilelang): the names
TileLang programs import at the top of a file, and what each does."""

import os
import warnings

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import add_one_kernel, raises_exact
from test_tile_kernels import needs_tile_cpu


def test_names_tilelang_programs_import():
    for name in ["jit", "compile", "cdiv", "next_power_of_2", "DataType", "PassConfigKey",
                 "TensorSupplyType", "disable_cache", "enable_cache", "is_cache_enabled",
                 "autotune", "Profiler", "JITKernel", "language"]:
        assert hasattr(tilelang, name), name
    from tilejit.autotuner import autotune  # noqa: F401
    from tilejit.cache import clear_cache  # noqa: F401
    from tilejit.math import cdiv, next_power_of_2  # noqa: F401
    from tilejit.profiler import do_bench  # noqa: F401
    from tilejit.testing import main, set_random_seed, torch_assert_close  # noqa: F401
    from tilejit.transform import PassConfigKey  # noqa: F401
    for name in ["prim_func", "Tensor", "Buffer", "Kernel", "alloc_shared", "alloc_fragment",
                 "alloc_local", "alloc_var", "alloc_reducer", "finalize_reducer",
                 "alloc_global", "copy", "gemm", "GemmWarpPolicy", "fill", "clear", "reduce_sum",
                 "reduce_max", "reduce_min", "reduce_abssum", "reduce_absmax", "atomic_add",
                 "Parallel", "Pipelined", "serial", "unroll", "vectorized", "cast", "Cast",
                 "max", "min", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh",
                 "sigmoid", "if_then_else", "infinity", "ceildiv", "symbolic", "dynamic",
                 "get_thread_binding", "print", "float16", "bfloat16", "float32", "float",
                 "int32", "int64", "int8", "uint8", "bool", "float64", "macro", "SharedBuffer",
                 "FragmentBuffer", "LocalBuffer", "annotate_layout", "Layout", "Fragment",
                 "use_swizzle"]:
        assert hasattr(T, name), name
    assert callable(tilelang.layout.make_swizzled_layout)


def test_math_helpers():
    assert tilelang.cdiv(10, 4) == 3 and tilelang.cdiv(8, 4) == 2
    assert [tilelang.math.next_power_of_2(x) for x in (0, 1, 2, 3, 5, 64, 65)] == \
        [1, 1, 2, 4, 8, 64, 128]
    assert tilelang.next_power_of_2(100) == 128


def test_dtype_objects_and_datatype():
    assert T.float == T.float32 == "float32" and T.float16 == "float16" and T.bfloat16 == "bf16"
    assert str(T.bfloat16) == "bfloat16" and repr(T.int32) == "T.int32"
    assert T.float16 != T.float32 and T.int8.bits == 8
    assert {T.float32: 1}[T.float32] == 1
    d = tilelang.DataType("float16")
    assert d == "float16" and d.bits == 16 and d.lanes == 1 and d.is_float() and not d.is_int()
    assert tilelang.DataType(T.int64).bits == 64 and tilelang.DataType("float").itemsize == 4
    assert tilelang.DataType("bool").is_bool()
    with raises_exact(ValueError, "unknown dtype 'float8'; expected one of float64, float32, "
                                  "float16, bfloat16, int8, int16, int32, int64, uint8, uint16, "
                                  "uint32, uint64, bool"):
        tilelang.DataType("float8")


def test_kernel_get_kernel_source():
    kernel = add_one_kernel()
    assert kernel.get_kernel_source() == kernel.source
    assert "Y(i) = X(i) + 1.0f" in kernel.get_kernel_source()


def test_pass_configs_are_accepted_and_unknown_keys_warned_once():
    def make():
        @T.prim_func
        def cfg_kernel(X: T.Tensor([4], "float32")):
            with T.Kernel(1, threads=1):
                T.source(cpu="X(0) = 2.0f;")
        return cfg_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilelang.compile(make(), target="cpu", pass_configs={
            tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
            "tl.disable_tma_lower": True, "tir.disable_vectorize": False})
    with pytest.warns(UserWarning) as record:
        tilelang.compile(make(), target="cpu", pass_configs={"tl.no_such_option": 1})
    assert [str(w.message) for w in record] == [
        "cfg_kernel: unknown pass config 'tl.no_such_option' (not a tilejit.PassConfigKey); "
        "it is ignored"]
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilelang.compile(make(), target="cpu", pass_configs={"tl.no_such_option": 1})
        @tilelang.jit(target="cpu", pass_configs={"tl.no_such_option": 2})
        def factory():
            return make()

        factory()
    with raises_exact(TypeError, "tilejit.jit: pass_configs must be a dict, got list"):
        tilelang.jit(pass_configs=["tl.enable_fast_math"])


def test_tilelang_jit_options_are_accepted():
    @tilelang.jit(out_idx=-1, target="llvm", execution_backend="cython", target_host="c",
                  verbose=False, debug_root_path=None)
    def add_one(n):
        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            with T.Kernel(1, threads=1):
                T.source(cpu=f"for (int i = 0; i < {n}; ++i) Y(i) = X(i) + 1.0f;")
        return main

    kernel = add_one(3)
    assert kernel.target == "cpu"
    np.testing.assert_array_equal(kernel(np.arange(3, dtype=np.float32)), [1, 2, 3])


# --- the profiler ----------------------------------------------------------

def scale_kernel(factor=2.0, n=T.symbolic("n")):
    @T.prim_func
    def scale(X: T.Tensor([n, 8], "float32"), Y: T.Tensor([n, 8], "float32")):
        with T.Kernel(1, threads=1):
            T.source(cpu=f"for (int64_t i = 0; i < X.shape(0) * 8; ++i) Y.data()[i] = X.data()[i] * "
                         f"{factor}f;")
    return tilejit.compile(scale, out_idx=[1], target="cpu")


def test_profiler_checks_against_a_reference_over_generated_inputs():
    kernel = scale_kernel(2.0, 16)
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    assert isinstance(profiler, tilelang.Profiler)
    profiler.assert_allclose(lambda X: X * 2, rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match=r"^Too many mismatched elements: 128 > 1 "
                                             r"\(100\.00% > 1\.00%\)"):
        profiler.assert_allclose(lambda X: X * 2 + 100)
    (x,) = profiler._get_inputs()
    assert x.shape == (16, 8) and x.dtype == np.float32
    ms = profiler.do_bench(warmup=1, rep=5)
    assert isinstance(ms, float) and ms > 0
    assert len(profiler.do_bench(n_warmup=1, n_repeat=4, quantiles=[0.5, 0.9])) == 2


def test_profiler_times_the_kernel_with_its_outputs_made_once():
    # A 1 MiB output: made by the first call only (one take from the host
    # block cache), then passed back through out=.
    kernel = scale_kernel(2.0, 1 << 15)
    profiler = kernel.get_profiler()
    assert profiler.bench_description == ""
    before = tilejit.host_cache_stats()
    assert profiler.do_bench(n_warmup=2, n_repeat=5) > 0
    after = tilejit.host_cache_stats()
    assert after["hits"] + after["misses"] == before["hits"] + before["misses"] + 1
    assert profiler.bench_description == (
        "kernel 'scale' (cpu), its 1 output(s) made once and passed through out=; inputs "
        "generated once; 5 timed calls after 6 warm-up calls; wall-clock ms per call, mean")
    profiler.do_bench(lambda X: kernel(X), n_warmup=1, n_repeat=3, return_mode="median")
    assert profiler.bench_description == (
        "func(*inputs) as given; inputs generated once; 3 timed calls after 5 warm-up calls; "
        "wall-clock ms per call, median")
    profiler.do_bench(n_warmup=1, n_repeat=2, quantiles=[0.5])
    assert profiler.bench_description.endswith("wall-clock ms per call, quantiles [0.5]")


@pytest.mark.parametrize("kind, check", [
    (tilelang.TensorSupplyType.Zero, lambda x: (x == 0).all()),
    (tilelang.TensorSupplyType.One, lambda x: (x == 1).all()),
    (tilelang.TensorSupplyType.Integer, lambda x: set(np.unique(x)) <= {-2, -1, 0, 1, 2}),
    (tilelang.TensorSupplyType.Uniform, lambda x: (np.abs(x) <= 1).all() and x.std() > 0.1),
    (tilelang.TensorSupplyType.Auto, lambda x: (np.abs(x) <= 1).all() and x.std() > 0.1),
    (tilelang.TensorSupplyType.Randn, lambda x: abs(float(x.mean())) < 0.5),
])
def test_tensor_supply_types(kind, check):
    (x,) = scale_kernel(2.0, 64).get_profiler(kind)._get_inputs()
    assert check(x)


def test_profiler_symbolic_dimensions_need_values():
    kernel = scale_kernel(2.0)
    profiler = kernel.get_profiler()
    with raises_exact(ValueError, "scale: input 'X' has the symbolic dimension n; give its value "
                                  "with dynamic_symbolic_constraints={'n': ...}"):
        profiler.do_bench()
    (x,) = profiler._get_inputs({"n": 5})
    assert x.shape == (5, 8)
    assert profiler.do_bench(n_warmup=1, n_repeat=2, dynamic_symbolic_constraints={"n": 5}) > 0
    with raises_exact(TypeError, "scale: tensor_supply_type must be a tilejit.TensorSupplyType, "
                                 "got 'normal'"):
        kernel.get_profiler("normal")


def test_do_bench_counts_and_modes():
    calls = []
    ms = tilelang.profiler.do_bench(lambda: calls.append(1), _n_warmup=3, _n_repeat=7)
    assert len(calls) == 1 + 3 + 3 + 7 and ms >= 0
    assert tilelang.profiler.do_bench(lambda: None, _n_warmup=1, _n_repeat=3,
                                      return_mode="min") >= 0
    with raises_exact(ValueError, "do_bench: return_mode must be 'mean', 'min', 'max' or "
                                  "'median', got 'p50'"):
        tilelang.profiler.do_bench(lambda: None, return_mode="p50")


# --- testing ---------------------------------------------------------------

def test_torch_assert_close_on_numpy():
    a = np.ones((10, 10), np.float32)
    b = a.copy()
    b[0, 0] = 1.5
    tilelang.testing.torch_assert_close(a, b, max_mismatched_ratio=0.01)
    with raises_exact(AssertionError, "Too many mismatched elements: 1 > 0 (1.00% > 0.10%) with "
                                      "atol=0.001, rtol=0.01; the greatest difference is 0.5 at "
                                      "index (0, 0) (LHS 1, RHS 1.5)"):
        tilelang.testing.torch_assert_close(a, b)
    with raises_exact(AssertionError, "shape mismatch: LHS has shape (10, 10), RHS has shape "
                                      "(100,)"):
        tilelang.testing.torch_assert_close(a, b.reshape(-1))
    with raises_exact(AssertionError, "dtype mismatch: LHS is float32, RHS is float64"):
        tilelang.testing.torch_assert_close(a, a.astype(np.float64))
    tilelang.testing.torch_assert_close(a, a.astype(np.float64), check_dtype=False)
    nan = np.array([np.nan, 1.0])
    tilelang.testing.torch_assert_close(nan, nan)


def test_set_random_seed_repeats_numpy_draws():
    tilelang.testing.set_random_seed(7)
    first = np.random.rand(3)
    tilelang.testing.set_random_seed(7)
    np.testing.assert_array_equal(first, np.random.rand(3))


# --- the caches ------------------------------------------------------------

def unique_kernel(tag):
    @T.prim_func
    def cached(X: T.Tensor([4], "float32")):
        with T.Kernel(1, threads=1):
            T.source(cpu=f"X(0) = 1.0f;  // {tag}")
    return tilejit.compile(cached, target="cpu")


def test_disable_cache_skips_the_disk_cache():
    stores = tilejit.cache_stats()["disk"]["stores"]
    tilelang.disable_cache()
    try:
        assert not tilelang.is_cache_enabled()
        unique_kernel(f"disabled-{os.getpid()}")
        assert tilejit.cache_stats()["disk"]["stores"] == stores
    finally:
        tilelang.enable_cache()
    assert tilelang.is_cache_enabled()
    unique_kernel(f"enabled-{os.getpid()}")
    assert tilejit.cache_stats()["disk"]["stores"] == stores + 1


def test_clear_cache_removes_disk_entries_only(tmp_path):
    previous = tilejit._C.cache_dir()
    tilejit.set_cache_dir(str(tmp_path))
    try:
        unique_kernel(f"clear-{os.getpid()}")
        entries = [p for p in os.listdir(tmp_path) if p.endswith(".bin")]
        assert len(entries) == 1
        (tmp_path / "notes.txt").write_text("kept")
        assert tilelang.cache.clear_cache() == 1
        assert os.listdir(tmp_path) == ["notes.txt"]
    finally:
        tilejit.set_cache_dir(previous)


# --- the autotuner ---------------------------------------------------------

def tuned_factory(counter):
    @tilelang.autotune(configs=[{"factor": 2.0, "pad": 0}, {"factor": 3.0, "pad": 0}],
                       ref_prog=lambda X: X * 2, warmup=1, rep=2)
    @tilelang.jit(out_idx=[1], target="cpu")
    def scaled(n, factor=1.0, pad=0):
        counter.append((n, factor, pad))

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            with T.Kernel(1, threads=1):
                T.source(cpu=f"for (int i = 0; i < {n}; ++i) Y(i) = X(i) * {factor}f + {pad};")
        return main
    return scaled


def test_autotune_passes_straight_through_when_the_tuned_arguments_are_given():
    built = []
    scaled = tuned_factory(built)
    kernel = scaled(8, factor=3.0, pad=0)
    assert built == [(8, 3.0, 0)] and scaled.best_config is None
    np.testing.assert_array_equal(kernel(np.ones(8, np.float32)), np.full(8, 3.0))
    assert scaled(8, 3.0, 0) is kernel


def test_autotune_tunes_on_the_target_when_they_are_absent():
    built = []
    scaled = tuned_factory(built)
    kernel = scaled(16)
    # Both configs compiled; factor 3 fails the reference check.
    assert sorted(built) == [(16, 2.0, 0), (16, 3.0, 0)]
    assert scaled.best_config == {"factor": 2.0, "pad": 0}
    assert isinstance(scaled.best_latency, float) and scaled.best_latency > 0
    np.testing.assert_array_equal(kernel(np.ones(16, np.float32)), np.full(16, 2.0))
    assert scaled(16) is kernel and len(built) == 2  # remembered
    # A partial choice: the caller's pad wins, factor is tuned.
    scaled(16, pad=0)


def test_autotune_errors():
    with raises_exact(TypeError, "tilejit.autotune decorates a @tilejit.jit function (write "
                                 "@autotune(...) above @jit(...))"):
        tilelang.autotune(configs=[{"a": 1}])(lambda a: a)

    @tilelang.autotune(configs=[{"block": 1}])
    @tilelang.jit(target="cpu")
    def f(n):
        return None

    with raises_exact(TypeError, "f: autotune config names block, which the factory does not "
                                 "take"):
        f(1)

    @tilelang.autotune(configs=lambda n: [{"k": 1}, {"k": 2}], warmup=1, rep=1)
    @tilelang.jit(target="cpu")
    def g(n, k=0):
        raise ValueError(f"k={k} does not build")

    with pytest.raises(RuntimeError, match=r"^g: no autotune config compiled and passed its "
                                           r"check \(2 tried\): ValueError: k=. does not build$"):
        g(1)


def test_surface_argument_errors():
    with raises_exact(TypeError, "tilejit.jit: a pass_configs key must be a str or a "
                                 "PassConfigKey, got int"):
        tilelang.jit(pass_configs={3: True})
    with raises_exact(TypeError, "tilejit.autotune takes its configs by keyword: "
                                 "@autotune(configs=[...]) above @jit(...)"):
        tilelang.autotune(lambda: None, configs=[])

    @tilelang.autotune(configs=[])
    @tilelang.jit(target="cpu")
    def h(n, k=0):
        return None

    with raises_exact(TypeError, "h: autotune configs must be a non-empty list of dicts of "
                                 "argument values"):
        h(1)
    kernel = scale_kernel(2.0, 4)
    with raises_exact(AssertionError, "scale: the kernel returned 1 outputs and the reference 2"):
        kernel.get_profiler().assert_allclose(lambda X: (X, X))


@needs_tile_cpu
def test_helpers_and_spellings_from_tilelangs_examples():
    # T.get_block_binding, T.index_to_coordinates, T.clamp, T.cdiv, T.Unroll,
    # T.Vectorized: what TileLang's examples write, with TileLang's meaning.
    @T.prim_func
    def main(A: T.Tensor((4, 6), "float32"), B: T.Tensor((4, 6), "float32")):
        with T.Kernel(T.cdiv(24, 8), threads=1) as bx:
            assert T.get_block_binding(0) is bx
            for k in T.Unroll(8):
                i, j = T.index_to_coordinates(T.get_block_binding() * 8 + k, (4, 6))
                B[i, j] = T.clamp(A[i, j], -0.5, 0.5)
            for v in T.Vectorized(1):
                B[0, v] = B[0, v] + 0.0

    a = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    b = tilejit.compile(main, out_idx=[1], target="cpu")(a)
    np.testing.assert_array_equal(np.asarray(b), np.clip(a, -0.5, 0.5))
    with pytest.raises(ValueError, match=r"T\.get_block_binding: dim 1, but the T\.Kernel at "
                                         r".*has a grid of 1 dimension\(s\)"):
        @T.prim_func
        def wrong(A: T.Tensor((4,), "float32")):
            with T.Kernel(4) as bx:
                A[T.get_block_binding(1)] = 1.0

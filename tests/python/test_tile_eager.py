"""TileLang's eager style (language/eager.py): a jit function whose body
declares its tensor parameters, reads T.const dimensions from them and
returns its T.empty outputs, called with the tensors themselves or compiled
with the dimensions given by keyword; checked against numpy on the CPU, and
compiled by NVRTC for CUDA where tilejit's cuda target is available (a GPU,
or the null driver, bench/null_driver, first on LD_LIBRARY_PATH)."""

import inspect

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
import tilejit.language as T
from support import raises_exact, tilejit_cuda_unavailable

F = __file__


def here():
    return inspect.currentframe().f_back.f_lineno


def at(line, col):
    return f"{F}:{line}:{col}"


def line_of(text):
    """The line of this file that holds `text`."""
    with open(F) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@tilelang.jit(target="cpu")
def vector_add(X, Y, block_M=16, block_N=32, dtype=T.float32):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), dtype)
    Y: T.Tensor((M, N), dtype)
    Z = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        X_s = T.alloc_shared((block_M, block_N), dtype)
        Y_s = T.alloc_shared((block_M, block_N), dtype)
        Z_f = T.alloc_fragment((block_M, block_N), dtype)
        T.copy(X[by * block_M, bx * block_N], X_s)
        T.copy(Y[by * block_M, bx * block_N], Y_s)
        for i, j in T.Parallel(block_M, block_N):
            Z_f[i, j] = X_s[i, j] + Y_s[i, j]
        T.copy(Z_f, Z[by * block_M, bx * block_N])

    return Z


@tilelang.jit(target="cpu")
def matmul(A, B, block_M, block_N, block_K, dtype=T.float32, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared((block_K, block_N), dtype)
        acc = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_s)
            T.copy(B[k * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, acc)
        T.copy(acc, C[by * block_M, bx * block_N])

    return C


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_elementwise_add_called_with_tensors():
    vector_add.cache_clear()
    x, y = rand(64, 96), rand(64, 96, seed=1)
    z = vector_add(x, y)
    np.testing.assert_allclose(z, x + y, rtol=1e-6)
    assert z.shape == (64, 96) and z.dtype == np.float32
    # The configuration by keyword, as TileLang's example passes it.
    z = vector_add(x, y, block_M=32, block_N=32, dtype=T.float32)
    np.testing.assert_allclose(z, x + y, rtol=1e-6)


def test_specialises_on_each_shape_and_caches_the_kernel():
    vector_add.cache_clear()
    a, b = rand(32, 64), rand(32, 64, seed=2)
    c, d = rand(48, 160), rand(48, 160, seed=3)
    np.testing.assert_allclose(vector_add(a, b), a + b, rtol=1e-6)
    assert vector_add.cache_size() == 1
    np.testing.assert_allclose(vector_add(c, d), c + d, rtol=1e-6)
    assert vector_add.cache_size() == 2
    # Hits, by either spelling of the configuration.
    np.testing.assert_allclose(vector_add(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(vector_add(c, d, 16), c + d, rtol=1e-6)
    np.testing.assert_allclose(vector_add(Y=d, X=c), c + d, rtol=1e-6)
    np.testing.assert_allclose(vector_add(Y=d, X=c), c + d, rtol=1e-6)
    assert vector_add.cache_size() == 2
    # compile() with the dimensions by keyword finds the same kernel.
    kernel = vector_add.compile(M=48, N=160)
    assert vector_add.cache_size() == 2
    np.testing.assert_allclose(kernel(c, d), c + d, rtol=1e-6)
    # Specialised: the dimensions are constants, in the shapes and the grid.
    assert vector_add.get_tir(M=48, N=160).script().splitlines()[:2] == [
        "func vector_add(X: float32[48, 160], Y: float32[48, 160], Z: float32[48, 160])",
        "kernel(bx, by in [5, 3], threads tx in [128]):"]


def test_gemm_compile_with_constants_then_direct_call():
    a, b = rand(64, 48), rand(48, 96, seed=4)
    kernel = matmul.compile(M=64, N=96, K=48, block_M=32, block_N=32, block_K=16)
    assert isinstance(kernel, tilejit.Kernel)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)
    # A direct call with the same shapes and configuration reuses it.
    before = matmul.cache_size()
    np.testing.assert_allclose(matmul(a, b, 32, 32, 16), a @ b, rtol=1e-4, atol=1e-4)
    assert matmul.cache_size() == before


def test_gemm_in_float16_as_tilelang_writes_it():
    a, b = rand(64, 32).astype(np.float16), rand(32, 64, seed=6).astype(np.float16)
    c = matmul(a, b, 32, 32, 16, dtype=T.float16)
    assert c.dtype == np.float16
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_tilelang_compile_takes_either_style():
    pf = matmul.get_tir(M=32, N=32, K=32, block_M=32, block_N=32, block_K=32)
    kernel = tilelang.compile(pf, target="cpu")
    a, b = rand(32, 32), rand(32, 32, seed=5)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with raises_exact(ValueError, "matmul: out_idx is given, but the prim_func returns its "
                                  "T.empty outputs"):
        tilelang.compile(pf, out_idx=[2], target="cpu")

    @tilelang.jit(out_idx=[1], target="cpu")
    def twice(n):
        @T.prim_func
        def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.serial(n):
                    Y[i] = X[i] * 2
        return main

    kernel = tilelang.compile(twice.get_tir(8), out_idx=[1], target="cpu")
    np.testing.assert_allclose(kernel(rand(8)), rand(8) * 2)
    # The factory style's compile() is its call.
    assert twice.compile(8) is twice(8)


def test_inputs_declared_in_place_of_outputs():
    # TileLang's other eager form: every tensor a parameter, none returned.
    @tilelang.jit(target="cpu")
    def scale(X, Y, factor=3.0):
        N = T.const("N")
        X: T.Tensor((N,), T.float32)
        Y: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                Y[i] = X[i] * factor

    x, y = rand(10), np.zeros(10, np.float32)
    assert scale(x, y) is None
    np.testing.assert_allclose(y, x * 3.0, rtol=1e-6)


def test_a_shape_mismatch_between_two_arguments_names_both():
    line = line_of("    B: T.Tensor((K, N), dtype)")
    with raises_exact(ValueError, f"{at(line, 5)}: matmul: T.const 'K': A.shape[1] = 48 "
                                  f"but B.shape[0] = 40"):
        matmul(rand(64, 48), rand(40, 96), 32, 32, 16)


def test_an_argument_whose_fixed_dimension_differs():
    @tilelang.jit(target="cpu")
    def rows(X):
        M = T.const("M")
        X: T.Tensor((M, 4), T.float32)
        with T.Kernel(1, threads=1):
            X[0, 0] = 1.0

    line = here()
    with raises_exact(ValueError, f"{at(line - 4, 9)}: rows: argument 'X' has shape (8, 5), "
                                  f"but its annotation gives (8, 4)"):
        rows(np.zeros((8, 5), np.float32))


def test_a_const_no_argument_binds():
    @tilelang.jit(target="cpu")
    def loose(X):
        M, K = T.const("M, K")
        X: T.Tensor((M,), T.float32)
        with T.Kernel(1, threads=1):
            X[0] = K

    line = here()
    with raises_exact(ValueError, f"{at(line - 5, 16)}: loose: T.const 'K' is not bound: no "
                                  f"tensor argument's annotation has it as a dimension; pass "
                                  f"that tensor, or give K=... to loose.compile()"):
        loose(np.zeros(4, np.float32))
    # Given to compile(), it is bound.
    x = np.zeros(4, np.float32)
    loose.compile(M=4, K=7)(x)
    assert x[0] == 7


def test_compile_refuses_an_unknown_keyword():
    with raises_exact(TypeError, "matmul: unexpected keyword argument 'Q': neither a parameter "
                                 "nor a T.const of matmul"):
        matmul.compile(M=4, N=4, K=4, Q=1, block_M=4, block_N=4, block_K=4)


def test_const_and_empty_outside_an_eager_function():
    line = here()
    msg = ("is only valid in the body of a @tilejit.jit function in TileLang's eager style (one "
           "whose body declares its tensor parameters: A: T.Tensor((M, N), dtype))")
    with raises_exact(ValueError, f"{at(line + 4, 9)}: T.const {msg}"):
        T.const("M, N, K")
    with raises_exact(ValueError, f"{at(line + 6, 9)}: T.empty {msg}"):
        T.empty((4, 4), "float32")


def test_an_output_not_returned():
    @tilelang.jit(target="cpu")
    def lost(X):
        N = T.const("N")
        X: T.Tensor((N,), T.float32)
        Y = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1):
            Y[0] = X[0]

    with raises_exact(ValueError, "lost: the T.empty tensor 'Y' is not returned"):
        lost(np.zeros(4, np.float32))


@pytest.mark.skipif(bool(tilejit_cuda_unavailable()), reason=tilejit_cuda_unavailable() or "-")
def test_the_eager_gemm_compiles_for_cuda():
    kernel = matmul.retarget("cuda").compile(M=256, N=256, K=128, block_M=64, block_N=64,
                                             block_K=32, dtype=T.float16)
    source = kernel.get_kernel_source()
    assert "__global__" in source and "matmul" in source


def test_a_missing_tensor_argument():
    with raises_exact(TypeError, "vector_add: tensor argument 'Y' is missing; give every "
                                 "tensor, or compile without tensors: vector_add.compile(<T.const "
                                 "values>, <configuration>)"):
        vector_add(rand(4, 4))


def test_a_tensor_declared_after_the_kernel_began():
    @tilelang.jit(target="cpu")
    def late(X, Y):
        N = T.const("N")
        X: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=1):
            X[0] = 1.0
        Y: T.Tensor((N,), T.float32)

    line = here()
    with raises_exact(ValueError, f"{at(line - 2, 9)}: late: 'Y' is declared after the kernel "
                                  f"began; declare every T.Tensor parameter and T.empty output "
                                  f"before the first tile statement"):
        late(np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_a_parameter_declared_with_another_annotation():
    @tilelang.jit(target="cpu")
    def odd(X, n):
        X: T.Tensor((4,), T.float32)
        n: int
        with T.Kernel(1, threads=1):
            X[0] = 1.0

    line = here()
    with raises_exact(TypeError, f"{at(line - 4, 9)}: odd: 'n' is annotated with <class 'int'>; "
                                 f"a tensor parameter is declared T.Tensor(shape, dtype)"):
        odd(np.zeros(4, np.float32), 3)


def _gpu_or_skip():
    if tilejit_cuda_unavailable():
        pytest.skip(tilejit_cuda_unavailable())
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    return torch


def test_the_eager_examples_called_with_gpu_tensors():
    # TileLang's examples call the eager functions with torch tensors.
    torch = _gpu_or_skip()
    add, mm = vector_add.retarget("cuda"), matmul.retarget("cuda")
    x = torch.randn(200, 136, device="cuda")
    y = torch.randn(200, 136, device="cuda")
    z = add(x, y)
    assert z.is_cuda and z.shape == (200, 136)
    torch.testing.assert_close(z, x + y)
    a = torch.randn(256, 128, device="cuda").half()
    b = torch.randn(128, 192, device="cuda").half()
    c = mm(a, b, 64, 64, 32, dtype=T.float16)
    assert c.dtype == torch.float16
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=5e-2)

"""Every error path of a call from Python: the exception type of the
error's kind and the C++ message exactly; after each, nothing stays leased
and the next good call works."""

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import ml_dtypes, needs_ml_dtypes, pool_in_use, raises_exact


def seed_signature(dtype):
    """The seed operator's signature at toy sizes (heads 4, dim 8, topk 16),
    with a body that only copies, as the C++ call-error tests use."""
    @tilejit.jit(out_idx=[3], workspace_idx=[4], target="cpu")
    def sparse_attention_fwd(dtype):
        b, s, s_kv = T.symbolic("b"), T.symbolic("s"), T.symbolic("s_kv")

        @T.prim_func
        def main(Q: T.Tensor([b, s, 4, 8], dtype), KV: T.Tensor([b, s_kv, 8], dtype),
                 Indices: T.Tensor([b, s, 16], "int32"), Output: T.Tensor([b, s, 4, 8], dtype),
                 ws: T.Tensor([b * s, 16, 8], dtype)):
            with T.Kernel(b * s, threads=128) as bx:
                T.source(cpu="Output(bx / s, bx % s, 0, 0) = Q(bx / s, bx % s, 0, 0);")
        return main

    return sparse_attention_fwd(dtype)


@pytest.fixture(scope="module")
def k():
    return seed_signature("float32")


@pytest.fixture
def args():
    q = np.zeros((2, 3, 4, 8), np.float32)
    kv = np.zeros((2, 5, 8), np.float32)
    idx = np.zeros((2, 3, 16), np.int32)
    return q, kv, idx


@pytest.fixture(autouse=True)
def clean_after(request):
    yield
    assert pool_in_use() == 0


def test_arity(k, args):
    q, kv, idx = args
    with raises_exact(TypeError, "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 2: "
                                 "missing parameter #2 'Indices' (a parameter in neither out_idx "
                                 "nor workspace_idx is an input)"):
        k(q, kv)
    with raises_exact(TypeError, "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 4"):
        k(q, kv, idx, idx)
    with raises_exact(TypeError, "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 0: "
                                 "missing parameters #0 'Q', #1 'KV', #2 'Indices' (a parameter in "
                                 "neither out_idx nor workspace_idx is an input)"):
        k()
    with raises_exact(TypeError, "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), "
                                 "got 70"):
        k(*([q] * 70))
    with raises_exact(TypeError, "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 2: "
                                 "missing parameter #2 'Indices' (a parameter in neither out_idx "
                                 "nor workspace_idx is an input)"):
        k.workspace_bytes(q, kv)
    assert k(q, kv, idx).shape == (2, 3, 4, 8)


def test_dtype(k, args):
    q, kv, idx = args
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got int64"):
        k(q, kv, idx.astype(np.int64))
    with raises_exact(TypeError, "sparse_attention_fwd: argument #0 'Q': expected float32, got "
                                 "float64"):
        k(q.astype(np.float64), kv, idx)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got complex64"):
        k(q, kv, idx.astype(np.complex64))
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got >i4 (non-native byte order)"):
        k(q, kv, idx.astype(">i4"))
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got uint32"):
        k(q, kv, idx.astype(np.uint32))
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got bool"):
        k(q, kv, idx.astype(bool))
    assert k(q, kv, idx) is not None


@needs_ml_dtypes
def test_bfloat16_is_not_uint16():
    k16 = seed_signature("bfloat16")
    q = np.zeros((2, 3, 4, 8), ml_dtypes.bfloat16)
    kv = np.zeros((2, 5, 8), ml_dtypes.bfloat16)
    idx = np.zeros((2, 3, 16), np.int32)
    out = k16(q, kv, idx)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 3, 4, 8)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #0 'Q': expected bfloat16, got "
                                 "uint16"):
        k16(q.view(np.uint16), kv, idx)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #1 'KV': expected bfloat16, got "
                                 "float16"):
        k16(q, kv.astype(np.float16), idx)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #1 'KV': expected bfloat16, got "
                                 "float8_e4m3fn"):
        k16(q, kv.astype(ml_dtypes.float8_e4m3fn), idx)


def test_rank_and_static_dims(k, args):
    q, kv, idx = args
    with raises_exact(ValueError, "sparse_attention_fwd: argument #0 'Q': expected 4 dimensions "
                                  "[b, s, 4, 8], got 3 [2, 3, 4]"):
        k(q[:, :, :, 0], kv, idx)
    with raises_exact(ValueError, "sparse_attention_fwd: argument #0 'Q': dimension 2 must be 4, "
                                  "got 5 (shape [2, 3, 5, 8])"):
        k(np.zeros((2, 3, 5, 8), np.float32), kv, idx)
    with raises_exact(ValueError, "sparse_attention_fwd: argument #2 'Indices': dimension 2 must "
                                  "be 16, got 15 (shape [2, 3, 15])"):
        k(q, kv, idx[:, :, :15].copy())
    with raises_exact(ValueError, "sparse_attention_fwd: argument #0 'Q': has rank 9; tilejit "
                                  "supports at most 8 dimensions"):
        k(np.zeros((1,) * 9, np.float32), kv, idx)


def test_symbol_mismatch(k, args):
    q, kv, idx = args
    with raises_exact(ValueError, "sparse_attention_fwd: symbol 'b': Q.shape[0] = 2 but "
                                  "Indices.shape[0] = 1"):
        k(q, kv, idx[:1])
    with raises_exact(ValueError, "sparse_attention_fwd: symbol 'b': Q.shape[0] = 2 but "
                                  "KV.shape[0] = 3"):
        k(q, np.zeros((3, 5, 8), np.float32), idx)
    with raises_exact(ValueError, "sparse_attention_fwd: symbol 's': Q.shape[1] = 3 but "
                                  "Indices.shape[1] = 4"):
        k(q, kv, np.zeros((2, 4, 16), np.int32))


def test_none_and_non_tensors(k, args):
    q, kv, idx = args
    with raises_exact(TypeError, "sparse_attention_fwd: argument #0 'Q': expected a float32 "
                                 "tensor, got None"):
        k(None, kv, idx)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #1 'KV': expected a float32 "
                                 "tensor, got an integer (3)"):
        k(q, 3, idx)
    with raises_exact(TypeError, "sparse_attention_fwd: argument #1 'KV': expected a float32 "
                                 "tensor, got an object of type list (tensors are numpy arrays, "
                                 "torch tensors or objects with __dlpack__)"):
        k(q, [[0.0]], idx)


def test_non_contiguous_views(k, args):
    q, kv, idx = args
    strided = np.zeros((2, 5, 16), np.float32)[:, :, ::2]
    with raises_exact(ValueError, "sparse_attention_fwd: argument #1 'KV': expected a contiguous "
                                  "tensor, got strides [80, 16, 2] in elements ([320, 64, 8] in "
                                  "bytes) for shape [2, 5, 8]"):
        k(q, strided, idx)
    transposed = np.zeros((8, 5, 2), np.float32).T
    with raises_exact(ValueError, "sparse_attention_fwd: argument #1 'KV': expected a contiguous "
                                  "tensor, got strides [1, 2, 10] in elements ([4, 8, 40] in "
                                  "bytes) for shape [2, 5, 8]"):
        k(q, transposed, idx)
    record = np.zeros((2, 3, 16), dtype=[("i", "<i4"), ("pad", "<i2")])["i"]
    with raises_exact(ValueError, "sparse_attention_fwd: argument #2 'Indices': is not contiguous "
                                  "(byte strides [288, 96, 6], not multiples of the element size "
                                  "4)"):
        k(q, kv, record)
    assert k(q, np.ascontiguousarray(strided), idx)[0, 0, 0, 0] == 0  # the one element written


def test_symbol_values_must_be_non_negative():
    n = T.symbolic("n")

    @T.prim_func
    def shrink(X: T.Tensor([n + 2], "float32"), Y: T.Tensor([n], "float32")):
        T.source(cpu="")

    k = tilejit.compile(shrink, out_idx=[1], target="cpu")
    with raises_exact(ValueError, "shrink: symbol 'n' = -1 from X.shape[0] is negative; shapes "
                                  "must be non-negative"):
        k(np.zeros(1, np.float32))


def test_shape_arithmetic_never_wraps():
    m = T.symbolic("m")

    @T.prim_func
    def k(m: T.int64, Y: T.Tensor([m * m + 5], "float32")):
        T.source(cpu="for (int64_t i = 0; i < m * m + 5; ++i) Y(i) = float(i);")

    kernel = tilejit.compile(k, out_idx=[1], target="cpu")
    # m * m is 2^64 here: wrapped, the output would have 5 elements.
    with raises_exact(ValueError, "k: output 'Y' dimension 0 = m * m + 5 overflows int64 "
                                  "(m = 4294967296 from scalar #0 'm')"):
        kernel(2**32)
    np.testing.assert_array_equal(kernel(2), np.arange(9, dtype=np.float32))


def test_out_of_memory_is_a_memory_error(k, args):
    q, kv, idx = args
    assert issubclass(tilejit.OutOfMemoryError, MemoryError)
    tilejit.empty_cache()
    tilejit.set_workspace_limit(1024)
    try:
        with pytest.raises(tilejit.OutOfMemoryError) as info:
            k(q, kv, idx)
        assert str(info.value).startswith("workspace pool on cpu: cannot allocate ")
        assert "limit 1024 bytes (set TILEJIT_WORKSPACE_LIMIT" in str(info.value)
    finally:
        tilejit.set_workspace_limit(0)
    assert k(q, kv, idx) is not None


def test_target_that_is_not_available():
    @T.prim_func
    def gpu_only(X: T.Tensor([4], "float32")):
        T.source(cuda="")

    targets = tilejit._C.registered_targets()
    if "cuda" in targets and tilejit._C.target_available("cuda"):
        pytest.skip("a GPU is present: the cuda target is available")
    if "cuda" not in targets:  # the library was built without the CUDA backend
        with raises_exact(ValueError, "unknown target 'cuda'; registered targets: cpu"):
            tilejit.compile(gpu_only, target="cuda")
    else:
        with raises_exact(RuntimeError, "gpu_only: target 'cuda' is not available on this "
                                        "machine"):
            tilejit.compile(gpu_only, target="cuda")
    # "auto" asks the available backends: the CPU has no body for this kernel.
    available = ", ".join(t for t in targets if tilejit._C.target_available(t))
    with raises_exact(ValueError, "gpu_only: target 'auto' found no available target that can "
                                  f"run it (bodies given: cuda; available targets: {available})"):
        tilejit.compile(gpu_only)


def test_thread_limit_is_the_cuda_backends():
    # The declaration and the CPU accept 2000 threads (a CPU block runs on
    # one thread); only the CUDA backend's validation rejects them.
    @T.prim_func
    def wide(X: T.Tensor([4], "int32")):
        with T.Kernel(4, threads=2000):
            T.source(cpu="X(bx) = int32_t(bx);", cuda="")

    out = tilejit.compile(wide, out_idx=[0], target="cpu")()
    assert out.tolist() == [0, 1, 2, 3]
    if "cuda" not in tilejit._C.registered_targets():
        pytest.skip("tilejit was built without its CUDA backend")
    with raises_exact(ValueError, "wide: 2000 threads per block; CUDA allows 1 to 1024"):
        tilejit.compile(wide, out_idx=[0], target="cuda")


def test_exception_types():
    assert issubclass(tilejit.CompileError, Exception)
    assert not issubclass(tilejit.CompileError, RuntimeError)
    assert issubclass(tilejit.InternalError, RuntimeError)
    assert tilejit.CompileError.__module__ == "tilejit"
    assert tilejit.OutOfMemoryError.__name__ == "OutOfMemoryError"


def test_workspace_queries_check_their_inputs(k, args):
    q, kv, idx = args
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got int64"):
        k.workspace_bytes(q, kv, idx.astype(np.int64))
    with raises_exact(TypeError, "sparse_attention_fwd: argument #2 'Indices': expected int32, "
                                 "got int64"):
        k.workspace_layout(q, kv, idx.astype(np.int64))
    assert k.workspace_bytes(q, kv, idx) == 2 * 3 * 16 * 8 * 4


def test_exception_from_a_body_is_the_users_error():
    n = T.symbolic("n")

    @T.prim_func
    def checked(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
        with T.Kernel(n, threads=1) as bx:
            T.source(cpu="if (X(bx) < 0) throw std::invalid_argument(\"X must not be negative\");\n"
                         "Y(bx) = X(bx);")

    k = tilejit.compile(checked, out_idx=[1], target="cpu")
    x = np.arange(6, dtype=np.float32)
    x[4] = -1
    with raises_exact(ValueError, "checked: block (4, 0, 0) threw std::invalid_argument: "
                                  "X must not be negative"):
        k(x)
    x[4] = 4
    np.testing.assert_array_equal(k(x), x)


def test_compile_error_carries_its_source(monkeypatch, tmp_path):
    @T.prim_func
    def broken(X: T.Tensor([4], "float32")):
        T.source(cpu="X(0) = ;")

    monkeypatch.delenv("TILEJIT_KEEP_FAILED", raising=False)
    with pytest.raises(tilejit.CompileError) as info:
        tilejit.compile(broken, target="cpu")
    source = info.value.source
    assert "#line 1 \"broken_body\"\nX(0) = ;\n#line 2 \"broken_body\"\n" in source
    assert info.value.kept_path is None
    assert "set TILEJIT_KEEP_FAILED=1 to keep them" in str(info.value)

    monkeypatch.setenv("TILEJIT_KEEP_FAILED", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(tilejit.CompileError) as info:
        tilejit.compile(broken, target="cpu")
    kept = info.value.kept_path
    assert kept.startswith(str(tmp_path)) and kept.endswith("/broken.cpp")
    with open(kept) as f:
        assert f.read() == info.value.source == source
    assert f"\nkept: {kept} and the command's other files (TILEJIT_KEEP_FAILED=1)\n" \
        in str(info.value)

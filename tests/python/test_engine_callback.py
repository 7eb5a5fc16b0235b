"""TileLang's `tilelang.engine.callback` (`tilejit.engine.callback`): a
registered post-processing callback sees each kernel's generated source
before it is compiled and may change it (Note [Source post-processing]).
The CUDA hook is checked where a GPU is; the same mechanism is checked on
the CPU target through `_C.set_source_postproc`."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from tilejit import _C
from tilejit.engine.callback import (register_cuda_postproc_callback,
                                     register_hip_postproc_callback,
                                     unregister_cuda_postproc_callback,
                                     unregister_hip_postproc_callback)
from support import as_numpy, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu


def scale(n, factor):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(n):
                B[i] = A[i] * factor
    return main


@pytest.fixture
def clean():
    yield
    unregister_cuda_postproc_callback()
    unregister_hip_postproc_callback()
    _C.set_source_postproc("cpu", None)


def test_the_decorator_forms_and_override(clean):
    @register_cuda_postproc_callback
    def first(code, target):
        return code

    @register_cuda_postproc_callback(override=True)
    def second(code, target):
        return code

    with pytest.raises(ValueError, match="already registered .*second.*override=True"):
        register_cuda_postproc_callback(lambda code, target: code, override=False)
    with pytest.raises(ValueError, match="already registered"):
        register_cuda_postproc_callback(False)(lambda code, target: code)
    with pytest.raises(TypeError, match="expected a callable, a bool or nothing, got int"):
        register_cuda_postproc_callback(3)
    # tilejit has no HIP target: the callback is kept and never called.
    assert register_hip_postproc_callback(first) is first


@needs_tile_cpu
def test_a_hook_rewrites_the_source_that_is_compiled(clean):
    seen = []

    def triple(code, target):
        seen.append(target)
        assert "2.0f" in code
        return code.replace("2.0f", "3.0f")

    a = np.arange(64, dtype=np.float32)
    _C.set_source_postproc("cpu", triple)
    k = tilejit.compile(scale(64, 2.0), out_idx=[1], target="cpu")
    assert seen == ["cpu"]
    assert "3.0f" in k.get_kernel_source()
    np.testing.assert_array_equal(k(a), a * 3)
    # The cache keys on the returned source: without the hook the program
    # compiles as written.
    _C.set_source_postproc("cpu", None)
    k2 = tilejit.compile(scale(64, 2.0), out_idx=[1], target="cpu")
    np.testing.assert_array_equal(k2(a), a * 2)


@needs_tile_cpu
def test_a_hook_that_raises_fails_the_compile(clean):
    def refuse(code, target):
        raise RuntimeError("the callback refuses this kernel")

    _C.set_source_postproc("cpu", refuse)
    with pytest.raises(RuntimeError, match="the callback refuses this kernel"):
        tilejit.compile(scale(32, 5.0), out_idx=[1], target="cpu")
    _C.set_source_postproc("cpu", lambda code, target: 7)
    with pytest.raises(TypeError, match="the cpu source post-processing callback returned int, "
                                        "not the source as a str"):
        tilejit.compile(scale(32, 6.0), out_idx=[1], target="cpu")


_NO_CUDA = tilejit_cuda_unavailable()


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_the_cuda_callback_sees_and_changes_the_cuda_source(clean):
    @register_cuda_postproc_callback
    def tilelang_callback_cuda_postproc(code, target):
        assert target == "cuda" and "__global__" in code
        return code.replace("2.0f", "4.0f")

    a = np.arange(64, dtype=np.float32)
    k = tilejit.compile(scale(64, 2.0), out_idx=[1], target="cuda")
    np.testing.assert_array_equal(as_numpy(k(to_target("cuda", a))), a * 4)

"""The forms of a T.gemm's shared operands on Hopper (Note [Warpgroup
gemms] in src/backend/cuda/warpgroup_gemms.h): tiles of 64-byte rows take
the 64-byte swizzle and wgmma; a transposed A and tiles of 32-byte rows keep
mma.sync, which the lowering report says. Each runs on the CPU target and,
where a GPU is, on CUDA, against numpy; the paths are checked where
tilejit's cuda target can compile (a GPU, or the null driver of
bench/null_driver first on LD_LIBRARY_PATH)."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target

_NO_CUDA = tilejit_cuda_unavailable()


def gemm_kernel(m, n, k, block_m, block_n, block_k, trans_a, threads):
    """C = op(A) @ B with A stored K x M where `trans_a`."""
    a_shape = (k, m) if trans_a else (m, k)
    a_tile = (block_k, block_m) if trans_a else (block_m, block_k)

    @T.prim_func
    def main(A: T.Tensor(a_shape, "float16"), B: T.Tensor((k, n), "float16"),
             C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, "float16")
            B_s = T.alloc_shared((block_k, block_n), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                if trans_a:
                    T.copy(A[ko * block_k, by * block_m], A_s)
                else:
                    T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a)
            T.copy(C_f, C[by * block_m, bx * block_n])
    return main


GEMMS = {
    # A transposed: wgmma would read it M-major (not chosen: mma.sync).
    "trans_a": dict(m=128, n=128, k=96, block_m=64, block_n=64, block_k=32, trans_a=True,
                    threads=128),
    # K tiles of 16 halves: rows of 32 bytes (not chosen: mma.sync).
    "k16": dict(m=128, n=64, k=64, block_m=64, block_n=64, block_k=16, trans_a=False,
                threads=128),
    # K tiles of 32 halves: the 64-byte swizzle, on wgmma.
    "k32": dict(m=128, n=64, k=96, block_m=64, block_n=64, block_k=32, trans_a=False,
                threads=128),
}


@on_targets
@pytest.mark.parametrize("name", list(GEMMS))
def test_gemm_operand_forms(target, name):
    """Each form of the shared operands gives numpy's product on both
    targets (on Hopper, through wgmma or mma.sync as the choice says)."""
    p = GEMMS[name]
    rng = np.random.default_rng(3)
    a = rng.standard_normal((p["k"], p["m"]) if p["trans_a"] else (p["m"], p["k"]))
    b = rng.standard_normal((p["k"], p["n"]))
    a, b = a.astype(np.float16), b.astype(np.float16)
    kernel = tilejit.compile(gemm_kernel(**p), out_idx=[2], target=target)
    c = as_numpy(kernel(to_target(target, a), to_target(target, b)))
    ref = (a.T if p["trans_a"] else a).astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_gemm_operand_forms_lowering():
    """On sm_90a the 64-byte swizzle runs on wgmma; a transposed A and rows
    of 32 bytes keep mma.sync, the report saying why."""
    paths, layouts = {}, {}
    for name, p in GEMMS.items():
        k = tilejit.compile(gemm_kernel(**p), out_idx=[2], target="cuda",
                            extra_compile_flags=["--gpu-architecture=sm_90a"])
        (g,) = [e for e in k.lowering_report() if e.get("kind") == "op" and e["op"] == "T.gemm"]
        paths[name] = (g["path"], g["reason"])
        layouts[name] = {e["name"]: e["layout"] for e in k.lowering_report()
                         if e["kind"] == "buffer"}
    # The layouts the lowering chose, in the report: wgmma's swizzled panels
    # and its accumulator's rows, or mma.sync's padded rows.
    assert layouts["k32"] == {"A_s": "shared(pitch 32, rows 64, swizzle 64)",
                              "B_s": "shared(pitch 64, rows 32, swizzle 128)",
                              "C_f": "fragment(mma 64x64, warps 4x1, interleaved)"}
    assert layouts["k16"] == {"A_s": "shared(pitch 24, rows 64)",
                              "B_s": "shared(pitch 72, rows 16)",
                              "C_f": "fragment(mma 64x64, warps 2x2)"}
    assert paths["k32"] == ("wgmma_ss", "")
    assert paths["trans_a"][0] == "mma" and "transposed" in paths["trans_a"][1]
    assert paths["k16"][0] == "mma" and "not a swizzled shared tile" in paths["k16"][1]

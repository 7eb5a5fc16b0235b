"""A GEMM's epilogue through shared memory (Note [Staged epilogues] in
src/backend/cuda/staged_epilogue.h): on sm_90a the store of a
warp-specialised GEMM's accumulator to a bf16 or fp16 tensor goes through a
swizzled shared tile and a TMA store. The results are the program's bit for
bit (against tl.disable_staged_epilogue), at the tensor's edges too; the
report has the compiler's tile and both copies at the copy's line."""

import pytest

import tilejit
from support import tilejit_cuda_unavailable
from test_tile_coarse_k_steps import gemm, operands

_NO_CUDA = tilejit_cuda_unavailable()
_DIRECT = {"tl.disable_staged_epilogue": True}


# bf16 in pairs of blocks; fp16 with rows and columns past the tensor's end
# (1000: TMA writes none of them); B as [N, K]; blocks rasterised by
# T.use_swizzle(10).
@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("shape,dtype,trans_b,swizzle", [
    ((2048, 2048, 256), "bfloat16", False, 0), ((1000, 1000, 1000), "float16", False, 0),
    ((1024, 2048, 512), "float16", True, 0), ((2000, 2048, 256), "bfloat16", False, 10)])
def test_the_staged_store_writes_the_programs_result(shape, dtype, trans_b, swizzle):
    import torch
    m, n, k = shape
    a, b, ref = operands(m, n, k, dtype, trans_b, seed=1)
    ref = ref.to(getattr(torch, dtype))
    program = gemm(m, n, k, dtype, trans_b, c_dtype=dtype, swizzle=swizzle)
    staged = tilejit.compile(program, out_idx=[2], target="cuda")
    direct = tilejit.compile(program, out_idx=[2], target="cuda", pass_configs=_DIRECT)
    report = staged.lowering_report()
    [tile] = [e for e in report if e.get("kind") == "buffer" and e["name"] == "C_f_staged"]
    stores = [e for e in report if e.get("op") == "T.copy" and e["line"] == tile["line"]]
    assert [e["path"] for e in stores] == ["registers", "tma_store"], stores
    assert tile["placement"] == "shared" and tile["bytes"] == 128 * 128 * 2, tile
    assert "_staged" not in direct.get_kernel_source()
    c_staged, c_direct = staged(a, b), direct(a, b)
    assert torch.equal(c_staged, c_direct)
    torch.testing.assert_close(c_staged, ref, rtol=2e-2, atol=2e-2)

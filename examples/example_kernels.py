"""The examples' kernels from Python: the signatures and options of their C++
builders (examples/kernels/*.h) with the bodies read from those headers, so
C++ and Python compile the same text. Used by the Python GPU tests and the
example benchmark.

    from example_kernels import example_body, make_kernels
    splitk_matmul, sparse_attention_fwd, flash_decoding = make_kernels("cuda")
"""

import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parent / "kernels"


def example_body(header, name):
    """The raw string literal `name = R"delim(...)delim"` of
    examples/kernels/<header>, as the C++ compiler reads it."""
    text = (KERNELS / header).read_text()
    m = re.search(r"\b" + re.escape(name) + r'\s*=\s*R"([^()\\\s]{0,16})\((.*?)\)\1"', text, re.S)
    if m is None:
        raise LookupError(f'{header}: no raw string literal {name} = R"(...)"')
    return m.group(2)


def make_kernels(target="cuda"):
    """tilejit.jit factories for split-K matmul, sparse attention forward and
    flash-decoding with their CUDA bodies, in that order."""
    import tilejit
    from tilejit import language as T

    @tilejit.jit(out_idx=[2], workspace_idx=[3, 4], workspace_init={"tile_counter": "zero_once"},
                 target=target)
    def splitk_matmul(split_k):
        M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
        tiles = T.ceildiv(M, 32) * T.ceildiv(N, 32)
        body = example_body("splitk_matmul_cuda.h", "kSplitKCudaBody")

        @T.prim_func
        def main(A: T.Tensor([M, K], "float32"), B: T.Tensor([K, N], "float32"),
                 C: T.Tensor([M, N], "float32"), partial: T.Tensor([split_k, M, N], "float32"),
                 tile_counter: T.Tensor([tiles], "int32")):
            with T.Kernel(tiles, split_k, threads=256):
                T.source(cuda=body)

        return main

    @tilejit.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7], target=target)
    def sparse_attention_fwd(heads, dim, topk, block=64):
        b, s, s_kv = T.symbolic("b"), T.symbolic("s"), T.symbolic("s_kv")
        block_num = b * s
        prologue = (f"constexpr int64_t heads = {heads}, dim = {dim}, topk = {topk}, "
                    f"block = {block};\n")
        body = prologue + example_body("sparse_attention_cuda.h", "kSparseAttentionCudaBody")

        @T.prim_func
        def main(Q: T.Tensor([b, s, heads, dim], "bfloat16"),
                 KV: T.Tensor([b, s_kv, dim], "bfloat16"),
                 Indices: T.Tensor([b, s, topk], "int32"),
                 Output: T.Tensor([b, s, heads, dim], "bfloat16"),
                 ws_kv: T.Tensor([block_num, block, dim], "bfloat16"),
                 ws_s: T.Tensor([block_num, heads, block], "float32"),
                 ws_p: T.Tensor([block_num, heads, block], "bfloat16"),
                 ws_o: T.Tensor([block_num, heads, dim], "float32")):
            with T.Kernel(block_num, threads=128):
                T.source(cuda=body)

        return main

    @tilejit.jit(out_idx=[3], workspace_idx=[4, 5, 6], workspace_init={"counter": "zero_once"},
                 target=target)
    def flash_decoding(heads, dim, splits):
        b, s_kv = T.symbolic("b"), T.symbolic("s_kv")
        body = f"constexpr int64_t dim = {dim};\n" + example_body("flash_decoding.h",
                                                                   "kFlashDecodingCudaBody")

        @T.prim_func
        def main(Q: T.Tensor([b, heads, dim], "bfloat16"),
                 K: T.Tensor([b, s_kv, heads, dim], "bfloat16"),
                 V: T.Tensor([b, s_kv, heads, dim], "bfloat16"),
                 Out: T.Tensor([b, heads, dim], "bfloat16"),
                 o_partial: T.Tensor([b, heads, splits, dim], "float32"),
                 lse_partial: T.Tensor([b, heads, splits], "float32"),
                 counter: T.Tensor([b, heads], "int32")):
            with T.Kernel(splits, heads, b, threads=128):
                T.source(cuda=body)

        return main

    return splitk_matmul, sparse_attention_fwd, flash_decoding

"""A tile program that reads past a shared tile through a data-dependent index,
run by test_cuda_sanitizer_lines.py under compute-sanitizer's memcheck (a
script, not a test): the report must name this file's line of the read."""
import tilejit
import tilejit.language as T


@T.prim_func
def gather(A: T.Tensor((64,), "float32"), Idx: T.Tensor((64,), "int32"),
           B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64) as bx:
        S = T.alloc_shared((64,), "float32")
        tx = T.get_thread_binding()
        S[tx] = A[tx]
        B[tx] = S[Idx[tx]]  # the out-of-bounds read


if __name__ == "__main__":
    import torch

    kernel = tilejit.compile(gather, out_idx=[2], target="cuda")
    a = torch.zeros(64, device="cuda")
    idx = torch.arange(64, dtype=torch.int32, device="cuda")
    idx[5] = 1 << 20  # 4 MiB past S
    kernel(a, idx)
    torch.cuda.synchronize()

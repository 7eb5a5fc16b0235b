"""Where a tile GEMM's time goes on the GPU, without hardware counters: the
README GEMM (bf16 8192^3, 128 x 128 x 64 tiles, 128 threads, 3 stages) timed
whole and with a stage left out (the tile loads, the tensor-core gemm), and
the registers, spills and occupancy of the benchmark's kernels from NVRTC's
ptxas report (scripts/nvrtc_resources.py).

    python3 bench/bench_tile_stages.py [--sources DIR]

Prints a markdown table (machine, date, command). A variant that leaves a
stage out computes nonsense; only its time is read.
"""

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "tile"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import torch  # noqa: E402

import tilejit  # noqa: E402
import tilejit.language as T  # noqa: E402

N = 8192


def gemm(M, N, K, block_M, block_N, block_K, loads=True, mma=True, dtype="bfloat16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                if loads:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                if mma:
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return main


def median_ms(fn, reps=50):
    try:
        from triton.testing import do_bench
        return do_bench(fn, warmup=10, rep=reps)
    except ImportError:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        times = []
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)[len(times) // 2]


def resources(source_dir, name, source):
    path = Path(source_dir) / f"{name}.cu"
    path.write_text(source)
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "nvrtc_resources.py"), str(path)],
                         capture_output=True, text=True).stdout
    regs = spill = None
    for line in out.splitlines():
        if "Used" in line and "registers" in line:
            regs = int(line.split("Used")[1].split("registers")[0])
        if "spill stores" in line:
            spill = line.split(",")[1].strip()
    return regs, spill


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", default="/tmp/tilejit-stage-sources")
    args = ap.parse_args()
    os.makedirs(args.sources, exist_ok=True)
    dev = torch.cuda.get_device_name()
    print(f"# Stage split of the tile GEMM on {dev}, {datetime.date.today()}")
    print(f"# command: python3 bench/bench_tile_stages.py; triton do_bench medians\n")
    a = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    b = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    flops = 2 * N ** 3
    print("| variant | median ms | TFLOP/s (of the whole GEMM's work) | registers | spills |")
    print("|---|---|---|---|---|")
    for label, loads, mma in (("whole", True, True), ("tile loads only (no gemm)", True, False),
                              ("gemm only (no loads)", False, True),
                              ("neither (clear + epilogue)", False, False)):
        k = tilejit.compile(gemm(N, N, N, 128, 128, 64, loads, mma), out_idx=[-1], target="cuda")
        ms = median_ms(lambda: k(a, b))
        regs, spill = resources(args.sources, "gemm_" + label.split()[0], k.get_kernel_source())
        print(f"| {label} | {ms:.3f} | {flops / ms / 1e9:.1f} | {regs} | {spill} |")
    print("| torch.matmul | {:.3f} | {:.1f} | - | - |".format(
        *(lambda ms: (ms, flops / ms / 1e9))(median_ms(lambda: torch.matmul(a, b)))))

    import flash_attention as fa
    print("\n| flash attention config (block_M, block_N, stages, threads) | registers | spills |")
    print("|---|---|---|")
    for cfg in ((64, 64, 1, 128), (128, 128, 2, 256)):
        k = fa.flashattn.retarget("cuda")(2, 16, 8192, 128, False, block_M=cfg[0],
                                          block_N=cfg[1], num_stages=cfg[2], threads=cfg[3],
                                          dtype="bfloat16")
        src = k.get_kernel_source()
        regs, spill = resources(args.sources, "fa_{}_{}".format(*cfg), src)
        print(f"| {cfg} | {regs} | {spill} |")


if __name__ == "__main__":
    main()

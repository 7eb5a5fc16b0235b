"""Per-call overhead of tilejit from Python (a benchmark, not a test).

The no-op kernel of bench/bench_call_overhead.cpp: 3 inputs, 1 output, 4
workspaces, 2 dynamic symbols (m, n), one block, an empty body, called with
numpy arrays. Rows:

  seed approach   np.empty for the output and each of the 4 workspaces on
                  every call, then the same PrimFunc compiled with all 8
                  parameters as inputs (out_idx and workspace_idx empty),
                  called with every buffer: what TileLang-Ascend's workspace
                  auto-allocation does per call;
  tilejit         op(a, b, c): checks, symbol solving, the output (a numpy
                  array over tilejit's memory), one pooled workspace lease,
                  the launch;
  floor           the 8-input kernel with preallocated buffers: the cost of
                  one Python call into tilejit and the launch, nothing
                  allocated (neither approach can go below it);
  tilejit out=    op(a, b, c, out=d): tilejit without the output allocation.

Each row is the median over many rounds of the mean time of a batch of
calls, timed with time.perf_counter_ns; the rounds interleave the rows, so
that a noisy neighbour or the allocator's state weighs on all of them alike.
The seed approach's time swings with glibc's heap state (freeing its fresh
buffers can trim the heap, and the next call faults the pages back in), so
its fastest round is shown too, and the ratio is given against both. Run:

    python3 bench/bench_python.py [--repeat 200] [--number 2000]

The target is tilejit >= 3x faster than the seed approach.
"""

import argparse
import os
import platform
import statistics
import sys
import time
import timeit

import numpy as np

import tilejit
from tilejit import language as T

M, N = 64, 32


def noop():
    """The benchmarks' no-op kernel (bench/noop_kernel.h for C++): an empty
    body for the CPU and for CUDA (128 threads); bench_python_cuda.py uses it
    too."""
    m, n = T.symbolic("m"), T.symbolic("n")

    @T.prim_func
    def noop(A: T.Tensor([m, n], "float32"), B: T.Tensor([n], "float32"),
             C: T.Tensor([m], "float32"), D: T.Tensor([m, n], "float32"),
             W1: T.Tensor([m], "float32"), W2: T.Tensor([n], "float32"),
             W3: T.Tensor([m, n], "float32"), W4: T.Tensor([64], "int32")):
        with T.Kernel(1, threads=128):
            T.source(cpu="", cuda="")

    return noop


def measure(stmts, env, repeat, number):
    """Per statement: (median, fastest) ns per call over `repeat` rounds."""
    timers = [timeit.Timer(s, globals=env, timer=time.perf_counter_ns) for s in stmts]
    for t in timers:
        t.timeit(number)  # warm-up: caches, pool blocks, branch predictors
    samples = [[] for _ in stmts]
    for _ in range(repeat):
        for i, t in enumerate(timers):
            samples[i].append(t.timeit(number) / number)
    return [(statistics.median(s), min(s)) for s in samples]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="batches per row")
    parser.add_argument("--number", type=int, default=2000, help="calls per batch")
    args = parser.parse_args()

    tilejit.set_num_threads(1)  # one block: the launch runs inline either way
    func = noop()
    op = tilejit.compile(func, out_idx=[3], workspace_idx=[4, 5, 6, 7], target="cpu")
    seed = tilejit.compile(func, target="cpu")  # all 8 parameters are inputs

    a = np.zeros((M, N), np.float32)
    b = np.zeros((N,), np.float32)
    c = np.zeros((M,), np.float32)
    d = np.empty((M, N), np.float32)
    w = [np.empty((M,), np.float32), np.empty((N,), np.float32),
         np.empty((M, N), np.float32), np.empty((64,), np.int32)]
    env = dict(np=np, op=op, seed=seed, a=a, b=b, c=c, d=d, w=w, M=M, N=N)

    seed_stmt = ("seed(a, b, c, np.empty((M, N), np.float32), np.empty((M,), np.float32), "
                 "np.empty((N,), np.float32), np.empty((M, N), np.float32), "
                 "np.empty((64,), np.int32))")
    rows = [
        ("seed approach (np.empty x5 + 8-input call)", seed_stmt),
        ("tilejit op(a, b, c)", "op(a, b, c)"),
        ("floor: 8-input call, preallocated buffers", "seed(a, b, c, d, w[0], w[1], w[2], w[3])"),
        ("tilejit op(a, b, c, out=d)", "op(a, b, c, out=d)"),
    ]
    before = tilejit.pool_stats()
    timings = measure([stmt for _, stmt in rows], env, args.repeat, args.number)
    after = tilejit.pool_stats()
    calls = after["leases"] - before["leases"]
    allocs = after["device_allocs"] - before["device_allocs"]

    seed_median, seed_best = timings[0]
    tilejit_median = timings[1][0]
    print(f"# tilejit Python call overhead, {time.strftime('%Y-%m-%d')}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"# {args.repeat} interleaved rounds of {args.number} calls per case; "
          f"kernel: 3 inputs, 1 output, 4 workspaces, symbols m={M}, n={N}")
    print()
    print(f"| {'case':<45} | {'median ns':>9} | {'best ns':>7} | {'seed median / case':>18} |")
    print(f"|{'-' * 47}|{'-' * 11}|{'-' * 9}|{'-' * 20}|")
    for (label, _), (median, best) in zip(rows, timings):
        print(f"| {label:<45} | {median:9.0f} | {best:7.0f} | {seed_median / median:17.2f}x |")
    print()
    print(f"workspace pool: {calls} leases, {allocs} device allocations during the runs")
    ratio = seed_median / tilejit_median
    conservative = seed_best / tilejit_median
    print(f"tilejit vs seed approach: {ratio:.2f}x faster by medians, {conservative:.2f}x against "
          f"the seed's fastest round (target >= 3x): "
          f"{'met' if conservative >= 3 else 'met by medians only' if ratio >= 3 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

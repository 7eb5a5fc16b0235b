"""What a CPU call with a large output costs, by where the output comes from
(a benchmark, not a test).

The kernel: B = A * 2 + 1 over a float32 matrix (4096 x 2048 by default,
32 MiB in and 32 MiB out: glibc maps a block that large afresh on every
malloc, whatever it freed before), a tile program of T.Parallel rows on all
of tilejit's CPU threads; mostly memory traffic. Rows:

  op(a)           tilejit makes the output: from the host block cache
                  (Note [Host block cache]), the block of the previous
                  call's output; before the cache, a fresh aligned_alloc
                  whose pages fault on first touch inside the kernel;
  cache off       op(a) with the cache's limit 0: a new block per call,
                  freed when the output dies (builds with the cache only);
  numpy out=      op(a, out=np.empty(...)): numpy makes the output;
  out=            op(a, out=b): preallocated, nothing made (the floor, and
                  what profiler.do_bench() times).

Each row is the median over interleaved rounds of the mean time of a batch
of calls, after one untimed call that sets the row up (the previous call's
output dies before the next call, as in a loop that keeps no result). The
same script runs against a build from before the cache (it leaves out the
row that needs it), for the before/after comparison. Run:

    python3 bench/bench_output_alloc.py [--rows 4096] [--cols 2048] [--rounds 15] [--number 10]
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import tilejit
from tilejit import language as T


@tilejit.jit(out_idx=[1], target="cpu")
def scale(m, n, block_m=16):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            for i, j in T.Parallel(block_m, n):
                B[bx * block_m + i, j] = A[bx * block_m + i, j] * 2.0 + 1.0
    return main


def batch_ms(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=15, help="batches per row")
    parser.add_argument("--number", type=int, default=10, help="calls per batch")
    args = parser.parse_args()

    op = scale(args.rows, args.cols)
    shape = (args.rows, args.cols)
    a = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    b = np.empty_like(a)
    np.testing.assert_array_equal(op(a), a * 2 + 1)
    has_cache = hasattr(tilejit, "host_cache_stats")
    limit = tilejit.host_cache_stats()["limit"] if has_cache else 0

    def cache_limit(nbytes):
        if has_cache:
            tilejit.set_host_cache_limit(nbytes)

    # (label, the limit it runs under, the call)
    rows = [("op(a): tilejit makes the output", limit, lambda: op(a))]
    if has_cache:
        rows.append(("op(a), host block cache off (limit 0)", 0, lambda: op(a)))
    rows += [("numpy out=: op(a, out=np.empty(...))", limit,
              lambda: op(a, out=np.empty(shape, np.float32))),
             ("out=: op(a, out=b), preallocated", limit, lambda: op(a, out=b))]
    samples = [[] for _ in rows]
    hits = misses = 0
    for _, nbytes, fn in rows:  # warm-up: pages, the cache's block, the thread pool
        cache_limit(nbytes)
        batch_ms(fn, 2)
    for _ in range(args.rounds):
        for i, (_, nbytes, fn) in enumerate(rows):
            cache_limit(nbytes)
            fn()  # the cache's block back after the 'cache off' row emptied it
            before = tilejit.host_cache_stats() if has_cache else None
            samples[i].append(batch_ms(fn, args.number))
            if has_cache and i == 0:
                after = tilejit.host_cache_stats()
                hits += after["hits"] - before["hits"]
                misses += after["misses"] - before["misses"]
    cache_limit(limit)
    profiler = op.get_profiler()
    bench_ms = profiler.do_bench(n_warmup=5, n_repeat=args.rounds * args.number)

    medians = [statistics.median(s) for s in samples]
    floor = medians[-1]
    mib = args.rows * args.cols * 4 / 2**20
    print(f"# CPU call cost by where the output comes from, {time.strftime('%Y-%m-%d')}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{tilejit.get_num_threads()} tilejit threads, Python {platform.python_version()}, "
          f"numpy {np.__version__}, host block cache {'yes' if has_cache else 'no'}")
    print(f"# B = A * 2 + 1, float32 {args.rows} x {args.cols} ({mib:.0f} MiB out); "
          f"{args.rounds} interleaved rounds of {args.number} calls per row")
    print()
    print(f"| {'case':<40} | {'median ms':>9} | {'case / out=':>11} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 13}|")
    for (label, _, _), median in zip(rows, medians):
        print(f"| {label:<40} | {median:9.2f} | {median / floor:10.2f}x |")
    print()
    if has_cache:
        print(f"host block cache during the op(a) rows: {hits} hits, {misses} misses")
    what = getattr(profiler, "bench_description", "")
    print(f"profiler.do_bench(): {bench_ms:.2f} ms" + (f" ({what})" if what else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

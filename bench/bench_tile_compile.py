"""The time from a tile-language factory call to a callable kernel, on the CPU.

    PYTHONPATH=build-py/site python3 bench/bench_tile_compile.py [repeats]

For each example of tests/python/test_tile_kernels.py (and the README GEMM of
test_tile_frontend.py), three medians:

  front end   the factory's function: Python tracing into the C++ builder,
              which returns the PrimFunc;
  lowering    tilejit.compile with the disk cache warm: verify, the passes,
              CPU codegen, the cache key and loading the cached shared object
              (the host compiler is skipped);
  host cc     tilejit.compile with an empty disk cache, minus `lowering`: the
              host compiler's run on the generated unit.

Then a factory cache hit: the README GEMM factory called again with the
arguments it was built for, matmul(1024, 1024, 1024, ...), per call.
Targets (issue 10): front end + lowering <= 50 ms, host cc <= 2 s per example,
cache hit <= 5 us.
"""
import os
import statistics
import sys
import tempfile
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import tilejit  # noqa: E402
import tilejit as tilelang  # noqa: E402
from test_tile_frontend import readme_matmul  # noqa: E402
from test_tile_kernels import (elementwise_add, rms_norm, softmax_rows,  # noqa: E402
                               splitk_gemm_counted, symbolic_gemm)

EXAMPLES = [
    ("elementwise_add(4096)", elementwise_add, (4096,)),
    ("gemm f32 256^3 (README)", tilelang.jit(readme_matmul, out_idx=[-1], target="cpu"),
     (256, 256, 256, 128, 128, 32, "float32", "float32")),
    ("gemm bf16 256^3 (README)", tilelang.jit(readme_matmul, out_idx=[-1], target="cpu"),
     (256, 256, 256, 128, 128, 32, "bfloat16")),
    ("gemm symbolic M, N, K", symbolic_gemm, ()),
    ("split-K gemm, counter", splitk_gemm_counted, (256, 256, 256, 4)),
    ("softmax rows (64, 256)", softmax_rows, (64, 256)),
    ("rms_norm (64, 256)", rms_norm, (64, 256)),
]


def median_s(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print("tilejit compile times, CPU; medians of %d (host cc: of 2)" % repeats)
    print("| example | front end (ms) | lowering (ms) | front end + lowering (ms) | host cc (s) |")
    print("|---|---|---|---|---|")
    warm_dir = tempfile.mkdtemp(prefix="tilejit-bench-warm-")
    for name, factory, args in EXAMPLES:
        func, options = factory._func, factory._options
        front = median_s(lambda: func(*args), repeats)
        pf = func(*args)

        def cold():
            tilejit.set_cache_dir(tempfile.mkdtemp(prefix="tilejit-bench-cold-"))
            tilejit.compile(pf, **options)

        cold_s = median_s(cold, 2)
        tilejit.set_cache_dir(warm_dir)
        tilejit.compile(pf, **options)  # fills the warm cache
        lower = median_s(lambda: tilejit.compile(pf, **options), repeats)
        print("| %s | %.1f | %.1f | %.1f | %.2f |" % (name, front * 1e3, lower * 1e3,
                                                     (front + lower) * 1e3, cold_s - lower))

    matmul = tilelang.jit(readme_matmul, out_idx=[-1], target="cpu")
    args = (1024, 1024, 1024, 128, 128, 32, "float32", "float32")
    matmul(*args)
    n = 200000
    best = min(timeit.repeat(lambda: matmul(*args), number=n, repeat=5)) / n
    print()
    print("factory cache hit, matmul(1024, 1024, 1024, 128, 128, 32, 'float32', 'float32') "
          "called again: %.2f us per call (best of 5 x %d)" % (best * 1e6, n))


if __name__ == "__main__":
    main()

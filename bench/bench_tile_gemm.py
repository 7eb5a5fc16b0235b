"""numpy's matmul at the tile GEMM's size, for bench_tile_gemm.sh.

    python3 bench/bench_tile_gemm.py [size] [repeats]

Prints the BLAS numpy runs (threadpoolctl when installed, else numpy's build
configuration), then "numpy <dtype> <size>^3: median <ms> ms, <GFLOP/s>" for
float32 (numpy has no bfloat16 matmul). The thread count is the caller's:
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, set before the import.
"""
import os
import sys
import time

import numpy as np


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        cfg = np.show_config(mode="dicts") if hasattr(np, "show_config") else {}
        blas = cfg.get("Build Dependencies", {}).get("blas", {}) if isinstance(cfg, dict) else {}
        return "threadpoolctl not installed; numpy built with %s %s (%s)" % (
            blas.get("name", "?"), blas.get("version", "?"), blas.get("openblas configuration", ""))
    return "; ".join(
        "%s %s: %s threads, kernel %s" % (i.get("internal_api"), i.get("version"),
                                          i.get("num_threads"), i.get("architecture"))
        for i in threadpool_info() if i.get("user_api") == "blas")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    print("numpy", np.__version__, "BLAS:", blas_info())
    print("OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s" % tuple(
        os.environ.get(v, "unset") for v in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                                             "OPENBLAS_L2_SIZE")))
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    times.sort()
    med = times[len(times) // 2]
    print("numpy float32 %d^3: median %.2f ms, %.1f GFLOP/s" % (n, med * 1e3, 2 * n ** 3 / med / 1e9))


if __name__ == "__main__":
    main()

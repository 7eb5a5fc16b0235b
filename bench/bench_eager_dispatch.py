"""The dispatch cost of an eager call's cache hit, against the factory
style's: medians of interleaved batches, on the CPU with a tiny kernel, so
that the host path dominates.

    PYTHONPATH=<site> python3 bench/bench_eager_dispatch.py
"""

import statistics
import time

import numpy as np

import tilejit
import tilejit.language as T

N = 16


@tilejit.jit(target="cpu")
def eager_add(X, Y, block=N):
    M = T.const("M")
    X: T.Tensor((M,), T.float32)
    Y: T.Tensor((M,), T.float32)
    Z = T.empty((M,), T.float32)
    with T.Kernel(1, threads=1):
        for i in T.serial(M):
            Z[i] = X[i] + Y[i]
    return Z


@tilejit.jit(out_idx=[2], target="cpu")
def factory_add(m, block=N):
    @T.prim_func
    def main(X: T.Tensor((m,), T.float32), Y: T.Tensor((m,), T.float32),
             Z: T.Tensor((m,), T.float32)):
        with T.Kernel(1, threads=1):
            for i in T.serial(m):
                Z[i] = X[i] + Y[i]
    return main


def per_call(f, reps=2000):
    start = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - start) / reps * 1e6


def main():
    x = np.ones(N, np.float32)
    y = np.ones(N, np.float32)
    kernel = factory_add(N)
    paths = {
        "kernel(x, y)": lambda: kernel(x, y),
        "factory(N)(x, y)": lambda: factory_add(N)(x, y),
        "eager(x, y)": lambda: eager_add(x, y),
        "factory(N, block=N)(x, y)": lambda: factory_add(N, block=N)(x, y),
        "eager(x, y, block=N)": lambda: eager_add(x, y, block=N),
    }
    for f in paths.values():
        f()  # compile
    samples = {name: [] for name in paths}
    for _ in range(31):
        for name, f in paths.items():
            samples[name].append(per_call(f))
    base = statistics.median(samples["factory(N)(x, y)"])
    print(f"{'path':26} {'median us':>10} {'vs factory':>11}")
    for name, s in samples.items():
        m = statistics.median(s)
        print(f"{name:26} {m:10.2f} {m / base:10.2f}x")


if __name__ == "__main__":
    main()

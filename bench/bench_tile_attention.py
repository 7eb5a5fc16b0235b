"""numpy's float32 version of the tile attention benchmarks' math, for
bench_tile_attention.sh:

    python3 bench/bench_tile_attention.py [repeats]

  flash_attention: softmax(Q K^T / sqrt(dim)) V per (batch, head), Q, K, V
                   [1, 1024, 8, 64], with batched matmuls;
  sparse:          the seed's sparse attention at the demo's size: each query
                   position gathers its topk = 512 KV rows (an index of -1
                   masks the row: its score is -inf), scores them against its
                   16 heads, softmaxes over the rows and sums the rows.
numpy has no bfloat16, so the sparse inputs are float32 here. The thread
count is the caller's: OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, set before
the import. Prints "numpy_<name> <problem>: median <ms> ms (min <ms> ms)".
"""
import sys
import time

import numpy as np


def timed(fn, repeats):
    fn()
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e3, times[0] * 1e3


def softmax_last(x):
    x = x - x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def flash_attention(q, k, v):
    # [b, seq, h, d] -> [b, h, seq, d]
    qt, kt, vt = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    p = softmax_last(qt @ kt.transpose(0, 1, 3, 2) * np.float32(1 / np.sqrt(q.shape[-1])))
    return (p @ vt).transpose(0, 2, 1, 3)


def sparse_attention(q, kv, idx):
    b, s, h, d = q.shape
    topk = idx.shape[-1]
    valid = idx >= 0
    # The gather as one take from the flattened KV (take_along_axis over a
    # broadcast KV is several times slower).
    flat = np.where(valid, idx, 0) + (np.arange(b, dtype=np.int32) * kv.shape[1])[:, None, None]
    rows = kv.reshape(-1, d).take(flat.reshape(-1), axis=0).reshape(b * s, topk, d)
    scores = q.reshape(b * s, h, d) @ rows.transpose(0, 2, 1) * np.float32(1 / np.sqrt(d))
    scores = np.where(valid.reshape(b * s, 1, topk), scores, np.float32(-np.inf))
    return (softmax_last(scores) @ rows).reshape(b, s, h, d)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    rng = np.random.default_rng(1)
    shape = (1, 1024, 8, 64)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    med, mn = timed(lambda: flash_attention(q, k, v), repeats)
    print("numpy_flash_attention b=1 seq=1024 heads=8 dim=64 f32: median %.2f ms (min %.2f ms)"
          % (med, mn))

    b, s, s_kv, h, d, topk = 2, 64, 4096, 16, 128, 512
    q = rng.standard_normal((b, s, h, d), dtype=np.float32)
    kv = rng.standard_normal((b, s_kv, d), dtype=np.float32)
    idx = rng.integers(0, s_kv, (b, s, topk), dtype=np.int32)
    idx.reshape(-1)[8::9] = -1
    med, mn = timed(lambda: sparse_attention(q, kv, idx), repeats)
    print("numpy_sparse b=%d s=%d s_kv=%d heads=%d dim=%d topk=%d f32: median %.2f ms (min %.2f ms)"
          % (b, s, s_kv, h, d, topk, med, mn))


if __name__ == "__main__":
    main()

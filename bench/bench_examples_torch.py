"""The three examples' CUDA kernels through tilejit against a torch
implementation of the same math, at sizes where each runs for a while (a
benchmark, not a test; prints a markdown table).

  splitk_matmul     C = A @ B in float32, split_k = 4 (examples/kernels/
                    splitk_matmul_cuda.h); torch: torch.matmul in float32
                    with TF32 off;
  sparse_attention  the seed's top-k sparse attention forward in bfloat16
                    (sparse_attention_cuda.h); torch: gather the KV rows by
                    index, masked softmax(Q K^T / sqrt(dim)), P V, with bf16
                    matmuls (float32 accumulation) and a float32 softmax;
  flash_decoding    one query token per sequence over a long KV cache in
                    bfloat16, 16 KV splits (flash_decoding.h); torch:
                    scaled_dot_product_attention.

Inputs are random; both implementations are checked against a float32
(float64 for the matmul) reference before anything is timed. Times are the
median of triton.testing.do_bench (which flushes the L2 cache between runs)
when triton is installed, else the median of 50 CUDA-event-timed runs after
10 warm-ups. The error column is ||out - ref|| / ||ref||.

The kernels use the CUDA bodies of examples/kernels/*.h, read from the
headers at run time (the same text the C++ examples compile).

    python3 bench/bench_examples_torch.py [--quick]

Exits 0 with a message when torch or a CUDA device is missing.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def rel_error(out, ref):
    out, ref = out.double(), ref.double()
    den = ref.norm().item()
    num = (out - ref).norm().item()
    return num / den if den > 0 else num


def timer(torch):
    """ms per call of fn (median)."""
    try:
        from triton.testing import do_bench

        def with_triton(fn):
            return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))

        return with_triton, "triton.testing.do_bench, median (L2 flushed between runs)"
    except Exception:  # no triton, or an older one without return_mode
        pass

    def with_events(fn):
        for _ in range(10):
            fn()
        times = []
        for _ in range(50):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    return with_events, "CUDA events, median of 50 runs after 10 warm-ups"


def bench_splitk(torch, op, quick):
    m, n, k = (1024, 1024, 4096) if quick else (2048, 2048, 8192)
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
    ref = torch.matmul(a.double(), b.double())

    def run_tilejit():
        return op(a, b)

    def run_torch():
        return torch.matmul(a, b)

    return (f"M={m} N={n} K={k} f32 split_k=4", run_tilejit, run_torch,
            lambda out: rel_error(out, ref), 1e-5)


def sparse_attention_torch(torch, q, kv, idx, scale):
    """Gather, masked softmax, matmul: bf16 matmuls with float32 accumulation
    and a float32 softmax, as an attention forward in torch is written."""
    b, s, heads, dim = q.shape
    s_kv = kv.shape[1]
    valid = (idx >= 0) & (idx < s_kv)
    rows = torch.where(valid, idx, torch.zeros_like(idx)).long()
    g = kv[torch.arange(b, device=kv.device).view(b, 1, 1), rows]  # [b, s, topk, dim]
    scores = torch.matmul(q, g.transpose(-1, -2)).float() * scale  # [b, s, heads, topk]
    scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
    p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return torch.matmul(p.to(q.dtype), g)


def sparse_attention_reference(torch, q, kv, idx):
    b, s, heads, dim = q.shape
    s_kv = kv.shape[1]
    valid = (idx >= 0) & (idx < s_kv)
    rows = torch.where(valid, idx, torch.zeros_like(idx)).long()
    out = torch.empty(b, s, heads, dim, device=q.device)
    step = 256  # chunks of queries keep the float32 gather small
    for s0 in range(0, s, step):
        sl = slice(s0, s0 + step)
        g = kv.float()[torch.arange(b, device=kv.device).view(b, 1, 1), rows[:, sl]]
        scores = torch.einsum("bshd,bstd->bsht", q[:, sl].float(), g) / dim ** 0.5
        scores = scores.masked_fill(~valid[:, sl, None, :], float("-inf"))
        p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        out[:, sl] = torch.einsum("bsht,bstd->bshd", p, g)
    return out


def bench_sparse(torch, op, quick):
    b, s, s_kv, heads, dim, topk = (1, 256, 4096, 16, 128, 512) if quick else \
        (2, 1024, 8192, 16, 128, 512)
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(b, s, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    kv = torch.randn(b, s_kv, dim, device="cuda", generator=g).to(torch.bfloat16)
    idx = torch.randint(-1, s_kv, (b, s, topk), device="cuda", generator=g, dtype=torch.int32)
    ref = sparse_attention_reference(torch, q, kv, idx)
    scale = dim ** -0.5

    def run_tilejit():
        return op(q, kv, idx)

    def run_torch():
        return sparse_attention_torch(torch, q, kv, idx, scale)

    return (f"b={b} s={s} s_kv={s_kv} heads={heads} dim={dim} topk={topk} bf16",
            run_tilejit, run_torch, lambda out: rel_error(out, ref), 1e-2)


def bench_flash(torch, op, quick):
    b, heads, dim, s_kv = (4, 32, 128, 8192) if quick else (8, 32, 128, 32768)
    g = torch.Generator(device="cuda").manual_seed(3)
    q = torch.randn(b, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(b, s_kv, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(b, s_kv, heads, dim, device="cuda", generator=g).to(torch.bfloat16)
    ref = torch.empty(b, heads, dim, device="cuda")
    for bi in range(b):  # one sequence at a time keeps the float32 copies small
        scores = torch.einsum("hd,thd->ht", q[bi].float(), k[bi].float()) / dim ** 0.5
        ref[bi] = torch.einsum("ht,thd->hd", torch.softmax(scores, dim=-1), v[bi].float())
    sdpa = torch.nn.functional.scaled_dot_product_attention
    kt, vt = k.transpose(1, 2), v.transpose(1, 2)  # [b, heads, s_kv, dim] views

    def run_tilejit():
        return op(q, k, v)

    def run_torch():
        return sdpa(q.unsqueeze(2), kt, vt).squeeze(2)

    return (f"b={b} heads={heads} dim={dim} s_kv={s_kv} bf16 splits=16", run_tilejit,
            run_torch, lambda out: rel_error(out, ref), 1e-2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("no CUDA device: torch is not installed; bench_examples_torch skipped")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: torch sees none; bench_examples_torch skipped")
        return 0
    import tilejit
    if "cuda" not in tilejit._C.registered_targets() or not tilejit._C.target_available("cuda"):
        print("no CUDA device: tilejit's cuda target is not available; bench_examples_torch skipped")
        return 0

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from example_kernels import make_kernels
    splitk, sparse, flash = make_kernels("cuda")
    measure, how = timer(torch)
    cases = [
        ("splitk_matmul", bench_splitk, lambda: splitk(4)),
        ("sparse_attention", bench_sparse, lambda: sparse(16, 128, 512)),
        ("flash_decoding", bench_flash, lambda: flash(32, 128, 16)),
    ]
    rows = []
    failed = False
    for name, setup, make in cases:
        t0 = time.perf_counter()
        op = make()
        jit_ms = (time.perf_counter() - t0) * 1e3
        shape, run_tilejit, run_torch, error_of, tol = setup(torch, op, args.quick)
        err_tilejit = error_of(run_tilejit())
        err_torch = error_of(run_torch())
        torch.cuda.synchronize()
        ok = err_tilejit < tol  # NaN fails
        failed |= not ok
        ms_tilejit = measure(run_tilejit)
        ms_torch = measure(run_torch)
        rows.append((name, shape, ms_tilejit, ms_torch, err_tilejit, err_torch, tol, ok, jit_ms))
        torch.cuda.empty_cache()

    print(f"# tilejit examples vs torch, {time.strftime('%Y-%m-%d')}, "
          f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; timing: {how}")
    print()
    print("| example | shape | tilejit ms | torch ms | tilejit / torch | tilejit rel. err | "
          "torch rel. err | check |")
    print("|---|---|---|---|---|---|---|---|")
    for name, shape, mt, mto, et, eto, tol, ok, _ in rows:
        print(f"| {name} | {shape} | {mt:.3f} | {mto:.3f} | {mt / mto:.2f}x | {et:.2e} | "
              f"{eto:.2e} | {'ok' if ok else 'FAIL'} (tol {tol:.0e}) |")
    print()
    print("jit (first call of each factory: NVRTC compile or disk-cache hit, and load): " +
          ", ".join(f"{r[0]} {r[8]:.0f} ms" for r in rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

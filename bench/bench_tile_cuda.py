"""The tile-language programs on a CUDA device against torch, in one run
(a benchmark, not a test; prints a markdown table).

Every tilejit row is a CPU-decorated program from the repository,
retargeted with ``factory.retarget("cuda")``:

  gemm             TileLang's README GEMM (tests/python/test_tile_frontend.py:
                   block 128x128x32, 128 threads, 3 stages, a ReLU epilogue)
                   and the GEMM of TileLang's autotuning example
                   (examples/tile/gemm.py: A @ B^T, C staged through shared
                   memory, T.use_swizzle(panel_size=10) when rasterised) in
                   the configurations of GEMM_AUTOTUNE, bf16 8192^3 with f32
                   accumulation, against torch.matmul (the ratio's base is
                   the fastest tilejit row of either program);
  flash attention  examples/tile/flash_attention.py, bf16, batch 2, heads 16,
                   seq 8192, dim 128, non-causal and causal, against
                   torch.nn.functional.scaled_dot_product_attention with the
                   cuDNN backend and with the flash backend (on [b, h, s, d]
                   views of the same [b, s, h, d] tensors: no copies);
  sparse attention examples/tile/sparse_attention.py at b 2, s 1024, s_kv 8192,
                   topk 512, heads 16, dim 128, bf16, against the phase-1
                   CUDA text operator (examples/kernels/sparse_attention_cuda.h
                   through examples/example_kernels.py);
  flash-decoding   examples/tile/flash_decoding.py, b 8, heads 32 (MHA),
                   s_kv 32768, dim 128, bf16, 8 splits, against SDPA (flash,
                   cuDNN and torch's own choice) and the phase-1 CUDA text
                   flash-decoding;
  first call       per example: factory call -> compiled kernel -> first run,
                   synchronised, in a new Python process with an empty
                   tilejit.set_cache_dir() directory (a compile), then in
                   another new process on the same directory (a disk hit);
                   the examples run in the order listed, one process per
                   cache state, the inputs and the CUDA context made before
                   the clock starts (so the first example also pays for
                   loading NVRTC).

Times are medians: triton.testing.do_bench (return_mode "median", at least
100 repetitions) when triton imports, else CUDA events around each of the
repetitions after a warm-up. Each row runs on its own: one that fails prints
its error in the table and the others still run. Ratios are this row's time
over the tilejit row's time of the same problem, measured in the same run
(below 1: faster than tilejit).

    python3 bench/bench_tile_cuda.py [--reps 100] [--no-first-call] [--only PROBLEM ...]

Exits 0 with a message when torch, a CUDA device or tilejit's cuda target is
missing.
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for sub in ("examples/tile", "examples", "tests/python"):
    sys.path.insert(0, str(ROOT / sub))

# The problems (the table's rows say them again).
GEMM_N = 8192
# (block_M, block_N, block_K) of the README GEMM; the fastest is the ratio's base.
GEMM_BLOCKS = [(128, 128, 32), (128, 128, 64)]
# (block_M, block_N, block_K, num_stages, thread_num, enable_rasteration) of
# the autotuning example's matmul.
GEMM_AUTOTUNE = [(128, 128, 64, 3, 128, False), (128, 128, 64, 3, 128, True),
                 (128, 256, 64, 3, 256, True), (256, 128, 64, 3, 256, True),
                 (128, 256, 32, 4, 256, True), (128, 128, 32, 4, 128, True),
                 (128, 128, 64, 2, 128, True), (128, 128, 64, 3, 256, True)]
FA = dict(batch=2, heads=16, seq=8192, dim=128)
# (block_M, block_N, num_stages, threads) of flashattn: TileLang's example
# defaults, then its Hopper configuration.
FA_CONFIGS = [(64, 64, 1, 128), (128, 128, 2, 256), (128, 64, 2, 128), (128, 64, 2, 256),
              (64, 64, 2, 128)]
SPARSE = dict(b=2, s=1024, s_kv=8192, topk=512, heads=16, dim=128)
DECODE = dict(b=8, heads=32, s_kv=32768, dim=128, splits=8)
# (num_split, block_N, num_stages, threads) of flashdecode.
DECODE_CONFIGS = [(8, 64, 1, 128), (16, 64, 1, 128), (8, 128, 1, 128), (8, 64, 2, 128),
                  (16, 64, 1, 64), (32, 64, 1, 64)]


def no_device(reason):
    print(f"bench_tile_cuda skipped: {reason}")
    return 0


# --- timing ----------------------------------------------------------------

def median_ms(fn, reps):
    """Median milliseconds per call of fn() over at least `reps` calls."""
    import torch
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 3, 1e-3)
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench is not None:
        rep_ms = max(100.0, estimate * reps * 1.2)  # do_bench's rep is a time: >= reps calls
        try:
            return float(do_bench(fn, warmup=max(25.0, estimate * 10), rep=rep_ms,
                                  return_mode="median"))
        except TypeError:  # an older triton: quantiles only
            return float(do_bench(fn, warmup=max(25.0, estimate * 10), rep=rep_ms,
                                  quantiles=[0.5])[0])
    for _ in range(max(10, reps // 10)):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for a, b in events:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in events)
    return times[len(times) // 2]


def timer_name():
    try:
        import triton
        from triton.testing import do_bench  # noqa: F401
        return f"triton {triton.__version__} do_bench (median)"
    except ImportError:
        return "torch.cuda.Event per call (median)"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, problem, impl, ms=None, flops=None, base_ms=None, note=""):
        self.rows.append((problem, impl, ms, flops, base_ms, note))

    def fail(self, problem, impl, error):
        self.rows.append((problem, impl, None, None, None,
                          f"FAILED: {type(error).__name__}: {str(error).splitlines()[0][:160]}"
                          if str(error) else f"FAILED: {type(error).__name__}"))

    def print(self):
        print("| problem | implementation | median ms | TFLOP/s | time vs tilejit | note |")
        print("|---|---|---|---|---|---|")
        for problem, impl, ms, flops, base_ms, note in self.rows:
            t = f"{ms:.3f}" if ms is not None else "-"
            tf = f"{flops / ms / 1e9:.1f}" if ms and flops else "-"
            ratio = f"{ms / base_ms:.2f}x" if ms and base_ms else "-"
            print(f"| {problem} | {impl} | {t} | {tf} | {ratio} | {note} |")


def row(table, problem, impl, fn, reps, flops=None, base_ms=None, note=""):
    """Times fn into the table; returns the median or None when it failed."""
    try:
        ms = median_ms(fn, reps)
    except Exception as e:  # one failing row must not stop the others
        table.fail(problem, impl, e)
        traceback.print_exc(file=sys.stderr)
        return None
    table.add(problem, impl, ms, flops, base_ms, note)
    return ms


def prepare(table, problem, impl, make):
    """make() -> the thing to time, or None (the failure goes in the table)."""
    try:
        return make()
    except Exception as e:
        table.fail(problem, impl, e)
        traceback.print_exc(file=sys.stderr)
        return None


# --- the examples, as the rows and the first-call children make them -------

def make_gemm():
    import torch
    import tilejit
    from test_tile_frontend import readme_matmul
    factory = tilejit.jit(readme_matmul, out_idx=[-1], target="cpu").retarget("cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(GEMM_N, GEMM_N, generator=g, device="cuda").to(torch.bfloat16)
    b = torch.randn(GEMM_N, GEMM_N, generator=g, device="cuda").to(torch.bfloat16)
    return (lambda blocks=(128, 128, 32): factory(GEMM_N, GEMM_N, GEMM_N, *blocks,
                                                  "bfloat16")), (a, b)


def make_autotune_gemm():
    import torch
    import gemm as example
    factory = example.matmul.retarget("cuda")
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(GEMM_N, GEMM_N, generator=g, device="cuda").to(torch.bfloat16)
    b = torch.randn(GEMM_N, GEMM_N, generator=g, device="cuda").to(torch.bfloat16)  # [N, K]
    return (lambda cfg: factory(GEMM_N, GEMM_N, GEMM_N, *cfg, dtype="bfloat16")), (a, b)


def make_flash(causal):
    import torch
    import flash_attention as fa
    factory = fa.flashattn.retarget("cuda")
    shape = (FA["batch"], FA["seq"], FA["heads"], FA["dim"])
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16)
               for _ in range(3))
    return (lambda cfg=(64, 64, 1, 128): factory(
        FA["batch"], FA["heads"], FA["seq"], FA["dim"], causal, block_M=cfg[0], block_N=cfg[1],
        num_stages=cfg[2], threads=cfg[3], dtype="bfloat16")), (q, k, v)


def sparse_inputs():
    import torch
    p = SPARSE
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(p["b"], p["s"], p["heads"], p["dim"], generator=g,
                    device="cuda").to(torch.bfloat16)
    kv = torch.randn(p["b"], p["s_kv"], p["dim"], generator=g, device="cuda").to(torch.bfloat16)
    indices = torch.randint(0, p["s_kv"], (p["b"], p["s"], p["topk"]), generator=g,
                            device="cuda", dtype=torch.int32)
    return q, kv, indices


def make_sparse():
    import sparse_attention as sa
    factory = sa.sparse_attention_fwd.retarget("cuda")
    return (lambda: factory(SPARSE["heads"], SPARSE["dim"], SPARSE["topk"],
                            dtype="bfloat16")), sparse_inputs()


def decode_inputs():
    import torch
    p = DECODE
    g = torch.Generator(device="cuda").manual_seed(3)
    q = torch.randn(p["b"], p["heads"], p["dim"], generator=g, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn(p["b"], p["s_kv"], p["heads"], p["dim"], generator=g,
                        device="cuda").to(torch.bfloat16) for _ in range(2))
    return q, k, v


def make_decode():
    import flash_decoding as fd
    factory = fd.flashdecode.retarget("cuda")
    p = DECODE
    return (lambda cfg=(p["splits"], 64, 1, 128): factory(
        p["b"], p["heads"], p["heads"], p["s_kv"], p["dim"], num_split=cfg[0], block_N=cfg[1],
        num_stages=cfg[2], threads=cfg[3], dtype="bfloat16")), decode_inputs()


def make_delta_rule():
    import numpy as np
    import torch
    import gated_delta_rule as gd
    factory = gd.chunk_gated_delta_rule_fwd.retarget("cuda")
    b, seq, heads, dk, dv = 2, 4096, 16, 64, 64
    ins = [torch.from_numpy(x).cuda()
           for x in gd.make_inputs(np.random.default_rng(4), b, seq, heads, dk, dv)]
    o = torch.empty(b, seq, heads, dv, device="cuda")
    s = torch.empty(b, heads, dk, dv, device="cuda")
    return (lambda: factory(heads, dk, dv)), (*ins, o, s)


EXAMPLES = {
    "gemm bf16 8192^3 (README GEMM)": make_gemm,
    "flash attention bf16 b2 h16 s8192 d128": lambda: make_flash(False),
    "sparse attention bf16 b2 s1024 s_kv8192 topk512 h16 d128": make_sparse,
    "flash-decoding bf16 b8 h32 s_kv32768 d128": make_decode,
    "gated delta rule f32 b2 seq4096 h16 dk64 dv64": make_delta_rule,
}


def first_call_child(cache_dir):
    """In a new process: each example's factory call, compile and first run,
    synchronised; prints one JSON object."""
    import torch
    import tilejit
    tilejit.set_cache_dir(cache_dir)
    results = {}
    for name, make in EXAMPLES.items():
        try:
            build, inputs = make()
            torch.cuda.synchronize()
            before = tilejit.cache_stats()
            t0 = time.perf_counter()
            kernel = build()
            t1 = time.perf_counter()
            kernel(*inputs)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            after = tilejit.cache_stats()
            # The jit (trace, lower, generate, compile or read the disk
            # cache, load) apart from the first run of the kernel itself.
            results[name] = {"ms": (t1 - t0) * 1e3, "run_ms": (t2 - t1) * 1e3,
                             "compiles": after["compiles"] - before["compiles"],
                             "disk_hits": after["disk_hits"] - before["disk_hits"]}
        except Exception as e:
            results[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                             if str(e) else type(e).__name__}
    print("FIRST_CALL " + json.dumps(results))


def first_call_rows(table):
    with tempfile.TemporaryDirectory(prefix="tilejit-bench-cache-") as cache_dir:
        runs = []
        for label in ("empty cache dir (compile)", "new process, same dir (disk hit)"):
            try:
                done = subprocess.run([sys.executable, __file__, "--first-call-child", cache_dir],
                                      capture_output=True, text=True, timeout=1800)
                line = next((ln for ln in done.stdout.splitlines()
                             if ln.startswith("FIRST_CALL ")), None)
                if line is None:
                    raise RuntimeError(f"the child printed no result (exit {done.returncode}): "
                                       f"{done.stderr.strip().splitlines()[-1:]}")
                runs.append((label, json.loads(line[len("FIRST_CALL "):])))
            except Exception as e:
                table.fail("first call", label, e)
        for name in EXAMPLES:
            for label, results in runs:
                r = results.get(name, {"error": "not run"})
                if "error" in r:
                    table.add(f"first call: {name}", label, note=f"FAILED: {r['error']}")
                else:
                    table.add(f"first call: {name}", label, r["ms"],
                              note=f"jit only; {r['compiles']} compiles, {r['disk_hits']} disk "
                                   f"hits; then the first run {r['run_ms']:.1f} ms")


# --- the timed rows ---------------------------------------------------------

def gemm_rows(table, reps):
    import torch
    problem = f"gemm bf16 {GEMM_N}^3"
    flops = 2 * GEMM_N ** 3
    made = prepare(table, problem, "tilejit README GEMM", make_gemm)
    base = None
    if made:
        build, (a, b) = made
        for blocks in GEMM_BLOCKS:
            label = "tilejit README GEMM ({}x{}x{}, 128 thr, 3 stages, ReLU)".format(*blocks)
            kernel = prepare(table, problem, label, lambda: build(blocks))
            if kernel:
                t = row(table, problem, label, lambda: kernel(a, b), reps, flops)
                base = t if base is None or (t is not None and t < base) else base
    made_at = prepare(table, problem, "tilejit autotune-example GEMM", make_autotune_gemm)
    if made_at:
        build_at, (a_at, b_at) = made_at
        for cfg in GEMM_AUTOTUNE:
            label = ("tilejit autotune-example GEMM, A @ B^T ({}x{}x{}, {} stages, {} thr, "
                     "{})").format(*cfg[:5], "swizzle 10" if cfg[5] else "no swizzle")
            kernel = prepare(table, problem, label, lambda: build_at(cfg))
            if kernel:
                t = row(table, problem, label, lambda: kernel(a_at, b_at), reps, flops)
                base = t if base is None or (t is not None and t < base) else base
    if made:
        row(table, problem, "torch.matmul", lambda: torch.matmul(a, b), reps, flops, base)


def flash_rows(table, reps, causal):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    problem = (f"flash attention bf16 b{FA['batch']} h{FA['heads']} s{FA['seq']} d{FA['dim']}"
               f"{' causal' if causal else ''}")
    flops = 4 * FA["batch"] * FA["heads"] * FA["seq"] ** 2 * FA["dim"] // (2 if causal else 1)
    made = prepare(table, problem, "tilejit flashattn", lambda: make_flash(causal))
    if not made:
        return
    build, (q, k, v) = made
    base = None
    for cfg in FA_CONFIGS:
        label = "tilejit flashattn ({}x{}, {} stages, {} thr)".format(*cfg)
        kernel = prepare(table, problem, label, lambda: build(cfg))
        if kernel:
            t = row(table, problem, label, lambda: kernel(q, k, v), reps, flops)
            base = t if base is None or (t is not None and t < base) else base
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # [b, h, s, d] views
    for name, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION),
                          ("flash", SDPBackend.FLASH_ATTENTION)):
        def sdpa(backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        row(table, problem, f"torch SDPA, {name} backend", sdpa, reps, flops, base)


def sparse_rows(table, reps):
    problem = ("sparse attention bf16 b{b} s{s} s_kv{s_kv} topk{topk} h{heads} d{dim}"
               .format(**SPARSE))
    p = SPARSE
    flops = 4 * p["b"] * p["s"] * p["heads"] * p["topk"] * p["dim"]
    made = prepare(table, problem, "tilejit tile sparse attention", make_sparse)
    base = None
    if made:
        build, (q, kv, indices) = made
        kernel = prepare(table, problem, "tilejit tile sparse attention", build)
        if kernel:
            base = row(table, problem, "tilejit tile sparse attention (block 64)",
                       lambda: kernel(q, kv, indices), reps, flops)

        def text_kernel():
            from example_kernels import make_kernels
            _, sparse_attention_fwd, _ = make_kernels("cuda")
            return sparse_attention_fwd(p["heads"], p["dim"], p["topk"])
        text = prepare(table, problem, "phase-1 CUDA text operator", text_kernel)
        if text:
            row(table, problem, "phase-1 CUDA text operator", lambda: text(q, kv, indices), reps,
                flops, base)


def decode_rows(table, reps):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    p = DECODE
    problem = "flash-decoding bf16 b{b} h{heads} s_kv{s_kv} d{dim}".format(**p)
    flops = 4 * p["b"] * p["heads"] * p["s_kv"] * p["dim"]
    made = prepare(table, problem, "tilejit flashdecode", make_decode)
    if not made:
        return
    build, (q, k, v) = made
    base = None
    for cfg in DECODE_CONFIGS:
        label = "tilejit flashdecode ({} splits, block {}, {} stages, {} thr)".format(*cfg)
        kernel = prepare(table, problem, label, lambda: build(cfg))
        if kernel:
            t = row(table, problem, label, lambda: kernel(q, k, v), reps, flops)
            base = t if base is None or (t is not None and t < base) else base
    qt = q.unsqueeze(2)                           # [b, h, 1, d]
    kt, vt = k.transpose(1, 2), v.transpose(1, 2)  # [b, h, s_kv, d] views
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                          ("cuDNN", SDPBackend.CUDNN_ATTENTION), ("torch's choice", None)):
        def sdpa(backend=backend):
            if backend is None:
                return F.scaled_dot_product_attention(qt, kt, vt)
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt)
        row(table, problem, f"torch SDPA, {name}", sdpa, reps, flops, base)

    def text_kernel():
        from example_kernels import make_kernels
        _, _, flash_decoding = make_kernels("cuda")
        return flash_decoding(p["heads"], p["dim"], 16)
    text = prepare(table, problem, "phase-1 CUDA text flash-decoding", text_kernel)
    if text:
        row(table, problem, "phase-1 CUDA text flash-decoding (16 splits)",
            lambda: text(q, k, v), reps, flops, base)


SECTIONS = {
    "gemm": gemm_rows,
    "flash": lambda t, r: flash_rows(t, r, False),
    "flash-causal": lambda t, r: flash_rows(t, r, True),
    "sparse": sparse_rows,
    "decode": decode_rows,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="repetitions per row (>= 100)")
    parser.add_argument("--no-first-call", action="store_true",
                        help="skip the first-call rows (two new processes)")
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), metavar="PROBLEM",
                        help=f"run only these problems' rows ({', '.join(sorted(SECTIONS))})")
    parser.add_argument("--first-call-child", metavar="CACHE_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        return no_device("torch is not installed")
    if not torch.cuda.is_available():
        return no_device("torch sees no CUDA device")
    import tilejit
    if "cuda" not in tilejit._C.registered_targets() or not tilejit._C.target_available("cuda"):
        return no_device("tilejit's cuda target is not available")
    if args.first_call_child:
        first_call_child(args.first_call_child)
        return 0
    reps = max(args.reps, 100)

    command = " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT)] + sys.argv[1:])
    print(f"# tilejit tile programs on {torch.cuda.get_device_name(0)}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# command: python3 {command}; torch {torch.__version__}, Python "
          f"{platform.python_version()}; timing: {timer_name()}, >= {reps} repetitions per row")
    print()
    table = Table()
    if not args.no_first_call and not args.only:
        first_call_rows(table)  # first: new processes, before this one compiled anything
    for name, section in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        try:
            section(table, reps)
        except Exception as e:  # a section's set-up (an import, an allocation)
            table.fail("(section)", getattr(section, "__name__", "?"), e)
            traceback.print_exc(file=sys.stderr)
        torch.cuda.empty_cache()
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-call cost of a tilejit kernel registered as a PyTorch operator
(tilejit.torch.register), against its direct call (a benchmark, not a test;
prints a markdown table).

The kernel: Y[n * r] = 2 X[i] + j through a workspace W[n] (float32), n from
X's length, r a scalar input, n = 256, r = 2; one launch. Rows:

  direct call       kernel(x, 2): the phase-1 Python call (checks, symbols,
                    the output from torch's allocator, one pooled workspace
                    lease, the launch on torch's current stream);
  torch op          torch.ops.<ns>.<name>(x, 2): the same through torch's
                    dispatcher (which calls the kernel);
  torch op, empty   for comparison, an operator whose implementation is a
                    Python function that makes the output with torch.empty
                    and passes it through out= (what register() does only
                    for a kernel without tensor inputs);
  graph: direct     (CUDA) 100 direct calls captured in one CUDA graph,
                    replayed: replay time / 100;
  graph: torch op   (CUDA) the same with the operator.

Host rows: the median over the batches of (host time of `calls` calls, plus
torch.cuda.synchronize() on CUDA) / calls, rows interleaved batch by batch.
Graph rows: the median over the batches of (time of 10 replays +
synchronize) / (10 * 100). Runs on the CPU too (the first two rows) when
torch has no CUDA device or tilejit no CUDA backend; --device cpu forces it.
Exits 0 with a message when torch is missing.

    python3 bench/bench_torch_op.py [--batches 21] [--calls 2000] [--device cpu|cuda]
"""

import argparse
import statistics
import sys
import time

N, R = 256, 2
GRAPH_CALLS = 100
REPLAYS = 10


def make_kernel(tilejit, T, target):
    n, r = T.symbolic("n"), T.symbolic("r")
    cpu = ("for (int64_t i = 0; i < n; ++i) { W(i) = 2.0f * X(i);\n"
           "  for (int64_t j = 0; j < r; ++j) Y(i * r + j) = W(i) + float(j); }")
    cuda = ("const int64_t i = bx * 256 + threadIdx.x;\n"
            "if (i < n) { W(i) = 2.0f * X(i);\n"
            "  for (int64_t j = 0; j < r; ++j) Y(i * r + j) = W(i) + float(j); }\n")

    @T.prim_func
    def repeat(X: T.Tensor([n], "float32"), Y: T.Tensor([n * r], "float32"),
               W: T.Tensor([n], "float32"), r: T.int32):
        with T.Kernel(T.ceildiv(n, 256), threads=256):
            T.source(cpu=cpu, cuda=cuda)

    return tilejit.compile(repeat, out_idx=[1], workspace_idx=[2], target=target)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=21)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("bench_torch_op: torch is not installed; nothing to measure")
        return 0
    import tilejit
    import tilejit.torch
    from tilejit import language as T

    device = args.device
    if device is None:
        cuda_ok = (torch.cuda.is_available() and "cuda" in tilejit._C.registered_targets()
                   and tilejit._C.target_available("cuda"))
        device = "cuda" if cuda_ok else "cpu"
    kernel = make_kernel(tilejit, T, device)
    op = tilejit.torch.register(kernel, "tilejit_bench::repeat")
    lib = torch.library.Library("tilejit_bench", "FRAGMENT")
    lib.define("repeat_empty(Tensor X, SymInt r) -> Tensor")
    lib.impl("repeat_empty",
             lambda x, r: kernel(x, r, out=torch.empty(x.shape[0] * r, device=x.device)),
             "CUDA" if device == "cuda" else "CPU")
    op_empty = torch.ops.tilejit_bench.repeat_empty
    x = torch.randn(N, device=device)
    expected = (2 * x[:, None] + torch.arange(R, dtype=x.dtype, device=device)).reshape(-1)
    for fn in (kernel, op, op_empty):
        torch.testing.assert_close(fn(x, R), expected)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def host(fn):
        def batch():
            sync()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn(x, R)
            sync()
            return (time.perf_counter() - t0) / args.calls
        return batch

    rows = {"direct call": host(kernel), "torch op": host(op), "torch op, empty": host(op_empty)}
    if device == "cuda":
        graphs = {}
        for name, fn in (("graph: direct", kernel), ("graph: torch op", op)):
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the capture
                for _ in range(3):
                    fn(x, R)
            torch.cuda.current_stream().wait_stream(side)
            sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outs = [fn(x, R) for _ in range(GRAPH_CALLS)]
            graph.replay()
            sync()
            torch.testing.assert_close(outs[-1], expected)
            graphs[name] = (graph, outs)

            def replay(graph=graph):
                sync()
                t0 = time.perf_counter()
                for _ in range(REPLAYS):
                    graph.replay()
                sync()
                return (time.perf_counter() - t0) / (REPLAYS * GRAPH_CALLS)
            rows[name] = replay

    for batch in rows.values():  # warm-up
        batch()
    times = {name: [] for name in rows}
    for _ in range(args.batches):
        for name, batch in rows.items():
            times[name].append(batch())

    direct = statistics.median(times["direct call"])
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(f"tilejit kernel as a torch operator ({where}, torch {torch.__version__}; n = {N}, "
          f"r = {R}, one workspace; median of {args.batches} batches)")
    print()
    print("| call | us per call | vs direct call |")
    print("|---|---:|---:|")
    for name, samples in times.items():
        t = statistics.median(samples)
        print(f"| {name} | {t * 1e6:.2f} | {t / direct:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

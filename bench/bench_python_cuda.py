"""Per-call cost of tilejit from Python on a CUDA device, with torch tensors
(a benchmark, not a test; prints a markdown table).

The no-op kernel of bench/bench_cuda_call.cpp: inputs A[m, n], B[n], C[m]
float32, output D[m, n], workspaces W1[m], W2[n], W3[m, n] float32 and
W4[64] int32, symbols m = 64, n = 32, one block of 128 threads, an empty
CUDA body. Rows:

  tilejit          op(a, b, c): checks, symbols, the output from torch's
                   caching allocator, one pooled workspace lease, the launch
                   on torch's current stream;
  tilejit out=     op(a, b, c, out=d): without the output allocation;
  tilejit floor    the same PrimFunc jitted with no out_idx / workspace_idx,
                   called with all 8 buffers preallocated: one Python call
                   into tilejit and the launch, nothing allocated;
  seed approach    a torch.empty for the output and for each of the 4
                   workspaces on every call, then that 8-input call: what
                   TileLang-Ascend's workspace auto-allocation does;
  bare launch      cuLaunchKernel of the same kernel with preallocated
                   buffers and a prebuilt argument struct, called from
                   Python through ctypes (the Python floor);
  bare launch C++  the same from C++, read from bench/bench_cuda_call's
                   output when that program has been built (the floor of
                   the issue's "Python call <= 1.5x the bare launch").

How the bare launch is made: the generated translation unit
(op.get_source()) is compiled by cupy's NVRTC (cupy.RawKernel) and the
CUfunction handle (RawKernel.kernel.ptr) is launched with ctypes on
libcuda.so.1's cuLaunchKernel, with kernelParams pointing at one ctypes
struct {void* ptrs[8]; int64_t syms[2];}: the kernel's whole argument ABI
(Note [Kernel argument ABI] in src/backend/cuda/cuda_backend_internal.h).
Passing that struct through cupy's own launcher would need cupy to pack an
80-byte by-value struct, which it does not do; ctypes adds about a
microsecond of Python-to-C conversion, so the C++ number, when available, is
the stricter floor. Should cupy be missing or fail to compile the generated
source (it must find cuda_fp16.h / cuda_bf16.h), a source with the same ABI
and an empty body is compiled instead, and the table says so.

Each row: the median over 21 batches of (host time of 2000 calls +
torch.cuda.synchronize()) / 2000, the rows interleaved batch by batch.
Exits 0 with a message when torch or a CUDA device is missing.

    python3 bench/bench_python_cuda.py [--batches 21] [--calls 2000] [--cpp-bench PATH]
"""

import argparse
import ctypes
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

M, N = 64, 32  # as in bench_python.py
ROOT = Path(__file__).resolve().parents[1]


def no_device(reason):
    print(f"no CUDA device: {reason}; bench_python_cuda skipped")
    return 0


# The ABI of every tilejit CUDA kernel with 8 tensor parameters and 2
# symbols, with an empty body: the fallback when the generated source does
# not compile under cupy.
FALLBACK_SOURCE = r"""
struct Args { void* ptrs[8]; long long syms[2]; };
extern "C" __global__ void __launch_bounds__(128) tilejit_kernel(const __grid_constant__ Args a) {}
"""


class Args(ctypes.Structure):
    _fields_ = [("ptrs", ctypes.c_void_p * 8), ("syms", ctypes.c_int64 * 2)]


def bare_launcher(source, pointers):
    """A no-argument callable that launches `source`'s tilejit_kernel with
    cuLaunchKernel through ctypes, and a note on how it was built. Returns
    (None, why) when it cannot be built."""
    try:
        import cupy
    except ImportError:
        return None, "cupy is not installed"
    kernel = None
    note = "op.get_source() compiled by cupy (NVRTC)"
    errors = []
    for src, what in ((source, note),
                      (FALLBACK_SOURCE, "an empty kernel of the same ABI compiled by cupy (NVRTC)")):
        try:
            # The generated source includes tilejit's device headers by name.
            device_headers = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                          "device", "cuda")
            raw = cupy.RawKernel(src, "tilejit_kernel",
                                 options=("-std=c++17", "-I" + os.path.normpath(device_headers)))
            func = raw.kernel.ptr  # compiles and loads in the current (primary) context
            kernel, note = raw, what
            break
        except Exception as e:  # try the fallback
            errors.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if kernel is None:
        return None, "cupy could not compile the kernel (" + "; ".join(errors) + ")"
    if errors:
        note += f" (the generated source did not compile: {errors[0]})"
    libcuda = ctypes.CDLL("libcuda.so.1")
    launch = libcuda.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    args = Args()
    for i, p in enumerate(pointers):
        args.ptrs[i] = p
    args.syms[0], args.syms[1] = M, N
    params = (ctypes.c_void_p * 1)(ctypes.addressof(args))
    fn = ctypes.c_void_p(func)
    one, threads, zero = ctypes.c_uint(1), ctypes.c_uint(128), ctypes.c_uint(0)
    stream = ctypes.c_void_p(0)  # the legacy default stream: torch's default stream

    def bare():
        return launch(fn, one, one, one, threads, one, one, zero, stream, params, None)

    bare.keep = (kernel, args, params)  # alive as long as the launcher
    r = bare()
    if r != 0:
        return None, f"cuLaunchKernel failed with CUresult {r}"
    return bare, note


def cpp_bare_us(path):
    """The bare cuLaunchKernel row of bench/bench_cuda_call's table, in us,
    or None."""
    if path is None or not Path(path).is_file():
        return None, "bench_cuda_call not built"
    try:
        done = subprocess.run([str(path)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"bench_cuda_call did not run ({e})"
    m = re.search(r"\|\s*bare cuLaunchKernel\s*\|\s*([0-9.]+)\s*\|", done.stdout)
    if m is None:
        return None, "bench_cuda_call printed no bare row"
    return float(m.group(1)), str(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=21)
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--cpp-bench", default=str(ROOT / "build-gpu" / "bench" / "bench_cuda_call"),
                        help="bench_cuda_call binary for the C++ floor ('' to skip)")
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

    from bench_python import noop  # this script's directory is on sys.path
    func = noop()
    op = tilejit.compile(func, out_idx=[3], workspace_idx=[4, 5, 6, 7], target="cuda")
    seed = tilejit.compile(func, target="cuda")  # all 8 parameters are inputs
    dev = torch.device("cuda", 0)
    f32 = torch.float32
    a = torch.zeros(M, N, device=dev)
    b = torch.zeros(N, device=dev)
    c = torch.zeros(M, device=dev)
    d = torch.empty(M, N, device=dev)
    w = [torch.empty(M, device=dev), torch.empty(N, device=dev), torch.empty(M, N, device=dev),
         torch.empty(64, dtype=torch.int32, device=dev)]
    empty = torch.empty

    def run_tilejit():
        op(a, b, c)

    def run_out():
        op(a, b, c, out=d)

    def run_floor():
        seed(a, b, c, d, w[0], w[1], w[2], w[3])

    def run_seed():
        seed(a, b, c, empty((M, N), dtype=f32, device=dev), empty((M,), dtype=f32, device=dev),
             empty((N,), dtype=f32, device=dev), empty((M, N), dtype=f32, device=dev),
             empty((64,), dtype=torch.int32, device=dev))

    bare, bare_note = bare_launcher(op.get_source(),
                                    [t.data_ptr() for t in (a, b, c, d, *w)])
    rows = [
        ("tilejit op(a, b, c)", run_tilejit),
        ("tilejit op(a, b, c, out=d)", run_out),
        ("tilejit floor: 8-input call, preallocated buffers", run_floor),
        ("seed approach: torch.empty x5 + 8-input call", run_seed),
    ]
    if bare is not None:
        rows.append(("bare cuLaunchKernel from Python (ctypes)", bare))

    calls = args.calls
    for _, fn in rows:  # warm-up: compile, pools, caching allocator
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    mem_before = torch.cuda.memory_allocated()
    pool_before = tilejit.pool_stats("cuda")
    samples = [[] for _ in rows]
    tilejit_calls = 0
    for _ in range(args.batches):
        for i, (label, fn) in enumerate(rows):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples[i].append((time.perf_counter() - t0) / calls * 1e6)
            if fn is run_tilejit:
                tilejit_calls += calls
    pool_after = tilejit.pool_stats("cuda")
    mem_after = torch.cuda.memory_allocated()
    us = [statistics.median(s) for s in samples]
    cpp_us, cpp_note = cpp_bare_us(args.cpp_bench or None)

    t_op, t_seed = us[0], us[3]
    floor_py = us[4] if bare is not None else None
    print(f"# tilejit Python call overhead on CUDA, {time.strftime('%Y-%m-%d')}, "
          f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"# kernel: 3 inputs, 1 output, 4 workspaces, symbols m={M}, n={N}, 1 block of 128 "
          f"threads, empty body; median of {args.batches} batches of {calls} calls "
          f"(+ torch.cuda.synchronize) per row, rows interleaved")
    print()
    table = [(label, t) for (label, _), t in zip(rows, us)]
    if cpp_us:
        table.append(("bare cuLaunchKernel from C++ (bench_cuda_call)", cpp_us))
    print("| path | median us/call | vs tilejit | vs bare (Python) | vs bare (C++) |")
    print("|---|---|---|---|---|")
    for label, t in table:
        vs_py = f"{t / floor_py:.2f}x" if floor_py else "-"
        vs_cpp = f"{t / cpp_us:.2f}x" if cpp_us else "-"
        print(f"| {label} | {t:.3f} | {t / t_op:.2f}x | {vs_py} | {vs_cpp} |")
    print()
    print(f"bare launch from Python: {bare_note}")
    if not cpp_us:
        print(f"bare launch from C++: not measured ({cpp_note})")
    allocs = pool_after["device_allocs"] - pool_before["device_allocs"]
    leases = pool_after["leases"] - pool_before["leases"]
    print(f"workspace pool over {tilejit_calls} tilejit calls (and {tilejit_calls} with out=): "
          f"{leases} leases, {allocs} device allocations")
    print(f"torch.cuda.memory_allocated: {mem_before} bytes before the timed loops, {mem_after} "
          f"after ({'unchanged' if mem_before == mem_after else 'CHANGED'})")
    floors = [(name, v) for name, v in (("C++", cpp_us), ("Python", floor_py)) if v]
    for name, v in floors:
        r = t_op / v
        print(f"tilejit call / bare launch ({name}): {r:.2f}x (target <= 1.5x): "
              f"{'met' if r <= 1.5 else 'NOT met'}")
    r = t_seed / t_op
    print(f"seed approach / tilejit call: {r:.2f}x (target >= 5x): {'met' if r >= 5 else 'NOT met'}")
    # What the output costs when torch's caching allocator makes it inside
    # the call (managed_tensor_allocator + managed_tensor_to_py_object, and
    # the torch tensor's destruction): the difference of the first two rows.
    # No call that returns a torch-allocated output can be cheaper than a
    # bare C++ launch plus that.
    t_alloc = t_op - us[1]
    print(f"torch output made in the call (op(a, b, c) - op(a, b, c, out=d)): {t_alloc:.3f} us")
    if cpp_us:
        bound = cpp_us + t_alloc
        print(f"lower bound of a call returning a torch output: bare C++ launch + that = "
              f"{bound:.3f} us = {bound / cpp_us:.2f}x the bare C++ launch; "
              f"seed approach / bound = {t_seed / bound:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

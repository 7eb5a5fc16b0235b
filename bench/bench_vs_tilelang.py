"""The same TileLang programs under TileLang and under tilejit, side by side
on one CUDA GPU in one process (a benchmark, not a test; prints a markdown
table).

Each program in bench/vs_tilelang_programs.py is written once, in
TileLang's classic style, as a function of the two modules:
``prog(tilelang, tilelang.language)`` is TileLang's factory and
``prog(tilejit, tilejit.language, "cuda")`` tilejit's. For every case the
inputs are made once with torch on the GPU (a fixed seed per case), both
kernels run on the same tensors, each output is compared with a torch
reference (the normalised max error, max|out - ref| / max|ref|, against the
case's tolerance: ok or FAIL), and each is timed with the same function:
triton.testing.do_bench (median; --warmup / --rep in ms, the same for every
row). The first call of each (factory call: trace, lower, compile, load;
then the first run, synchronised) is reported in seconds; both frameworks'
disk caches are pointed at fresh temporary directories, so it is a compile
(--keep-cache leaves them as they are). A case that fails under one
framework prints the exception's first line in its cell and the bench goes
on; rows print as they finish. The table ends with the geometric mean of
tilejit/TileLang over the cases both timed, overall and per group:
memory-bound (add, copy, transpose, the two GEMVs), reductions (softmax,
online softmax, layer norm, RMSNorm, row sum and max), gemm (four GEMMs and
split-K) and attention (flash attention forward, GQA and MLA decoding).

What a time holds: the call as a user makes it (each framework's own host
call path, the output allocation, and for split-K the zeroing of C), which
matters only for kernels shorter than the call. The first case of each
framework also pays for its one-time setup (loading the compiler). torch's
column is its own op for the problem (matmul, softmax, layer_norm, rms_norm,
sdpa with its own choice of backend, sum, amax, clone, add), not the same
program. On an H200 the whole run takes about two minutes, most of it
TileLang's compiles (2-5 s each on a 2-core machine); --quick is a smoke test.

    PYTHONPATH=/path/to/tilelang python3 bench/bench_vs_tilelang.py
        [--only REGEX] [--quick] [--sources DIR] [--warmup 25] [--rep 100]
        [--keep-cache]

Without a GPU:

    python3 bench/bench_vs_tilelang.py --cpu-check     # tilejit's half on the CPU
        target at tiny shapes, numpy inputs and references (no torch, no TileLang)
    LD_LIBRARY_PATH=/tmp/nulldrv python3 bench/bench_vs_tilelang.py --nvrtc-check
        # compiles tilejit's CUDA source of every case with NVRTC over the null
        # driver (bench/null_driver: gcc -shared -fPIC bench/null_driver/null_cuda.c
        # -I/usr/local/cuda/include -o /tmp/nulldrv/libcuda.so.1); nothing runs

If ``import tilelang`` fails, the GPU run still fills the tilejit column and
says why TileLang's is empty. Exits 0 with a message when torch or a CUDA
device is missing.
"""

import argparse
import ast
import dataclasses
import datetime
import math
import os
import platform
import re
import shlex
import sys
import tempfile
import time
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_tilelang_programs as P  # noqa: E402

GROUPS = ["memory-bound", "reductions", "gemm", "attention"]


# --- references, written once over numpy (float64) or torch (float32) -------

class NumpyOps:
    """The reference math in float64 numpy (the CPU check)."""

    def __init__(self):
        import numpy as np
        self.np = np

    def f(self, x):
        return self.np.asarray(x, dtype=self.np.float64)

    def amax(self, x, axis):
        return x.max(axis=axis, keepdims=True)

    def sum(self, x, axis):
        return x.sum(axis=axis, keepdims=True)

    def exp(self, x):
        return self.np.exp(x)

    def sqrt(self, x):
        return self.np.sqrt(x)

    def einsum(self, eq, *xs):
        return self.np.einsum(eq, *xs)

    def maxabs(self, x):
        return float(self.np.abs(self.f(x)).max()) if x.size else 0.0

    def attention(self, q, k, v, causal):
        """softmax(q k^T / sqrt(d)) v for [b, s, h, d] tensors."""
        q, k, v = self.f(q), self.f(k), self.f(v)
        s = self.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
        if causal:
            n = q.shape[1]
            s = self.np.where(self.np.tril(self.np.ones((n, n), dtype=bool)), s, -self.np.inf)
        return self.einsum("bhqk,bkhd->bqhd", softmax_rows(self, s), v)


class TorchOps(NumpyOps):
    """The same math in float32 torch on the GPU (TF32 off)."""

    def __init__(self):
        import torch
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def f(self, x):
        return x.float()

    def amax(self, x, axis):
        return x.amax(dim=axis, keepdim=True)

    def sum(self, x, axis):
        return x.sum(dim=axis, keepdim=True)

    def exp(self, x):
        return self.torch.exp(x)

    def sqrt(self, x):
        return self.torch.sqrt(x)

    def einsum(self, eq, *xs):
        return self.torch.einsum(eq, *xs)

    def maxabs(self, x):
        return float(x.float().abs().max()) if x.numel() else 0.0

    def attention(self, q, k, v, causal):
        sdpa = self.torch.nn.functional.scaled_dot_product_attention
        q, k, v = (self.f(x).transpose(1, 2) for x in (q, k, v))
        return sdpa(q, k, v, is_causal=causal).transpose(1, 2)


def softmax_rows(o, x):
    e = o.exp(x - o.amax(x, -1))
    return e / o.sum(e, -1)


def ref_add(o, p, a, b):
    return [o.f(a) + o.f(b)]


def ref_copy(o, p, a):
    return [o.f(a)]


def ref_transpose(o, p, a):
    return [o.f(a).T]


def ref_gemv(o, p, a, b):
    return [o.f(b) @ o.f(a)]


def ref_softmax(o, p, x):
    return [softmax_rows(o, o.f(x))]


def ref_layernorm(o, p, x, gamma, beta):
    x = o.f(x)
    mean = o.sum(x, -1) / x.shape[-1]
    var = o.sum((x - mean) * (x - mean), -1) / x.shape[-1]
    rstd = 1.0 / o.sqrt(var + p.get("eps", 1e-5))
    return [(x - mean) * rstd * o.f(gamma) + o.f(beta), mean[..., 0], rstd[..., 0]]


def ref_rms_norm(o, p, x, w):
    x = o.f(x)
    ms = o.sum(x * x, -1) / x.shape[-1]
    return [x / o.sqrt(ms + p.get("eps", 1e-6)) * o.f(w)]


def ref_row_reduce(o, p, x):
    x = o.f(x)
    r = o.amax(x, -1) if p.get("kind") == "max" else o.sum(x, -1)
    return [r[..., 0]]


def ref_matmul(o, p, a, b):
    b = o.f(b)
    return [o.f(a) @ (b.T if p.get("trans_B") else b)]


def ref_matmul_splitk(o, p, a, b, c):
    return [o.f(a) @ o.f(b)]


def ref_flash(o, p, q, k, v):
    return [o.attention(q, k, v, p["is_causal"])]


def ref_gqa(o, p, q, k, v):
    """Query head h reads kv head h // (heads // groups)."""
    b, h, d = q.shape
    g = k.shape[2]
    q = o.f(q).reshape(b, g, h // g, d)
    s = o.einsum("bgrd,bkgd->bgrk", q, o.f(k)) / math.sqrt(d)
    out = o.einsum("bgrk,bkgd->bgrd", softmax_rows(o, s), o.f(v))
    return [out.reshape(b, h, d)]


def ref_mla(o, p, q, q_pe, kv, k_pe):
    kv, k_pe = o.f(kv)[:, :, 0], o.f(k_pe)[:, :, 0]
    s = o.einsum("bhd,bkd->bhk", o.f(q), kv) + o.einsum("bhd,bkd->bhk", o.f(q_pe), k_pe)
    s = s / math.sqrt(q.shape[-1] + q_pe.shape[-1])
    return [o.einsum("bhk,bkd->bhd", softmax_rows(o, s), kv)]


# --- torch's own op for the same problem (timed; None where there is none) --

def torch_op(name):
    """A maker: (params, inputs) -> a zero-argument callable of torch."""
    def make(p, ins):
        import torch
        import torch.nn.functional as F
        if name == "add":
            return lambda: ins[0] + ins[1]
        if name == "copy":
            return lambda: ins[0].clone()
        if name == "transpose":
            return lambda: ins[0].t().contiguous()
        if name == "gemv":
            return lambda: ins[1] @ ins[0]
        if name == "softmax":
            return lambda: torch.softmax(ins[0], dim=-1)
        if name == "layer_norm":
            return lambda: F.layer_norm(ins[0], (ins[0].shape[-1],), ins[1], ins[2],
                                        p.get("eps", 1e-5))
        if name == "rms_norm":
            return lambda: F.rms_norm(ins[0], (ins[0].shape[-1],), ins[1], p.get("eps", 1e-6))
        if name == "sum":
            return lambda: ins[0].sum(dim=-1)
        if name == "amax":
            return lambda: ins[0].amax(dim=-1)
        if name == "matmul":
            return lambda: ins[0] @ (ins[1].t() if p.get("trans_B") else ins[1])
        if name == "matmul_nt":
            return lambda: ins[0] @ ins[1].t()
        return make_torch_attention(name, p, ins)
    return make


def make_torch_attention(name, p, ins):
    import torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if name == "sdpa":
        q, k, v = (x.transpose(1, 2) for x in ins)
        return lambda: sdpa(q, k, v, is_causal=p["is_causal"])
    if name == "sdpa_cudnn":
        # cuDNN's attention, as issue 22's bar names it; torch's own choice where
        # this build has no cuDNN attention.
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q, k, v = (x.transpose(1, 2) for x in ins)

        def run():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
                return sdpa(q, k, v, is_causal=p["is_causal"])
        return run
    if name == "sdpa_gqa":
        q = ins[0].unsqueeze(2)
        k, v = (x.transpose(1, 2) for x in ins[1:])
        return lambda: sdpa(q, k, v, enable_gqa=True)
    if name == "sdpa_mla":
        # One kv head: the query heads are the queries of one head (b, 1, h,
        # d), so nothing is expanded per head (enable_gqa over 128 heads of
        # 8192 x 576 asked for 72 GiB).
        q = torch.cat([ins[0], ins[1]], dim=-1).unsqueeze(1)
        k = torch.cat([ins[2], ins[3]], dim=-1).transpose(1, 2)
        v = ins[2].transpose(1, 2)
        return lambda: sdpa(q, k, v, scale=(q.shape[-1]) ** -0.5)
    raise ValueError(name)


# --- the cases ---------------------------------------------------------------

@dataclass
class Case:
    """A program at three sizes: `full` (the H200 run), `quick` (--quick) and
    `cpu` (--cpu-check); each a dict of the factory's keyword arguments."""
    name: str
    group: str
    program: Callable
    full: Dict[str, Any]
    quick: Dict[str, Any]
    cpu: Dict[str, Any]
    inputs: Callable            # params -> [(shape, dtype, fill)], fill "randn" | "zeros"
    ref: Callable               # (ops, params, *inputs) -> [reference outputs]
    tol: float = 1e-2
    inplace: List[int] = field(default_factory=list)  # inputs the kernel writes (zeroed per call)
    torch: Optional[Callable] = None


def mn(dtype):
    """Inputs of an [M, N] elementwise / row program."""
    return lambda p: [((p["M"], p["N"]), dtype, "randn")]


def case_list():
    f16, f32 = "float16", "float32"
    two = lambda p: [((p["M"], p["N"]), p.get("dtype", f16), "randn")] * 2  # noqa: E731
    gemv_in = lambda p: [((p["K"],), f16, "randn"), ((p["N"], p["K"]), f16, "randn")]  # noqa: E731
    mat_in = lambda p: [((p["M"], p["K"]), f16, "randn"),  # noqa: E731
                        ((p["N"], p["K"]) if p.get("trans_B") else (p["K"], p["N"]), f16, "randn")]
    splitk_in = lambda p: mat_in(p) + [((p["M"], p["N"]), f32, "zeros")]  # noqa: E731
    ln_in = lambda p: [((p["M"], p["D"]), f16, "randn"), ((p["D"],), f16, "randn"),  # noqa: E731
                       ((p["D"],), f16, "randn")]
    rms_in = lambda p: [((p["M"], p["N"]), p["dtype"], "randn"),  # noqa: E731
                        ((p["N"],), p["dtype"], "randn")]
    bshd = lambda p: [((p["batch"], p["seq_len"], p["heads"], p["dim"]),  # noqa: E731
                       f16, "randn")] * 3
    gqa_in = lambda p: [((p["batch"], p["heads"], p["dim"]), f16, "randn")] + [  # noqa: E731
        ((p["batch"], p["seqlen_kv"], p["groups"], p["dim"]), f16, "randn")] * 2
    mla_in = lambda p: [((p["batch"], p["heads"], p["dim"]), f16, "randn"),  # noqa: E731
                        ((p["batch"], p["heads"], p["pe_dim"]), f16, "randn"),
                        ((p["batch"], p["seqlen_kv"], 1, p["dim"]), f16, "randn"),
                        ((p["batch"], p["seqlen_kv"], 1, p["pe_dim"]), f16, "randn")]
    mm = lambda M, N, K, **kw: dict(M=M, N=N, K=K, **kw)  # noqa: E731
    fa = lambda b, h, s, d, c: dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=c)  # noqa: E731
    gqa = dict(block_N=128, block_H=64, num_stages=2, threads=128)
    mla = dict(block_N=64, block_H=64, num_stages=2, threads=256)
    return [
        # memory-bound
        Case("add_fp16", "memory-bound", P.elementwise_add, dict(M=8192, N=8192),
             dict(M=1024, N=1024), dict(M=100, N=300), two, ref_add, torch=torch_op("add")),
        Case("copy_fp16", "memory-bound", P.tile_copy, dict(M=8192, N=8192), dict(M=1024, N=1024),
             dict(M=100, N=300), mn(f16), ref_copy, tol=0, torch=torch_op("copy")),
        Case("transpose_fp16", "memory-bound", P.transpose, dict(M=8192, N=8192),
             dict(M=1024, N=1024), dict(M=100, N=70), mn(f16), ref_transpose, tol=0,
             torch=torch_op("transpose")),
        Case("gemv_fp16", "memory-bound", P.gemv, dict(N=8192, K=8192), dict(N=1024, K=1024),
             dict(N=256, K=384), gemv_in, ref_gemv, torch=torch_op("gemv")),
        Case("gemv_splitk_fp16", "memory-bound", P.gemv_splitk, dict(N=8192, K=8192),
             dict(N=1024, K=1024), dict(N=64, K=512), gemv_in, ref_gemv, torch=torch_op("gemv")),
        # reductions
        Case("softmax_fp16", "reductions", P.softmax, dict(M=4096, N=8192), dict(M=256, N=8192),
             dict(M=5, N=300), mn(f16), ref_softmax, torch=torch_op("softmax")),
        Case("online_softmax_fp16", "reductions", P.online_softmax, dict(M=4096, N=32768),
             dict(M=256, N=16384), dict(M=5, N=512, BN=128), mn(f16), ref_softmax,
             torch=torch_op("softmax")),
        Case("layernorm_fp16", "reductions", P.layernorm, dict(M=4096, D=8192), dict(M=256, D=8192),
             dict(M=5, D=300), ln_in, ref_layernorm, torch=torch_op("layer_norm")),
        Case("rmsnorm_fp16", "reductions", P.rms_norm, dict(M=4096, N=8192, dtype=f16),
             dict(M=256, N=8192, dtype=f16), dict(M=5, N=300, dtype=f16), rms_in, ref_rms_norm,
             torch=torch_op("rms_norm")),
        Case("rmsnorm_fp32", "reductions", P.rms_norm, dict(M=8192, N=8192, dtype=f32),
             dict(M=256, N=8192, dtype=f32), dict(M=3, N=256, dtype=f32), rms_in, ref_rms_norm,
             tol=1e-4, torch=torch_op("rms_norm")),
        Case("row_sum_fp32", "reductions", P.row_reduce, dict(M=8192, N=8192), dict(M=1024, N=1024),
             dict(M=10, N=3000), mn(f32), ref_row_reduce, tol=1e-4, torch=torch_op("sum")),
        Case("row_max_fp16", "reductions", P.row_reduce,
             dict(M=8192, N=8192, kind="max", dtype=f16, out_dtype=f16),
             dict(M=1024, N=1024, kind="max", dtype=f16, out_dtype=f16),
             dict(M=10, N=3000, kind="max", dtype=f16, out_dtype=f16), mn(f16), ref_row_reduce,
             tol=0, torch=torch_op("amax")),
        # gemm
        Case("gemm_fp16_1024", "gemm", P.matmul, mm(1024, 1024, 1024), mm(512, 512, 512),
             mm(256, 256, 256), mat_in, ref_matmul, torch=torch_op("matmul")),
        Case("gemm_fp16_4096", "gemm", P.matmul, mm(4096, 4096, 4096), mm(1024, 1024, 1024),
             mm(128, 384, 96), mat_in, ref_matmul, torch=torch_op("matmul")),
        Case("gemm_fp16_1000", "gemm", P.matmul, mm(1000, 1000, 1000), mm(500, 500, 500),
             mm(200, 130, 100), mat_in, ref_matmul, torch=torch_op("matmul")),
        Case("gemm_nt_fp16_4096", "gemm", P.matmul, mm(4096, 4096, 4096, trans_B=True),
             mm(1024, 1024, 1024, trans_B=True), mm(200, 130, 100, trans_B=True), mat_in,
             ref_matmul, torch=torch_op("matmul")),
        Case("gemm_splitk_fp16", "gemm", P.matmul_splitk, mm(1024, 1024, 8192, split_k=4),
             mm(512, 512, 4096, split_k=4), mm(128, 128, 256, split_k=2), splitk_in,
             ref_matmul_splitk, tol=1e-3, inplace=[2], torch=torch_op("matmul")),
        # attention and decoding
        Case("flash_fwd_fp16", "attention", P.flash_attention, fa(8, 32, 4096, 128, False),
             fa(1, 8, 1024, 128, False), fa(1, 2, 200, 64, False), bshd, ref_flash,
             torch=torch_op("sdpa")),
        Case("flash_fwd_causal_fp16", "attention", P.flash_attention, fa(8, 32, 4096, 128, True),
             fa(1, 8, 1024, 128, True), fa(1, 2, 200, 64, True), bshd, ref_flash,
             torch=torch_op("sdpa")),
        Case("flash_fwd_b1_fp16", "attention", P.flash_attention, fa(1, 32, 4096, 128, False),
             fa(1, 4, 1024, 128, False), fa(2, 1, 130, 64, False), bshd, ref_flash,
             torch=torch_op("sdpa")),
        Case("gqa_decode_fp16", "attention", P.gqa_decode,
             dict(batch=8, heads=32, groups=8, seqlen_kv=8192, dim=128, num_split=8, **gqa),
             dict(batch=2, heads=32, groups=8, seqlen_kv=2048, dim=128, num_split=4, **gqa),
             dict(batch=2, heads=8, groups=2, seqlen_kv=512, dim=64, num_split=2, **gqa),
             gqa_in, ref_gqa, torch=torch_op("sdpa_gqa")),
        Case("mla_decode_fp16", "attention", P.mla_decode,
             dict(batch=32, heads=128, seqlen_kv=8192, dim=512, pe_dim=64, num_split=4, **mla),
             dict(batch=2, heads=128, seqlen_kv=1024, dim=512, pe_dim=64, num_split=2, **mla),
             dict(batch=1, heads=64, seqlen_kv=256, dim=128, pe_dim=32, num_split=2, **mla),
             mla_in, ref_mla, torch=torch_op("sdpa_mla")),
    ]


def hopper_case_list():
    """Issue 22's bars: bf16 GEMM in TileLang's benchmark and README configurations, and bf16
    flash attention at its shapes, beside torch's cuBLAS and cuDNN (--suite hopper)."""
    bf = "bfloat16"
    nt_in = lambda p: [((p["M"], p["K"]), bf, "randn"), ((p["N"], p["K"]), bf, "randn")]  # noqa: E731
    nn_in = lambda p: [((p["M"], p["K"]), bf, "randn"), ((p["K"], p["N"]), bf, "randn")]  # noqa: E731
    bshd = lambda p: [((p["batch"], p["seq_len"], p["heads"], p["dim"]), bf, "randn")] * 3  # noqa: E731
    mm = lambda n, **kw: dict(M=n, N=n, K=n, dtype=bf, **kw)  # noqa: E731
    fa = lambda b, h, s, d, c: dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=c,  # noqa: E731
                                    dtype=bf)
    nt = dict(trans_B=True)

    def ref_nt(o, p, a, b):
        return [o.f(a) @ o.f(b).T]
    return [
        Case("gemm_bench_bf16_8192", "gemm", P.matmul_bench, mm(8192), mm(1024), mm(256),
             nt_in, ref_nt, torch=torch_op("matmul_nt")),
        Case("gemm_bench_bf16_4096", "gemm", P.matmul_bench, mm(4096), mm(1024), mm(256),
             nt_in, ref_nt, torch=torch_op("matmul_nt")),
        Case("gemm_readme_bf16_8192", "gemm", P.matmul, mm(8192), mm(1024), mm(256),
             nn_in, ref_matmul, torch=torch_op("matmul")),
        Case("gemm_readme_bf16_4096", "gemm", P.matmul, mm(4096), mm(1024), mm(256),
             nn_in, ref_matmul, torch=torch_op("matmul")),
        Case("flash_bf16_s8192", "attention", P.flash_attention, fa(4, 32, 8192, 128, False),
             fa(1, 8, 1024, 128, False), fa(1, 2, 200, 64, False), bshd, ref_flash,
             torch=torch_op("sdpa_cudnn")),
        Case("flash_causal_bf16_s8192", "attention", P.flash_attention,
             fa(4, 32, 8192, 128, True), fa(1, 8, 1024, 128, True), fa(1, 2, 200, 64, True),
             bshd, ref_flash, torch=torch_op("sdpa_cudnn")),
        # (the program masks no key past seq_len: whole blocks only)
        Case("flash_pipelined_bf16_s8192", "attention", P.flash_attention_pipelined,
             fa(4, 32, 8192, 128, False), fa(1, 8, 1024, 128, False), fa(1, 2, 256, 64, False),
             bshd, ref_flash, torch=torch_op("sdpa_cudnn")),
        Case("flash_pipelined_causal_bf16_s8192", "attention", P.flash_attention_pipelined,
             fa(4, 32, 8192, 128, True), fa(1, 8, 1024, 128, True), fa(1, 2, 200, 64, True),
             bshd, ref_flash, torch=torch_op("sdpa_cudnn")),
        Case("flash_bf16_d64", "attention", P.flash_attention, fa(8, 16, 4096, 64, False),
             fa(1, 8, 1024, 64, False), fa(1, 2, 200, 64, False), bshd, ref_flash,
             torch=torch_op("sdpa_cudnn")),
        Case("flash_causal_bf16_d64", "attention", P.flash_attention, fa(8, 16, 4096, 64, True),
             fa(1, 8, 1024, 64, True), fa(1, 2, 200, 64, True), bshd, ref_flash,
             torch=torch_op("sdpa_cudnn")),
    ]


def with_params(case, settings):
    """The case with KEY=VALUE settings (Python literals, else strings) in each of its shape
    sets, and its name marked with them."""
    extra = {}
    for item in settings:
        key, _, value = item.partition("=")
        try:
            extra[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            extra[key] = value
    tag = ",".join(f"{k}={v}" for k, v in extra.items())
    return dataclasses.replace(case, name=f"{case.name}[{tag}]", full={**case.full, **extra},
                               quick={**case.quick, **extra}, cpu={**case.cpu, **extra})


def flops_of(case, p):
    """The case's floating-point operations (None where not a GEMM or attention)."""
    if case.program in (P.matmul, P.matmul_bench):
        return 2.0 * p["M"] * p["N"] * p["K"]
    if case.program in (P.flash_attention, P.flash_attention_pipelined):
        f = 4.0 * p["batch"] * p["heads"] * p["seq_len"] ** 2 * p["dim"]
        return f / 2 if p["is_causal"] else f
    return None


def shape_text(p):
    skip = {"dtype", "out_dtype", "block_N", "block_H", "num_stages", "threads"}
    return " ".join(f"{k}={v}" for k, v in p.items() if k not in skip)


# --- running one kernel --------------------------------------------------------

def run_kernel(kernel, ins, inplace, zero):
    """One call: zero the in-place outputs, call, return the outputs."""
    for i in inplace:
        zero(ins[i])
    result = kernel(*ins)
    if inplace:
        return [ins[i] for i in inplace]
    return list(result) if isinstance(result, (tuple, list)) else [result]


def max_error(ops, outs, refs):
    """max over the outputs of max|out - ref| / max|ref| (inf on NaN)."""
    worst = 0.0
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} outputs, {len(refs)} references")
    for out, ref in zip(outs, refs):
        if tuple(out.shape) != tuple(ref.shape):
            raise ValueError(f"output shape {tuple(out.shape)}, reference {tuple(ref.shape)}")
        diff = ops.maxabs(ops.f(out) - ref)
        if diff != diff:  # NaN
            return math.inf
        worst = max(worst, diff / max(ops.maxabs(ref), 1e-30))
    return worst


def check_text(err, tol):
    return f"{'ok' if err <= max(tol, 0) else 'FAIL'} {err:.1e}"


def first_line(e):
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    return f"{type(e).__name__}: {text}"[:140].replace("|", "/")


# --- --cpu-check: tilejit's half on the CPU target ------------------------------

def numpy_inputs(specs, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    if any(dtype == "bfloat16" for _, dtype, _ in specs):
        import ml_dtypes
        specs = [(shape, ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype, fill)
                 for shape, dtype, fill in specs]
    return [np.zeros(shape, dtype) if fill == "zeros"
            else rng.standard_normal(shape).astype(np.float32).astype(dtype)
            for shape, dtype, fill in specs]


def cpu_check(cases):
    import numpy as np
    import tilejit
    import tilejit.language as T
    tilejit.set_cache_dir(tempfile.mkdtemp(prefix="tilejit-cpu-check-"))
    ops, failed = NumpyOps(), 0
    print("| case | shape (CPU) | compile s | check |")
    print("|---|---|---|---|")
    for case in cases:
        p = case.cpu
        try:
            t0 = time.perf_counter()
            kernel = case.program(tilejit, T, "cpu")(**p)
            compile_s = time.perf_counter() - t0
            ins = numpy_inputs(case.inputs(p), seed_of(case))
            outs = run_kernel(kernel, ins, case.inplace, lambda a: a.fill(0))
            text = check_text(max_error(ops, outs, case.ref(ops, p, *ins)), case.tol)
        except Exception as e:  # report and go on
            compile_s, text = float("nan"), f"FAIL {first_line(e)}"
            traceback.print_exc(file=sys.stderr)
        failed += not text.startswith("ok")
        print(f"| {case.name} | {shape_text(p)} | {compile_s:.2f} | {text} |", flush=True)
    print(f"\n{len(cases) - failed} of {len(cases)} cases pass on the CPU target")
    return 1 if failed else 0


# --- --nvrtc-check: tilejit's CUDA source through NVRTC, nothing run ------------

def nvrtc_check(cases, size, sources):
    import tilejit
    import tilejit.language as T
    tilejit.set_cache_dir(tempfile.mkdtemp(prefix="tilejit-nvrtc-check-"))
    failed = 0
    print("| case | shape | compile s | NVRTC | lowering notes |")
    print("|---|---|---|---|---|")
    for case in cases:
        p = getattr(case, size)
        notes = ""
        try:
            t0 = time.perf_counter()
            kernel = case.program(tilejit, T, "cuda")(**p)
            compile_s, text = time.perf_counter() - t0, "ok"
            notes = lowering_notes(kernel)
            write_source(sources, case.name, "tilejit", kernel)
        except Exception as e:
            compile_s, text = float("nan"), f"FAIL {first_line(e)}"
            failed += 1
            traceback.print_exc(file=sys.stderr)
        print(f"| {case.name} | {shape_text(p)} | {compile_s:.2f} | {text} | {notes} |", flush=True)
    print(f"\n{len(cases) - failed} of {len(cases)} cases compile for CUDA with NVRTC")
    return 1 if failed else 0


def lowering_notes(kernel):
    """The ops tilejit did not lower on its fastest path, with the reason."""
    try:
        report = kernel.lowering_report()
    except Exception:
        return ""
    moved = {}  # reason -> fragments placed in shared memory for it
    notes = []
    for e in report:
        forced = e.get("forced_by")
        if e.get("kind") == "buffer" and forced:
            moved.setdefault(forced.get("reason"), []).append(f"{e['name']}@{e.get('line')}")
        elif e.get("kind") == "op" and e.get("reason") and e.get("path") != "vector":
            notes.append(f"{e['op']}@{e.get('line')} {e.get('path')} ({e['reason']})")
    notes = [f"in shared memory: {', '.join(names)} ({why})"
             for why, names in moved.items()] + notes
    return "; ".join(notes)[:600].replace("|", "/")


def write_source(directory, case, framework, kernel):
    if not directory:
        return
    path = Path(directory) / f"{case}.{framework}.cu"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kernel.get_kernel_source())


# --- the GPU run ---------------------------------------------------------------

def bench_ms(fn, warmup, rep):
    """Median ms of fn() by triton's do_bench (CUDA events when triton is missing)."""
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench is not None:
        return float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(max(10, int(rep))):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def torch_inputs(specs, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    out = []
    for shape, dtype, fill in specs:
        dt = getattr(torch, dtype)
        out.append(torch.zeros(shape, dtype=dt, device="cuda") if fill == "zeros" else
                   torch.randn(shape, generator=g, device="cuda").to(dt))
    return out


@dataclass
class Result:
    ms: Optional[float] = None
    first_s: Optional[float] = None
    check: str = "-"
    error: str = ""


def run_framework(case, p, fw, ins, refs, ops, args):
    """Compile, check and time one framework's kernel of `case`."""
    import torch
    name, tl, T, target = fw
    r = Result()
    try:
        t0 = time.perf_counter()
        kernel = case.program(tl, T, target)(**p)
        outs = run_kernel(kernel, ins, case.inplace, lambda a: a.zero_())
        torch.cuda.synchronize()
        r.first_s = time.perf_counter() - t0
        write_source(args.sources, case.name, name, kernel)
        r.check = check_text(max_error(ops, outs, refs), case.tol)
        del outs
        r.ms = bench_ms(lambda: run_kernel(kernel, ins, case.inplace, lambda a: a.zero_()),
                        args.warmup, args.rep)
    except Exception as e:  # one framework's failure must not stop the others
        r.error = first_line(e)
        traceback.print_exc(file=sys.stderr)
    return r


def run_case(case, frameworks, args):
    """Every framework's Result for `case`, and torch's time (or None)."""
    import torch
    p = case.quick if args.quick else case.full
    ops = TorchOps()
    try:
        ins = torch_inputs(case.inputs(p), seed_of(case))
        refs = case.ref(ops, p, *ins)
    except Exception as e:  # no inputs or no reference: nothing to run
        traceback.print_exc(file=sys.stderr)
        error = f"inputs/reference: {first_line(e)}"
        return {fw[0]: Result(error=error) for fw in frameworks}, None
    results = {fw[0]: run_framework(case, p, fw, ins, refs, ops, args) for fw in frameworks}
    torch_ms = None
    if case.torch is not None:
        try:
            torch_ms = bench_ms(case.torch(p, ins), args.warmup, args.rep)
        except Exception as e:
            print(f"{case.name}: torch op failed: {first_line(e)}", file=sys.stderr)
    del ins, refs
    torch.cuda.empty_cache()
    return results, torch_ms


def seed_of(case):
    """The case's seed: the same for both frameworks and whatever --only picks."""
    return zlib.crc32(case.name.encode()) % (1 << 31)


def cell_ms(r):
    if r is None:
        return "-"
    return f"{r.ms:.4f}" if r.ms is not None else f"error: {r.error}"


def cell_first(r):
    return f"{r.first_s:.2f}" if r is not None and r.first_s is not None else "-"


def cell_check(results):
    return "; ".join(f"{name} {r.check if not r.error or r.check != '-' else 'error'}"
                     for name, r in results.items())


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def print_table_head():
    print("| case | shape | tilejit ms | TileLang ms | tilejit/TileLang | torch ms | "
          "tilejit 1st call s | TileLang 1st call s | checks (max err / max ref) |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)


def print_row(case, p, results, torch_ms):
    """Prints the case's row; returns tilejit/TileLang, or None."""
    tj, tl = results.get("tilejit"), results.get("TileLang")
    ratio = tj.ms / tl.ms if tj and tl and tj.ms and tl.ms else None
    torch_cell = f"{torch_ms:.4f}" if torch_ms is not None else "-"
    print(f"| {case.name} | {shape_text(p)} | {cell_ms(tj)} | {cell_ms(tl)} | "
          f"{f'{ratio:.2f}x' if ratio else '-'} | {torch_cell} | {cell_first(tj)} | "
          f"{cell_first(tl)} | {cell_check(results)} |", flush=True)
    return ratio


def print_geomeans(ratios):
    print()
    all_r = [r for _, r in ratios.values()]
    g = geomean(all_r)
    print(f"geometric mean of tilejit/TileLang over the {len(all_r)} cases both timed: "
          + (f"{g:.3f}x" if g else "-") + " (below 1: tilejit faster)")
    for group in GROUPS:
        rs = [r for grp, r in ratios.values() if grp == group]
        g = geomean(rs)
        print(f"- {group}: " + (f"{g:.3f}x over {len(rs)} cases" if g else "-"))


def import_tilelang():
    """(tilelang, tilelang.language) or (None, the reason)."""
    try:
        import tilelang
        import tilelang.language
        return tilelang, tilelang.language
    except Exception as e:  # ImportError, or a broken install
        return None, first_line(e)


def point_caches_at_temp(keep):
    """Fresh disk caches for both frameworks, so a first call compiles."""
    if keep:
        return
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilelang-cache-")
    os.environ.setdefault("TILELANG_DISABLE_CACHE", "1")


class WithPassConfigs:
    """A framework module as the programs see it, with `configs` added to
    the pass_configs of every jit (--tilejit-pass-config)."""

    def __init__(self, module, configs):
        self._module, self._configs = module, configs

    def __getattr__(self, name):
        return getattr(self._module, name)

    def jit(self, func=None, **options):
        options["pass_configs"] = {**(options.get("pass_configs") or {}), **self._configs}
        return self._module.jit(func, **options)


def frameworks_for_gpu(args):
    import tilejit
    import tilejit.language as TJ
    if not args.keep_cache:
        tilejit.set_cache_dir(tempfile.mkdtemp(prefix="tilejit-cache-"))
    configs = {}
    for item in args.tilejit_pass_config or []:
        key, _, value = item.partition("=")
        configs[key] = value.lower() in ("1", "true", "yes")
    fws = [("tilejit", WithPassConfigs(tilejit, configs) if configs else tilejit, TJ, "cuda")]
    if args.no_tilelang:
        return fws, "--no-tilelang"
    tl, tl_language_or_why = import_tilelang()
    if tl is None:
        return fws, tl_language_or_why
    fws.append(("TileLang", tl, tl_language_or_why, "auto"))
    return fws, ""


def print_header(args, tilelang_why):
    import torch
    import tilejit
    versions = [f"torch {torch.__version__}"]
    try:
        import triton
        versions.append(f"triton {triton.__version__}")
    except ImportError:
        versions.append("no triton (CUDA events)")
    where = Path(tilejit.__file__).parent
    versions.append(f"tilejit {getattr(tilejit, '__version__', '?')} ({where})")
    if not tilelang_why:
        import tilelang
        versions.append(f"TileLang {getattr(tilelang, '__version__', '?')}")
    print(f"# tilejit vs TileLang, the same programs ({'quick' if args.quick else 'full'} sizes)\n")
    print(f"- machine: {torch.cuda.get_device_name()} ({platform.node()}), "
          f"{datetime.datetime.now().isoformat(timespec='minutes')}")
    print(f"- {', '.join(versions)}")
    print(f"- command: {' '.join(shlex.quote(a) for a in sys.argv)}")
    timer = ("triton.testing.do_bench median" if versions[1].startswith("triton")
             else "median of CUDA events per call")
    print(f"- timing: {timer}, warmup {args.warmup} ms, rep {args.rep} ms; "
          f"1st call = factory call + first run, "
          f"{'warm' if args.keep_cache else 'empty'} disk caches")
    if tilelang_why:
        print(f"- TileLang column empty: import tilelang failed: {tilelang_why}")
    print()


def gpu_run(cases, args):
    try:
        import torch
    except ImportError:
        print("bench_vs_tilelang: torch is not installed (try --cpu-check)")
        return 0
    if not torch.cuda.is_available():
        print("bench_vs_tilelang: no CUDA device (try --cpu-check or --nvrtc-check)")
        return 0
    point_caches_at_temp(args.keep_cache)
    frameworks, why = frameworks_for_gpu(args)
    print_header(args, why)
    print_table_head()  # rows print as they finish: a crash keeps the rows before it
    ratios, rates = {}, []
    for case in cases:
        print(f"... {case.name}", file=sys.stderr, flush=True)
        results, torch_ms = run_case(case, frameworks, args)
        p = case.quick if args.quick else case.full
        ratio = print_row(case, p, results, torch_ms)
        if ratio:
            ratios[case.name] = (case.group, ratio)
        if flops_of(case, p):
            rates.append((case, flops_of(case, p), results, torch_ms))
    print_geomeans(ratios)
    print_rates(rates, args.suite)
    return 0


def print_rates(rates, suite):
    """TFLOP/s of each framework and of torch's op, and the speed over torch's."""
    if not rates:
        return
    base = "cuBLAS / cuDNN (torch)" if suite == "hopper" else "torch"
    print(f"\n| case | tilejit TFLOP/s | TileLang TFLOP/s | {base} TFLOP/s | "
          "tilejit speed / torch's | TileLang speed / torch's |")
    print("|---|---|---|---|---|---|")

    def tf(ms):
        return flops / (ms * 1e-3) / 1e12 if ms else None
    for case, flops, results, torch_ms in rates:
        tj, tl = results.get("tilejit"), results.get("TileLang")
        cells = [tf(r.ms) if r else None for r in (tj, tl)] + [tf(torch_ms)]
        speed = [f"{c / cells[2]:.2f}x" if c and cells[2] else "-" for c in cells[:2]]
        text = [f"{c:.0f}" if c else "-" for c in cells]
        print(f"| {case.name} | {' | '.join(text)} | {' | '.join(speed)} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="run the cases whose name matches this regex")
    ap.add_argument("--quick", action="store_true", help="small shapes")
    ap.add_argument("--sources", help="write each framework's CUDA source per case here")
    ap.add_argument("--warmup", type=float, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=float, default=100, help="do_bench rep, ms")
    ap.add_argument("--tilejit-pass-config", action="append", metavar="KEY=BOOL",
                    help="a pass config for tilejit's kernels (tl.disable_tma_lower=1: cp.async "
                         "where TMA would load); repeatable")
    ap.add_argument("--keep-cache", action="store_true",
                    help="use the frameworks' own disk caches (first call may be a cache hit)")
    ap.add_argument("--cpu-check", action="store_true",
                    help="tilejit only, CPU target, tiny shapes, numpy references")
    ap.add_argument("--nvrtc-check", action="store_true",
                    help="compile tilejit's CUDA source of each case with NVRTC, run nothing")
    ap.add_argument("--no-tilelang", action="store_true",
                    help="tilejit and torch only (A/B runs of tilejit's own options)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a parameter of the selected cases' programs (block_K=64: "
                         "another configuration of the same program text); repeatable")
    ap.add_argument("--suite", choices=["tilelang", "hopper"], default="tilelang",
                    help="tilelang: TileLang's 22 programs at their main() shapes; hopper: "
                         "bf16 GEMM and flash attention at issue 22's shapes, beside cuBLAS "
                         "and cuDNN")
    args = ap.parse_args(argv)
    every = hopper_case_list() if args.suite == "hopper" else case_list()
    cases = [c for c in every if not args.only or re.search(args.only, c.name)]
    if args.set:
        cases = [with_params(c, args.set) for c in cases]
    if args.cpu_check:
        return cpu_check(cases)
    if args.nvrtc_check:
        return nvrtc_check(cases, "quick" if args.quick else "full", args.sources)
    return gpu_run(cases, args)


if __name__ == "__main__":
    sys.exit(main())

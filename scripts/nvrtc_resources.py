#!/usr/bin/env python3
"""Registers, spills and shared memory of generated CUDA units, from NVRTC's
ptxas report, without a GPU, with ptxas's notes on wgmma (a wait it
injected, wgmma it serialised):

    python3 scripts/nvrtc_resources.py [--ptx] unit.cu [unit.cu ...]

Each unit (as tilejit's CUDA backend writes it: `Kernel.get_kernel_source()`,
or the test dumps) is compiled for sm_90a with the device headers of
device/cuda and the toolkit's include directory, as the backend compiles it. With --ptx, each unit's PTX is also written
beside it (unit.ptx), with a count of its memory instructions by width (what
NVVM vectorised: ld.shared.v4 against ld.shared.u16, and so on).
"""
import ctypes
import re
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUDA = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


def nvrtc():
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"):
        try:
            return ctypes.CDLL(str(CUDA / "lib64" / name))
        except OSError:
            continue
    return ctypes.CDLL("libnvrtc.so")


def report(lib, path, ptx=False):
    src = Path(path).read_bytes()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, path.encode(), 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = [b"-std=c++17", b"-default-device", b"--gpu-architecture=sm_90a",
            b"--ptxas-options=-v", b"-I" + str(ROOT / "device" / "cuda").encode(),
            b"-I" + str(CUDA / "include").encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode(errors="replace")
    # ptxas's notes on wgmma too: a wait or fence it injected (C7517,
    # C7519) or wgmma it serialised, which the backend refuses to load.
    lines = [ln for ln in text.splitlines()
             if "Used" in ln or "spill" in ln or "Compiling entry" in ln or "error" in ln
             or "(C75" in ln or "serializ" in ln]
    print(f"{path}: {'ok' if rc == 0 else 'FAILED'}")
    for ln in lines:
        print("  " + ln.strip())
    if ptx and rc == 0:
        write_ptx(prog, path)


def write_ptx(prog, path):
    lib = nvrtc()
    size = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, buf)
    text = buf.value.decode(errors="replace")
    out = Path(path).with_suffix(".ptx")
    out.write_text(text)
    counts = {}
    for m in re.finditer(r"\b((?:ld|st|cp\.async)\.[a-z0-9.:]+)", text):
        op = re.sub(r"\.L2::\w+|\.(?:ca|cg|cs|lu|cv|nc|relaxed|gpu|sys)\b", "", m.group(1))
        counts[op] = counts.get(op, 0) + 1
    print(f"  ptx: {out}")
    for op, n in sorted(counts.items()):
        print(f"    {op}: {n}")


def main():
    lib = nvrtc()
    args = sys.argv[1:]
    ptx = "--ptx" in args
    for path in (a for a in args if a != "--ptx"):
        report(lib, path, ptx)


if __name__ == "__main__":
    main()

"""The runtime seen from Python: the pool's and the compile cache's
counters, empty_cache(), the disk cache location, and importing tilejit
without torch."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tilejit
from tilejit import language as T
from support import add_one_kernel, raises_exact


def test_large_cpu_outputs_reuse_the_memory_of_dead_ones():
    n = T.symbolic("n")

    @T.prim_func
    def plus_one(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = X(i) + 1;")

    k = tilejit.compile(plus_one, out_idx=[1], target="cpu")
    x = np.arange(1 << 20, dtype=np.float32)  # a 4 MiB output
    tilejit.empty_cache()
    before = tilejit.host_cache_stats()
    assert set(before) == {"hits", "misses", "returns", "frees", "bytes_cached",
                           "blocks_cached", "limit"}
    y = k(x)
    address = y.ctypes.data
    del y
    first = tilejit.host_cache_stats()
    assert (first["misses"], first["returns"]) == (before["misses"] + 1, before["returns"] + 1)
    assert first["bytes_cached"] == 4 << 20
    for _ in range(5):
        y = k(x)
        assert y.ctypes.data == address
        np.testing.assert_array_equal(y, x + 1)
        del y
    after = tilejit.host_cache_stats()
    assert after["hits"] == first["hits"] + 5 and after["misses"] == first["misses"]
    # Small outputs are malloc's.
    k(np.ones(16, np.float32))
    assert tilejit.host_cache_stats()["returns"] == after["returns"]
    # Limit 0: nothing kept; empty_cache() frees what was.
    limit = after["limit"]
    try:
        tilejit.set_host_cache_limit(0)
        assert tilejit.host_cache_stats()["bytes_cached"] == 0
        k(x)
        stats = tilejit.host_cache_stats()
        assert stats["bytes_cached"] == 0 and stats["frees"] == after["frees"] + 2
    finally:
        tilejit.set_host_cache_limit(limit)
    k(x)
    assert tilejit.empty_cache() >= 4 << 20
    assert tilejit.host_cache_stats()["bytes_cached"] == 0


def test_pool_stats_count_leases_and_reuse():
    n = T.symbolic("n")

    @T.prim_func
    def with_ws(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32"),
                W: T.Tensor([n], "float32")):
        T.source(cpu="for (int64_t i = 0; i < n; ++i) { W(i) = X(i); Y(i) = W(i); }")

    k = tilejit.compile(with_ws, out_idx=[1], workspace_idx=[2], target="cpu")
    x = np.ones(100, np.float32)
    k(x)
    before = tilejit.pool_stats()
    assert set(before) == {"leases", "hits", "misses", "device_allocs", "device_frees",
                           "oom_retries", "bytes_reserved", "bytes_in_use",
                           "peak_bytes_reserved", "blocks"}
    for _ in range(10):
        k(x)
    after = tilejit.pool_stats("cpu")
    assert after["leases"] == before["leases"] + 10
    assert after["hits"] == before["hits"] + 10
    assert after["device_allocs"] == before["device_allocs"]
    assert after["bytes_in_use"] == 0 and after["bytes_reserved"] >= 512
    assert tilejit.empty_cache() >= 512
    assert tilejit.pool_stats()["bytes_reserved"] == 0
    with raises_exact(ValueError, "bad device 'gpu'; expected 'cpu', 'cuda' or 'cuda:N'"):
        tilejit.pool_stats("gpu")
    with raises_exact(ValueError, "bad device 'cuda:x'; expected 'cpu', 'cuda' or 'cuda:N'"):
        tilejit.pool_stats("cuda:x")


def test_cache_stats_and_empty_cache():
    calls = []

    @tilejit.jit(out_idx=[1], target="cpu")
    def doubled(tag):
        calls.append(tag)
        n = T.symbolic("n")

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = 2 * X(i);")
        return main

    stats = tilejit.cache_stats()
    assert {"memory_hits", "disk_hits", "compiles", "loads", "disk", "kernels"} <= set(stats)
    assert stats["disk"]["dir"] == os.environ["TILEJIT_CACHE_DIR"]
    k = doubled("a")
    doubled("b")  # the same source: the module comes from memory
    after = tilejit.cache_stats()
    assert after["kernels"] >= 2
    assert after["compiles"] + after["disk_hits"] + after["memory_hits"] >= \
        stats["compiles"] + stats["disk_hits"] + stats["memory_hits"] + 2
    assert doubled.cache_size() == 2
    tilejit.empty_cache()
    assert doubled.cache_size() == 0 and tilejit.cache_stats()["kernels"] == 0
    np.testing.assert_array_equal(k(np.ones(2, np.float32)), [2, 2])  # still works
    doubled("a")
    assert calls == ["a", "b", "a"]  # rebuilt after empty_cache


def test_disk_cache_is_used_across_processes(tmp_path):
    script = r"""
import numpy as np, tilejit
from tilejit import language as T
n = T.symbolic("n")
@T.prim_func
def disk_cached(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
    T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = X(i) - 1;")
k = tilejit.compile(disk_cached, out_idx=[1], target="cpu")
assert k(np.ones(3, np.float32)).tolist() == [0, 0, 0]
s = tilejit.cache_stats()
print(s["compiles"], s["disk_hits"])
"""
    env = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    assert first == ["1", "0"] and second == ["0", "1"]
    assert any(p.suffix == ".bin" for p in tmp_path.iterdir())


def test_import_needs_neither_torch_nor_a_gpu():
    code = ("import sys, tilejit; from tilejit import language as T; "
            "assert 'torch' not in sys.modules; print(tilejit._C.registered_targets())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "cpu" in out


def test_set_cache_dir(tmp_path):
    old = tilejit.cache_stats()["disk"]["dir"]
    try:
        tilejit.set_cache_dir(str(tmp_path))
        assert tilejit.cache_stats()["disk"]["dir"] == str(tmp_path)
        n = T.symbolic("n")

        @T.prim_func
        def elsewhere(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            T.source(cpu="for (int64_t i = 0; i < n; ++i) Y(i) = X(i) * 3;")

        tilejit.compile(elsewhere, out_idx=[1], target="cpu")
        assert any(p.suffix == ".bin" for p in tmp_path.iterdir())
    finally:
        tilejit.set_cache_dir(old)


def test_kernel_repr_and_attributes():
    k = add_one_kernel()
    assert repr(k) == "<tilejit.Kernel add_one(X) target='cpu'>"
    assert k.symbols == ["n"] and k.output_names == ["Y"] and k.workspace_names == []
    assert k.workspace_bytes(np.zeros(3, np.float32)) == 0
    assert k.workspace_layout(np.zeros(3, np.float32)) == []
    assert "Y(i) = X(i) + 1.0f;" in k.get_source()
    # The device is the backend's answer, not a guess from the target name.
    assert k.device == "cpu"


def test_kernel_device_is_the_backends_default():
    if "cuda" not in tilejit._C.registered_targets() or not tilejit._C.target_available("cuda"):
        pytest.skip("tilejit's cuda target is not available")

    @T.prim_func
    def noop(X: T.Tensor([4], "float32")):
        T.source(cuda="")

    assert tilejit.compile(noop, target="cuda").device == "cuda:0"

"""The autotuner's choices on disk: a new tuner (or a new process) making
the same call compiles the stored config alone and times nothing; the key
covers the factory, the call's arguments, the configs and the target; files
are written by rename; a bad file means tuning again."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilejit
import tilejit as tilelang
from tilejit import language as T
from tilejit import profiler as _profiler


def make_tuned(built, configs=None, target="cpu"):
    """A fresh tuner over a fresh factory: the state a new process starts
    with. Factor 2 is the only config that passes the check."""
    configs = configs or [{"factor": 2.0}, {"factor": 3.0}]

    @tilelang.autotune(configs=configs, ref_prog=lambda X: X * 2, warmup=1, rep=2)
    @tilelang.jit(out_idx=[1], target=target)
    def doubled(n, factor=1.0):
        built.append((n, factor))

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            with T.Kernel(1, threads=1):
                T.source(cpu=f"for (int i = 0; i < {n}; ++i) Y(i) = X(i) * {factor}f;")
        return main
    return doubled


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    previous = tilejit._C.cache_dir()
    tilejit.set_cache_dir(str(tmp_path))
    timings = []
    original = _profiler.Profiler.do_bench

    def counted(self, *args, **kwargs):
        timings.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_profiler.Profiler, "do_bench", counted)
    try:
        yield tmp_path, timings
    finally:
        tilejit.set_cache_dir(previous)


def entries(directory):
    tuned = directory / "autotune"
    return sorted(tuned.iterdir()) if tuned.is_dir() else []


def test_a_new_tuner_takes_the_stored_choice_without_timing(cache_dir):
    directory, timings = cache_dir
    built = []
    first = make_tuned(built)
    kernel = first(16)
    assert sorted(built) == [(16, 2.0), (16, 3.0)] and len(timings) == 1  # 3.0 fails the check
    assert first.best_config == {"factor": 2.0}
    [path] = entries(directory)
    assert path.suffix == ".json" and len(path.stem) == 32
    entry = json.loads(path.read_text())
    assert entry["candidate"] == 0 and entry["latency_ms"] == first.best_latency
    assert entry["arguments"] == "[('factor', 2.0), ('n', 16)]"
    assert entry["key"]["factory"].endswith("make_tuned.<locals>.doubled")
    assert entry["key"]["arguments"] == "[('n', 16)]"
    assert entry["key"]["configs"] == "[{'factor': 2.0}, {'factor': 3.0}]"
    assert entry["key"]["target"] == "'cpu'"
    assert not [p for p in (directory / "autotune").iterdir() if p.name.startswith(".tmp-")]

    built.clear()
    second = make_tuned(built)
    again = second(16)
    assert built == [(16, 2.0)] and len(timings) == 1  # the stored config alone, untimed
    assert second.best_config == {"factor": 2.0} and second.best_latency == first.best_latency
    assert again is not kernel
    np.testing.assert_array_equal(again(np.ones(16, np.float32)), np.full(16, 2.0))
    assert second(16) is again and built == [(16, 2.0)]


def test_the_key_covers_arguments_configs_and_target(cache_dir):
    directory, timings = cache_dir
    built = []
    make_tuned(built)(16)
    make_tuned(built)(8)                                              # other arguments
    make_tuned(built, configs=[{"factor": 3.0}, {"factor": 2.0}])(16)  # other configs
    make_tuned(built).retarget("auto")(16)                            # another target
    assert len(timings) == 4 and len(entries(directory)) == 4
    available = ", ".join(t for t in tilejit._C.registered_targets()
                          if tilejit._C.target_available(t))
    targets = sorted(json.loads(p.read_text())["key"]["target"] for p in entries(directory))
    assert targets == ["'auto (%s)'" % available] + ["'cpu'"] * 3
    chosen = [json.loads(p.read_text())["candidate"] for p in entries(directory)]
    assert sorted(chosen) == [0, 0, 0, 1]  # factor 2.0 is second in the reordered configs
    # TileLang's spelling of the CPU is the CPU: its choice is the one stored.
    built.clear()
    llvm = make_tuned(built).retarget("llvm")
    llvm(16)
    assert built == [(16, 2.0)] and len(timings) == 4 and llvm.best_config == {"factor": 2.0}


def test_a_bad_file_means_tuning_again(cache_dir):
    directory, timings = cache_dir
    make_tuned([])(16)
    [path] = entries(directory)
    good = path.read_text()
    for bad in ["{not json", json.dumps({**json.loads(good), "candidate": 7}),
                json.dumps({**json.loads(good), "key": {"factory": "other"}})]:
        path.write_text(bad)
        built = []
        tuner = make_tuned(built)
        tuner(16)
        assert sorted(built) == [(16, 2.0), (16, 3.0)] and tuner.best_config == {"factor": 2.0}
        assert json.loads(path.read_text())["candidate"] == 0  # rewritten whole
    assert len(timings) == 4


def test_no_file_without_the_disk_cache(cache_dir):
    directory, timings = cache_dir
    tilelang.disable_cache()
    try:
        make_tuned([])(16)
    finally:
        tilelang.enable_cache()
    built = []

    @tilelang.autotune(configs=[{"factor": 2.0}], warmup=1, rep=1)
    @tilelang.jit(out_idx=[1], target="cpu", disk_cache=False)
    def uncached(n, factor=1.0):
        built.append(factor)

        @T.prim_func
        def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
            with T.Kernel(1, threads=1):
                T.source(cpu=f"for (int i = 0; i < {n}; ++i) Y(i) = X(i) * {factor}f;")
        return main

    uncached(4)
    assert entries(directory) == [] and len(timings) == 2


def test_clear_cache_removes_the_stored_choices(cache_dir):
    directory, _ = cache_dir
    make_tuned([])(16)
    assert len(entries(directory)) == 1
    removed = tilelang.cache.clear_cache()
    assert removed >= 1 and not (directory / "autotune").exists()


def test_a_new_process_does_not_tune_again(tmp_path):
    tests = Path(__file__).resolve().parent
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from tilejit import profiler\n"
        "timed = []\n"
        "bench = profiler.Profiler.do_bench\n"
        "profiler.Profiler.do_bench = lambda self, *a, **k: timed.append(1) or bench(self, *a, **k)\n"
        "from test_autotune_cache import make_tuned\n"
        "built = []\n"
        "tuner = make_tuned(built)\n"
        "tuner(16)\n"
        "print(sorted(built), len(timed), tuner.best_config)\n" % str(tests))
    env = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path))
    run = [sys.executable, "-c", script]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    second = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    assert first.strip() == "[(16, 2.0), (16, 3.0)] 1 {'factor': 2.0}"
    assert second.strip() == "[(16, 2.0)] 0 {'factor': 2.0}"


def test_a_stored_config_that_no_longer_builds_is_tuned_again(cache_dir):
    directory, timings = cache_dir

    def make(broken, built):
        @tilelang.autotune(configs=[{"variant": 0}, {"variant": 1}], warmup=1, rep=2)
        @tilelang.jit(out_idx=[1], target="cpu")
        def copied(n, variant=0):
            built.append(variant)
            if variant in broken:
                raise ValueError(f"variant {variant} does not build here")

            @T.prim_func
            def main(X: T.Tensor([n], "float32"), Y: T.Tensor([n], "float32")):
                with T.Kernel(1, threads=1):
                    T.source(cpu=f"for (int i = 0; i < {n}; ++i) Y(i) = X(i);  // {variant}")
            return main
        return copied

    first = make(set(), [])
    first(8)
    chosen = first.best_config["variant"]
    built = []
    second = make({chosen}, built)
    second(8)
    # The stored choice failed to build; the tuning compiled both again and
    # kept the one that builds.
    assert sorted(built) == sorted([0, 1, chosen]) and second.best_config == {"variant": 1 - chosen}
    [path] = entries(directory)
    assert json.loads(path.read_text())["candidate"] == 1 - chosen
    assert len(timings) == 2 + 1

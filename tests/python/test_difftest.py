"""The differential tester (tests/difftest): random tile programs run on the
CPU target and compared with a numpy interpreter of TileLang's semantics.

- Every case of the regression corpus (tests/difftest/regressions/*.json, a
  program that once failed, with a note of what it found) runs again, on
  the CPU target and, where a GPU and torch are, on CUDA; a
  case whose program uses a feature that features.py switches off for the
  CPU (a known defect, named with its issue item) is an expected failure.
- Random programs from the committed seeds (tests/difftest/seeds.txt),
  then from consecutive seeds, run for TILEJIT_DIFFTEST_SECONDS (60 s when
  CI is set, and scripts/test.sh sets 60; 10 s otherwise); the seeds that
  ran are printed, and a failure prints its seed, the program and the
  first mismatching element.
- The interpreter's own model is checked on small programs whose result
  numpy gives directly, and its checks of the generator's rules (races,
  indices outside a tile) on programs that break them.

`python3 -m difftest` (from tests/) runs the generator for longer and
writes what fails into the corpus; `--target cuda` runs it on a GPU
(scripts/gpu_run.sh).
"""

import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from difftest import corpus, features, render  # noqa: E402
from difftest.generator import generate  # noqa: E402
from difftest.interpret import InvalidProgram, interpret  # noqa: E402
from difftest.program import (AtomicAdd, Bin, Buffer, Const, Copy, For, If, Let,  # noqa: E402
                              Load, Operand, Param, Parallel, Program, Store, ThreadIdx,
                              Var, from_json, to_json)
from difftest.runner import Worker, describe  # noqa: E402
from support import raises_exact, tilejit_cuda_unavailable  # noqa: E402
from test_tile_kernels import needs_tile_cpu  # noqa: E402

TARGET = "cpu"
SEEDS_FILE = Path(corpus.HERE) / "seeds.txt"


def _budget_s():
    value = os.environ.get("TILEJIT_DIFFTEST_SECONDS")
    if value is not None:
        return float(value)
    return 60.0 if os.environ.get("CI") else 10.0


@pytest.fixture(scope="module")
def worker():
    w = Worker(timeout_s=300)
    yield w
    w.close()


# --- the regression corpus ----------------------------------------------------

def _case_params():
    # Every case on the CPU, and on CUDA where a GPU is (with torch).
    no_cuda = tilejit_cuda_unavailable()
    if not no_cuda:
        try:
            import torch  # noqa: F401 (the runner moves CUDA arrays with it)
        except ImportError:
            no_cuda = "torch is not installed"
    out = []
    for target in (TARGET, "cuda"):
        for path in corpus.cases():
            case = corpus.load(path)
            why = features.known_defect(corpus.detect(case["program"]), target)
            marks = [pytest.mark.xfail(reason=why, strict=False)] if why else []
            if target == "cuda":
                marks.append(pytest.mark.skipif(bool(no_cuda), reason=no_cuda))
            # A program a target refuses by design, with the case's reason.
            if target in case.get("not_on", {}):
                marks.append(pytest.mark.skip(reason=case["not_on"][target]))
            out.append(pytest.param(path, target, id=f"{target}-{path.stem}", marks=marks))
    return out


@needs_tile_cpu
@pytest.mark.parametrize("path, target", _case_params())
def test_regression_case(path, target, worker):
    case = corpus.load(path)
    result = worker.check(case["program"], target, case["seed"])
    assert not result.failed, (f"{path.name} ({case['note']}):\n" +
                               describe(result, case["seed"], target))


def test_every_regression_case_says_what_it_found():
    for path in corpus.cases():
        case = json.loads(path.read_text())
        assert case["note"] and case["found_on"] in ("cpu", "cuda"), path.name
        program = from_json(case["program"])
        assert case["source"] == render.source(program, corpus.header(
            program, case["seed"])).splitlines(), f"{path.name}: source differs from program"


# --- random programs ------------------------------------------------------------

@needs_tile_cpu
def test_random_programs_match_the_interpreter(worker, capsys):
    chosen = features.enabled(TARGET)
    committed = [int(s) for line in SEEDS_FILE.read_text().splitlines()
                 for s in line.split("#")[0].split()]
    budget = _budget_s()
    start = time.monotonic()
    ran, failures = [], []
    seeds = itertools.chain(committed, itertools.count(100000))
    while time.monotonic() - start < budget:
        seed = next(seeds)
        program = generate(seed, chosen)
        result = worker.check(program, TARGET, seed)
        ran.append(seed)
        if result.failed:
            failures.append(describe(result, seed, TARGET))
    with capsys.disabled():  # the seeds that ran, shown whether or not the test fails
        print(f"\ndifftest: {len(ran)} programs in {time.monotonic() - start:.0f} s on "
              f"{TARGET}, seeds {', '.join(map(str, ran))}")
    assert ran, "no program ran"
    assert not failures, "\n\n".join(failures)


def test_the_same_seed_gives_the_same_program_and_json_keeps_it():
    chosen = features.enabled(TARGET, all_features=True)
    for seed in range(20):
        p = generate(seed, chosen)
        assert to_json(generate(seed, chosen)) == to_json(p)
        assert from_json(json.loads(json.dumps(to_json(p)))) == p
        assert set(p.features) <= chosen and set(p.features) == corpus.detect(p)


def test_a_switched_off_feature_is_never_drawn():
    chosen = features.enabled(TARGET)
    for seed in range(100):
        p = generate(seed, chosen)
        assert not features.off_for(p.features, TARGET), (seed, p.features)
    only = {"copy_corner", "parallel_fragment"}
    for seed in range(20):
        assert set(generate(seed, only).features) <= only | {"partial_tiles", "symbolic"}


def test_unknown_features_are_named():
    with raises_exact(ValueError, "unknown features: copy_diagonal, warp; expected some of " +
                      ", ".join(features.FEATURES)):
        features.enabled("cpu", only=["copy_diagonal", "copy_slice"], without=["warp"])


# --- the interpreter's model ------------------------------------------------------

def _program(params, body, threads=4, grid=(1,)):
    return Program("p", params, {}, [Const(g, "int32") for g in grid], threads, body)


def _param(name, shape, role="in", dtype="float32"):
    return Param(Buffer(name, "global", list(shape), dtype), role)


def I(n):  # noqa: E743
    return Var(n, "int32")


def test_every_thread_runs_the_statements_outside_tile_ops():
    # B[bx * 4 + tx] = A[bx * 4 + tx] * 2 on 4 threads of 3 blocks: all 12.
    a = np.arange(12, dtype=np.float32)
    idx = Bin("+", Bin("*", I("bx"), Const(4, "int32"), "int32"), I("tx"), "int32")
    p = _program([_param("A", [12]), _param("B", [12], "out")], [
        Let("tx", ThreadIdx()),
        Store("B", [idx], Bin("*", Load("A", [idx], "float32"), Const(2.0, "float32"),
                              "float32"))], grid=(3,))
    out = interpret(p, {"A": a, "B": np.zeros(12, np.float32)}, {})
    np.testing.assert_array_equal(out["B"], a * 2)


def test_each_thread_has_its_own_var_and_a_tile_op_runs_once():
    # Each of 5 threads sums tx + 1 three times in its own T.alloc_var, then
    # adds it atomically into a shared element cleared once by a tile op.
    from difftest.program import Alloc, Cast, Fill
    acc = Buffer("acc", "var", [1], "float32", init=0.0)
    tx1 = Cast(Bin("+", I("tx"), Const(1, "int32"), "int32"), "float32")
    p = _program([_param("O", [1], "out")], [
        Let("tx", ThreadIdx()), Alloc(acc), Alloc(Buffer("S", "shared", [1], "float32")),
        Fill(Operand("S"), Const(0, "float32"), as_clear=True),
        For("j", Const(3, "int32"), [
            Store("acc", [], Bin("+", Load("acc", [], "float32"), tx1, "float32"))]),
        AtomicAdd("S", [Const(0, "int32")], Load("acc", [], "float32")),
        Copy(Operand("S"), Operand("O"))], threads=5)
    out = interpret(p, {"O": np.zeros(1, np.float32)}, {})
    np.testing.assert_array_equal(out["O"], [3.0 * (1 + 2 + 3 + 4 + 5)])


def test_a_tile_op_under_a_thread_range_runs_once_for_those_threads():
    from difftest.program import Alloc
    sh = Buffer("S", "shared", [4], "float32")
    cond = Bin("<", I("tx"), Const(2, "int32"), "bool")
    p = _program([_param("A", [4]), _param("B", [4]), _param("O", [4], "out")], [
        Let("tx", ThreadIdx()), Alloc(sh),
        If(cond, [Copy(Operand("A"), Operand("S"))], [Copy(Operand("B"), Operand("O"))])])
    a, b = np.ones(4, np.float32), np.full(4, 3.0, np.float32)
    np.testing.assert_array_equal(interpret(p, {"A": a, "B": b, "O": np.zeros(4, np.float32)},
                                            {})["O"], b)


def test_a_copy_reads_zeros_outside_the_tensor_and_writes_nothing_there():
    from difftest.program import Alloc
    sh = Buffer("S", "shared", [4], "float32")
    start = [Const(2, "int32")]
    p = _program([_param("A", [5]), _param("O", [5], "out")], [
        Alloc(sh), Copy(Operand("A", "corner", start), Operand("S")),
        Copy(Operand("S"), Operand("O", "slice", [Const(3, "int32")], [4], [False]))])
    a = np.arange(1, 6, dtype=np.float32)
    out = interpret(p, {"A": a, "O": np.full(5, -1, np.float32)}, {})["O"]
    np.testing.assert_array_equal(out, [-1, -1, -1, 3, 4])  # S = [3, 4, 5, 0]


def test_races_and_indices_outside_a_tile_are_invalid_programs():
    from difftest.program import Alloc
    sh = Buffer("S", "shared", [4], "float32")
    racy = _program([_param("O", [4], "out")], [
        Let("tx", ThreadIdx()), Alloc(sh),
        Store("S", [Const(0, "int32")], Bin("*", Const(1.0, "float32"), Const(2.0, "float32"),
                                            "float32"))])
    with pytest.raises(InvalidProgram, match=r"race on S\[0\]: threads 0 and 1"):
        interpret(racy, {"O": np.zeros(4, np.float32)}, {})
    past = _program([_param("X", [8]), _param("O", [4], "out")], [
        Alloc(Buffer("f", "fragment", [4], "float32")),
        Parallel(["i"], [8], [Store("f", [I("i")], Load("X", [I("i")], "float32"))])])
    with pytest.raises(InvalidProgram, match=r"out of bounds: store into f\[4\]"):
        interpret(past, {"X": np.zeros(8, np.float32), "O": np.zeros(4, np.float32)}, {})
    shifted = _program([_param("O", [4], "out")], [
        Alloc(Buffer("f", "fragment", [4], "float32")),
        Parallel(["i"], [3], [Store("f", [I("i")], Load(
            "f", [Bin("+", I("i"), Const(1, "int32"), "int32")], "float32"))])])
    with pytest.raises(InvalidProgram, match="a T.Parallel iteration reads another's f"):
        interpret(shifted, {"O": np.zeros(4, np.float32)}, {})

"""kernel.lowering_report(): where the CPU lowering placed each buffer and
which path each tile op took, as plain JSON-serialisable dicts at the
author's lines."""

import inspect
import json

import pytest

import tilejit
import tilejit.language as T

pytestmark = pytest.mark.skipif(not hasattr(tilejit._C, "TileBuilder"),
                                reason="this build has no tile builder")


def _line_of(fn, text):
    """The file line of the first source line of `fn` that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} is not in {fn.__name__}")


def matmul(M, N, K, bm, bn, bk, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), dtype)
            B_shared = T.alloc_shared((bk, bn), dtype)
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], A_shared)
                T.copy(B[ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bm, bx * bn])

    return main


def column_copy():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32):
            col = T.alloc_shared((64,), "float32")
            T.copy(A[0:64, 3], col)
            T.copy(col, B)

    return main


def _kernel(f):
    return tilejit.compile(f, target="cpu")


def test_every_entry_is_a_plain_json_serialisable_dict():
    report = _kernel(matmul(128, 128, 128, 64, 64, 32)).lowering_report()
    assert isinstance(report, list) and report
    assert json.loads(json.dumps(report)) == report
    for entry in report:
        assert type(entry) is dict
        if entry["kind"] == "buffer":
            assert {"name", "scope", "placement", "bytes", "line"} <= entry.keys()
            assert entry["placement"] in ("registers", "shared", "global", "local")
        else:
            assert entry["kind"] == "op"
            assert {"op", "line", "path", "reason"} <= entry.keys()


def test_the_cpu_report_of_a_gemm():
    f = matmul(128, 128, 128, 64, 64, 32)
    report = _kernel(f).lowering_report()
    buffers = {e["name"]: e for e in report if e["kind"] == "buffer"}
    assert buffers["A_shared"] == {
        "kind": "buffer", "name": "A_shared", "scope": "shared", "placement": "shared",
        "storage": "stack", "layout": "row_major", "bytes": 64 * 32 * 2, "file": buffers["A_shared"]["file"],
        "line": buffers["A_shared"]["line"], "forced_by": None}
    # 64 x 64 float32 is 16 KiB: the stack's limit.
    assert buffers["C_local"]["bytes"] == 64 * 64 * 4
    assert buffers["C_local"]["storage"] == "stack"
    ops = [(e["op"], e["path"]) for e in report if e["kind"] == "op"]
    assert ops == [("T.fill", "loop"), ("T.Pipelined", "not_pipelined"), ("T.copy", "rows"),
                   ("T.copy", "rows"), ("T.gemm", "micro_kernel"), ("T.copy", "rows")]
    gemm = next(e for e in report if e.get("op") == "T.gemm")
    assert gemm["reason"] == ("A, B copied to float32 tiles first (the micro-kernel reads "
                              "float32 operands and an untransposed B)")
    last = [e for e in report if e.get("op") == "T.copy"][-1]
    assert last["reason"] == ("dtype conversion (float32 to float16): each row is converted, "
                              "not copied with memcpy")


def test_lines_are_the_authors():
    f = matmul(128, 128, 128, 64, 64, 32)
    report = _kernel(f).lowering_report()
    source_file = inspect.getsourcefile(matmul)
    buffers = {e["name"]: e for e in report if e["kind"] == "buffer"}
    assert buffers["A_shared"]["line"] == _line_of(matmul, "A_shared = T.alloc_shared")
    assert buffers["C_local"]["line"] == _line_of(matmul, "C_local = T.alloc_fragment")
    assert buffers["A_shared"]["file"] == source_file
    gemm = next(e for e in report if e.get("op") == "T.gemm")
    assert gemm["line"] == _line_of(matmul, "T.gemm(A_shared")
    assert gemm["file"] == source_file
    pipelined = next(e for e in report if e.get("op") == "T.Pipelined")
    assert pipelined["line"] == _line_of(matmul, "T.Pipelined(")


def test_a_column_copy_goes_element_by_element_and_says_why():
    report = _kernel(column_copy()).lowering_report()
    copies = [e for e in report if e.get("op") == "T.copy"]
    assert [c["path"] for c in copies] == ["elementwise", "rows"]
    assert copies[0]["reason"] == "a column copy: the rows of the source are not contiguous"
    assert copies[0]["line"] == _line_of(column_copy, "T.copy(A[0:64, 3], col)")


def test_a_large_tile_goes_to_the_arena():
    report = _kernel(matmul(256, 256, 64, 128, 128, 32)).lowering_report()
    acc = next(e for e in report if e.get("name") == "C_local")
    assert acc["bytes"] == 128 * 128 * 4
    assert acc["storage"] == "arena"

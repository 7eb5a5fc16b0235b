#!/usr/bin/env python3
"""Writes the hand-made seeds of the fuzz corpus (tests/fuzz/corpus/seed_*).

Each seed is a signature written out as the bytes fuzz_signature.cpp reads
(Bytes: one byte per choice, front to back), so that fuzzing starts from
kernels shaped like real ones: the sparse-attention signature of the README,
a symbol bound by a scalar and solved from an affine extent, zeroed
workspaces with a supplied workspace= arena, and shapes that overflow int64
(a scalar-bound square, a fourth power of a dimension). Keep this in step with the
decoder when it changes; `TILEJIT_FUZZ_VERBOSE=1 fuzz_signature FILE` shows
what a file does.

  make_seeds.py OUT_DIR
"""
import os
import sys

SYMBOLS = {"a": 0, "b": 1, "c": 2, "d": 3}
DTYPES = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3, "int8": 4, "int16": 5,
          "int32": 6, "int64": 7, "uint8": 8, "bool": 9}
SMALL = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 8: 6, 16: 7, 100: 8}
# kSpecial in fuzz_signature.cpp, in order.
SPECIAL = [0, 1, 2, 3, 4, 7, 16, 64, 255, 256, 1 << 20, 1 << 31, -1, -5, 2**63 - 1, -2**63,
           (2**63 - 1) // 2, 1 << 40, 65536, 1 << 32, 3037000499, 3037000500, 2097152, 1 << 62]


class Encoder:
    def __init__(self):
        self.out = bytearray()

    def pick(self, k, v):
        assert 0 <= v < k
        self.out.append(v)

    def one_in(self, k, yes):
        self.out.append(0 if yes else 1)

    # gen_expr at depth > 0: ('const', n) | ('sym', s) | ('mul_sym', c, s) | ('affine', c, s, k)
    # | ('pow', s, k, c or None): s^k (+ c), k in [2, 5], c in [0, 8]
    # | (op, x, y) with op in + - * // % ceildiv min max
    def expr(self, e, depth=2):
        kind = e[0]
        ops = {"+": 4, "-": 5, "*": 6, "//": 8, "%": 9, "ceildiv": 10, "min": 11, "max": 12}
        k = 16 if depth > 0 else 4
        if kind == "const":
            self.pick(k, 0)
            self.pick(9, e[1])
        elif kind == "sym":
            self.pick(k, 1)
            self.pick(4, SYMBOLS[e[1]])
        elif kind == "affine":  # c * s + k, c in [-3, 4], k in [-4, 8]
            self.pick(k, 7)
            self.pick(8, e[1] + 3)
            self.pick(4, SYMBOLS[e[2]])
            self.pick(13, e[3] + 4)
        elif kind == "pow":
            self.pick(k, 15)
            self.pick(4, SYMBOLS[e[1]])
            self.pick(4, e[2] - 2)
            self.one_in(2, e[3] is None)
            if e[3] is not None:
                self.pick(9, e[3])
        elif kind == "sym*sym":
            self.pick(k, 13)
            self.pick(4, SYMBOLS[e[1]])
            self.pick(4, SYMBOLS[e[2]])
        else:
            self.pick(k, ops[kind])
            self.expr(e[1], depth - 1)
            self.expr(e[2], depth - 1)

    def tensor(self, index_name_default, dtype, shape):
        self.pick(8, 0)  # a tensor
        self.pick(16, 3)  # the default name P<index>
        self.one_in(32, False)
        self.pick(10, DTYPES[dtype])
        self.pick(5, len(shape))
        for e in shape:
            self.expr(e)

    def scalar(self, symbol, dtype):
        self.pick(8, 6)  # a scalar
        self.pick(16, 3)
        if symbol:
            self.one_in(2, True)
            self.pick(4, SYMBOLS[symbol])
        else:
            self.one_in(2, False)
        self.one_in(16, False)
        self.pick(3, {"int32": 0, "int64": 1, "float32": 2}[dtype])

    def indices(self, values):
        if values is None:
            self.pick(4, 0)
            return
        self.pick(4, 2)
        self.pick(4, len(values))
        for v in values:
            self.pick(21, v + 10)

    def symbol_values(self, values):
        for s in "abcd":
            v = values.get(s, 1)
            self.one_in(8, v not in SMALL)
            if v in SMALL:
                self.pick(9, SMALL[v])
            else:
                self.pick(len(SPECIAL), SPECIAL.index(v))

    def good_tensor_input(self, rank):
        self.pick(24, 4)  # a tensor
        self.one_in(16, False)  # declared dtype
        self.one_in(16, False)  # declared shape
        for _ in range(rank):
            self.one_in(8, False)  # the declared extent
        self.one_in(32, False)  # cpu
        self.one_in(32, False)
        self.one_in(16, False)  # contiguous
        self.one_in(64, False)

    def good_scalar_input(self, value_index=None):
        self.pick(24, 4)
        self.one_in(4, False)
        self.one_in(8, False)
        self.pick(9, value_index or 0)
        self.one_in(8, False)  # a symbol's scalar gets the symbol's value

    def end_inputs(self):
        self.one_in(16, False)
        self.one_in(16, False)


def sparse_attention():
    """Q [a, b, 4, 8] bf16, KV [a, c, 8] bf16, Indices [a, b, 16] int32,
    Output [a, b, 4, 8] bf16, ws [a * b, 16, 8] float32; out_idx [3],
    workspace_idx [4], grid [a * b]."""
    e = Encoder()
    e.one_in(64, False)
    e.pick(8, 4)  # 5 parameters
    A, B, C = ("sym", "a"), ("sym", "b"), ("sym", "c")
    e.tensor(0, "bfloat16", [A, B, ("const", 4), ("const", 8)])
    e.tensor(1, "bfloat16", [A, C, ("const", 8)])
    e.tensor(2, "int32", [A, B, ("*", ("const", 8), ("const", 2))])
    e.tensor(3, "bfloat16", [A, B, ("const", 4), ("const", 8)])
    e.tensor(4, "float32", [("sym*sym", "a", "b"), ("*", ("const", 4), ("const", 4)), ("const", 8)])
    e.one_in(32, False)
    e.pick(3, 0)  # one extent
    e.pick(4, 1)  # a grid is given
    e.expr(("sym*sym", "a", "b"))
    e.one_in(16, False)
    e.one_in(8, False)
    e.indices([3])
    e.indices([4])
    e.one_in(4, False)  # no workspace_init
    e.pick(4, 1)  # two calls
    for values in ({"a": 2, "b": 3, "c": 5}, {"a": 1, "b": 16, "c": 100}):
        e.symbol_values(values)
        for rank in (4, 3, 3):
            e.good_tensor_input(rank)
        e.end_inputs()
        e.one_in(8, False)  # no out=
        e.one_in(8, False)  # no workspace=
    return bytes(e.out)


def scalar_and_affine():
    """X [2 * a + 1] f32, scalar b int64, Y [a, b] f32 (output),
    W [ceildiv(a, 4), b] int32 (workspace); grid [ceildiv(a, 4)]."""
    e = Encoder()
    e.one_in(64, False)
    e.pick(8, 3)  # 4 parameters
    e.tensor(0, "float32", [("affine", 2, "a", 1)])
    e.scalar("b", "int64")
    e.tensor(2, "float32", [("sym", "a"), ("sym", "b")])
    e.tensor(3, "int32", [("ceildiv", ("sym", "a"), ("const", 4)), ("sym", "b")])
    e.one_in(32, False)
    e.pick(3, 0)
    e.pick(4, 1)
    e.expr(("ceildiv", ("sym", "a"), ("const", 4)))
    e.one_in(16, False)
    e.one_in(8, False)
    e.indices([2])
    e.indices([-1])
    e.one_in(4, False)
    e.pick(4, 0)  # one call
    e.symbol_values({"a": 5, "b": 3})
    e.good_tensor_input(1)
    e.good_scalar_input()
    e.end_inputs()
    e.one_in(8, False)
    e.one_in(8, False)
    return bytes(e.out)


def zeroed_workspaces_with_arena():
    """X [a] f32, W1 [a, 8] f32 and W2 [16] int64 workspaces, zero and
    zero_once; one call from the pool, one with a supplied workspace=."""
    e = Encoder()
    e.one_in(64, False)
    e.pick(8, 2)  # 3 parameters
    e.tensor(0, "float32", [("sym", "a")])
    e.tensor(1, "float32", [("sym", "a"), ("const", 8)])
    e.tensor(2, "int64", [("*", ("const", 4), ("const", 4))])
    e.one_in(32, False)
    e.pick(3, 0)
    e.pick(4, 1)
    e.expr(("sym", "a"))
    e.one_in(16, False)
    e.one_in(8, False)
    e.indices(None)
    e.indices([1, 2])
    e.one_in(4, True)  # workspace_init
    e.pick(3, 1)  # two entries
    e.one_in(8, False)
    e.pick(8, 1)  # P1
    e.pick(3, 1)  # zero
    e.one_in(8, False)
    e.pick(8, 2)  # P2
    e.pick(3, 2)  # zero_once
    e.pick(4, 1)  # two calls
    for supplied in (False, True):
        e.symbol_values({"a": 16})
        e.good_tensor_input(1)
        e.end_inputs()
        e.one_in(8, False)  # no out=
        e.one_in(8, supplied)
        if supplied:
            e.one_in(4, False)  # aligned
            e.out.append(16)  # 16 << 6: a 1024-byte arena (768 needed)
            e.pick(9, 6)
            e.one_in(16, False)  # on the cpu
    return bytes(e.out)


def scalar_square_output():
    """Scalar a int64 binding a, output Y [a * a + 5] f32; a call with
    a = 2^32 (the square overflows int64), then one with a = 3."""
    e = Encoder()
    e.one_in(64, False)
    e.pick(8, 1)  # 2 parameters
    e.scalar("a", "int64")
    e.tensor(1, "float32", [("pow", "a", 2, 5)])
    e.one_in(32, False)
    e.pick(3, 0)
    e.pick(4, 1)
    e.expr(("const", 1))
    e.one_in(16, False)
    e.one_in(8, False)
    e.indices([1])
    e.indices(None)
    e.one_in(4, False)
    e.pick(4, 1)  # two calls
    for a in (1 << 32, 3):
        e.symbol_values({"a": a})
        e.good_scalar_input()
        e.end_inputs()
        e.one_in(8, False)
        e.one_in(8, False)
    return bytes(e.out)


def fourth_power_workspace():
    """X [a] uint8, Out [1] int64 (output), W [a * a * a * a] uint8
    (workspace); a call with a = 65536 (2^64 elements), then a = 4."""
    e = Encoder()
    e.one_in(64, False)
    e.pick(8, 2)  # 3 parameters
    e.tensor(0, "uint8", [("sym", "a")])
    e.tensor(1, "int64", [("const", 1)])
    e.tensor(2, "uint8", [("pow", "a", 4, None)])
    e.one_in(32, False)
    e.pick(3, 0)
    e.pick(4, 1)
    e.expr(("sym", "a"))
    e.one_in(16, False)
    e.one_in(8, False)
    e.indices([1])
    e.indices([2])
    e.one_in(4, False)
    e.pick(4, 1)  # two calls
    for a in (65536, 4):
        e.symbol_values({"a": a})
        e.good_tensor_input(1)
        e.end_inputs()
        e.one_in(8, False)
        e.one_in(8, False)
    return bytes(e.out)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "corpus"
    os.makedirs(out_dir, exist_ok=True)
    for name, make in (("seed_sparse_attention", sparse_attention),
                       ("seed_scalar_and_affine", scalar_and_affine),
                       ("seed_zeroed_workspaces", zeroed_workspaces_with_arena),
                       ("seed_scalar_square_output", scalar_square_output),
                       ("seed_fourth_power_workspace", fourth_power_workspace)):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(make())


if __name__ == "__main__":
    main()

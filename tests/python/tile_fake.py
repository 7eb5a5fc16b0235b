"""A recording stand-in for the C++ tile builder: the front-end tests trace
prim_funcs into it (tilejit.language.use_builder) and compare the printed
statements, the dtypes of the expressions and the spans each call carried.
It speaks the protocol of tilejit/language/builder.py."""

import contextlib

from tilejit import language as T

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_BITS = {"bool": 1, "int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64,
         "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//",
            "floormod": "%", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
            "ge": ">=", "and": "and", "or": "or", "bitand": "&", "bitor": "|",
            "bitxor": "^", "shl": "<<", "shr": ">>"}


class E:
    """An expression handle: text, dtype, whether it reads a buffer."""

    def __init__(self, text, dtype, loads=False):
        self.text, self.dtype, self.loads = text, dtype, loads

    def __repr__(self):
        return self.text


def _promote(a, b):
    if a == b:
        return a
    fa, fb = a in _FLOATS, b in _FLOATS
    if fa != fb:
        return a if fa else b
    return a if _BITS[a] >= _BITS[b] else b


class Func:
    """What finish() returns: the printed body and the spans."""

    def __init__(self, name, params, lines, spans):
        self.name, self.params, self.lines, self.spans = name, params, lines, spans

    @property
    def text(self):
        return "\n".join(self.lines)


class FakeBuilder:
    def __init__(self, name):
        self.name = name
        self.params = []
        self.lines = []
        self.spans = []  # (op, span) per recorded statement
        self.depth = 0
        self.vars = {}

    # expressions
    def const(self, value, dtype):
        if dtype in _FLOATS:
            return E(repr(float(value)), dtype)
        if dtype == "bool":
            return E(repr(bool(value)), dtype)
        return E(str(int(value)), dtype)

    def symbol(self, expr):
        return E(str(expr), "int64")

    def binary(self, op, a, b):
        if op in ("min", "max", "ceildiv"):
            return E(f"{op}({a.text}, {b.text})", _promote(a.dtype, b.dtype), a.loads or b.loads)
        dtype = "bool" if op in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or") else \
            _promote(a.dtype, b.dtype)
        return E(f"({a.text} {_SYMBOLS[op]} {b.text})", dtype, a.loads or b.loads)

    def unary(self, op, a):
        if op == "bitnot":
            return E(f"(~{a.text})", a.dtype, a.loads)
        assert op == "not"
        return E(f"(not {a.text})", "bool", a.loads)

    def select(self, c, t, f):
        return E(f"select({c.text}, {t.text}, {f.text})", _promote(t.dtype, f.dtype),
                 c.loads or t.loads or f.loads)

    def cast(self, dtype, a):
        return E(f"{dtype}({a.text})", dtype, a.loads)

    def call(self, name, args):
        dtype = args[0].dtype
        return E(f"{name}({', '.join(a.text for a in args)})", dtype,
                 any(a.loads for a in args))

    def load(self, buf, indices):
        return E(f"{buf.name}[{', '.join(i.text for i in indices)}]", buf.dtype, True)

    def dtype(self, h):
        return h.dtype

    def text(self, h):
        return h.text

    # statements
    def _emit(self, op, text, span):
        self.lines.append("  " * self.depth + text)
        self.spans.append((op, span))

    def _var(self, name, dtype):
        n = self.vars.get(name, 0)
        self.vars[name] = n + 1
        return E(name if n == 0 else f"{name}_{n}", dtype)

    def tensor_param(self, name, shape, dtype, span):
        self.spans.append(("param", span))
        buf = Buf(name, shape, dtype, "global")
        self.params.append(f"{name}: {dtype}[{', '.join(s.text for s in shape)}]")
        return buf

    def scalar_param(self, name, dtype, span):
        self.params.append(f"{name}: {dtype}")
        return E(name, dtype)

    def begin_kernel(self, grid, threads, span):
        idx = [self._var(n, "int32") for n in ("bx", "by", "bz")[:len(grid)]]
        self._emit("kernel", f"kernel({', '.join(g.text for g in grid)}; threads={threads}) "
                             f"as {', '.join(i.text for i in idx)}:", span)
        self.depth += 1
        return idx

    def end_kernel(self, span):
        self.depth -= 1

    def thread_binding(self, dim, span):
        return self._var(("tx", "ty", "tz")[dim], "int32")

    def use_swizzle(self, panel_size, order, enable, span):
        self._emit("use_swizzle", f"use_swizzle({panel_size}, order={order}, enable={enable})",
                   span)

    def alloc(self, name, shape, dtype, scope, span):
        self._emit("alloc", f"{name} = alloc_{scope}({dtype}[{', '.join(s.text for s in shape)}])",
                   span)
        return Buf(name, shape, dtype, scope)

    def alloc_global(self, name, shape, dtype, init, span):
        self._emit("alloc_global", f"{name} = alloc_global({dtype}"
                                   f"[{', '.join(s.text for s in shape)}], init={init})", span)
        return Buf(name, shape, dtype, "global")

    def begin_for(self, name, mn, extent, kind, stages, span):
        var = self._var(name, _promote(mn.dtype, extent.dtype))
        st = f" stages={stages}" if stages else ""
        self._emit("for", f"for {var.text} in {kind}({mn.text}, +{extent.text}){st}:", span)
        self.depth += 1
        return var

    def end_for(self, span):
        self.depth -= 1

    def begin_if(self, cond, span):
        self._emit("if", f"if {cond.text}:", span)
        self.depth += 1

    def begin_else(self, span):
        self.lines.append("  " * (self.depth - 1) + "else:")

    def end_if(self, span):
        self.depth -= 1

    def begin_while(self, cond, span):
        self._emit("while", f"while {cond.text}:", span)
        self.depth += 1

    def end_while(self, span):
        self.depth -= 1

    def break_loop(self, span):
        self._emit("break", "break", span)

    def continue_loop(self, span):
        self._emit("continue", "continue", span)

    def sync_threads(self, span):
        self._emit("sync_threads", "T.sync_threads()", span)

    def store(self, buf, indices, value, span):
        self._emit("store", f"{buf.name}[{', '.join(i.text for i in indices)}] = {value.text}",
                   span)

    def let(self, name, value, span):
        var = self._var(name, value.dtype)
        self._emit("let", f"let {var.text} = {value.text}", span)
        return var

    def evaluate(self, value, span):
        self._emit("evaluate", value.text, span)

    @staticmethod
    def _r(region):
        buf, ranges = region
        if ranges is None:
            return buf.name
        if all(ext is None for _, ext in ranges):
            return f"{buf.name}@[{', '.join(m.text for m, _ in ranges)}]"
        return f"{buf.name}[{', '.join(f'{m.text}:+{e.text}' for m, e in ranges)}]"

    def copy(self, src, dst, span, disable_tma=False):
        tma = ", disable_tma" if disable_tma else ""
        self._emit("copy", f"copy({self._r(src)} -> {self._r(dst)}{tma})", span)

    def gemm(self, a, b, c, trans_a, trans_b, clear_accum, policy, span):
        self._emit("gemm", f"gemm({self._r(a)}, {self._r(b)}, {self._r(c)}, trans_a={trans_a}, "
                           f"trans_b={trans_b}, clear_accum={clear_accum}, policy={policy})",
                   span)

    def fill(self, dst, value, span):
        self._emit("fill", f"fill({self._r(dst)}, {value.text})", span)

    def reduce(self, kind, src, dst, dim, clear, span):
        self._emit("reduce", f"reduce_{kind}({self._r(src)} -> {self._r(dst)}, dim={dim}, "
                             f"clear={clear})", span)

    def atomic_add(self, dst, value, span):
        v = self._r(value) if isinstance(value, tuple) else value.text
        self._emit("atomic_add", f"atomic_add({self._r(dst)}, {v})", span)

    def print(self, value, msg, span):
        v = self._r(value) if isinstance(value, tuple) else value.text
        self._emit("print", f"print({v}, {msg!r})", span)

    def finish(self, span):
        return Func(self.name, self.params, self.lines, self.spans)


class Buf:
    def __init__(self, name, shape, dtype, scope):
        self.name, self.shape, self.dtype, self.scope = name, shape, dtype, scope


@contextlib.contextmanager
def recording():
    """Prim_funcs declared in the block return a Func (the recording)."""
    with T.use_builder(FakeBuilder):
        yield

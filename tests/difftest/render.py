"""Prints a Program as the TileLang Python a user would write.

The text is a module: `import tilejit.language as T`, one `T.symbolic` per
shape symbol, and the `@T.prim_func` named after the program. The runner
writes it to a file and imports it, so tilejit's messages name a real
file:line. Expressions are fully parenthesised, so the printer needs no
precedence rules; a literal takes the dtype of the expression it meets (as
in TileLang), which is why a binary node's operands share its dtype.
"""

from __future__ import annotations

from typing import Any, List

from .program import (Alloc, AtomicAdd, Bin, Cast, Const, Copy, Fill, FinalizeReducer, For,
                      Gemm, If, Let, Load, Operand, Parallel, Program, Reduce, Select, Store,
                      ThreadIdx, Un, Var)

_FUNCS = {"max": "T.max", "min": "T.min", "ceildiv": "T.ceildiv"}
_UNARY = {"abs": "T.abs", "exp": "T.exp", "tanh": "T.tanh", "sigmoid": "T.sigmoid"}
_LOGIC = {"and": "&", "or": "|"}
_AUGMENTED = ("+", "-", "*")


def expr(e: Any) -> str:
    if isinstance(e, Const):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        text = repr(int(e.value)) if isinstance(e.value, int) else repr(float(e.value))
        return f"({text})" if text.startswith("-") else text
    if isinstance(e, Var):
        return e.name
    if isinstance(e, ThreadIdx):
        return "T.get_thread_binding()"
    if isinstance(e, Bin):
        a, b = expr(e.a), expr(e.b)
        if e.op in _FUNCS:
            return f"{_FUNCS[e.op]}({a}, {b})"
        return f"({a} {_LOGIC.get(e.op, e.op)} {b})"
    if isinstance(e, Un):
        return f"(-{expr(e.a)})" if e.op == "neg" else f"{_UNARY[e.op]}({expr(e.a)})"
    if isinstance(e, Cast):
        return f'T.cast({expr(e.a)}, "{e.dtype}")'
    if isinstance(e, Select):
        return f"T.if_then_else({expr(e.cond)}, {expr(e.a)}, {expr(e.b)})"
    if isinstance(e, Load):
        return e.buf if not e.idx else f"{e.buf}[{', '.join(expr(i) for i in e.idx)}]"
    raise TypeError(f"render: not an expression: {e!r}")


def operand(o: Operand) -> str:
    if o.form == "whole":
        return o.buf
    parts = []
    for d, s in enumerate(o.starts):
        if o.form == "corner":
            parts.append(expr(s))
        elif o.full and o.full[d]:
            parts.append(":")
        else:
            start = expr(s)
            stop = str(o.extents[d]) if isinstance(s, Const) and s.value == 0 else \
                f"{start} + {o.extents[d]}"
            parts.append(f"{start}:{stop}")
    return f"{o.buf}[{', '.join(parts)}]"


def _shape(shape: List[Any]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _alloc(s: Alloc) -> str:
    b = s.buf
    if b.scope == "var":
        return f'{b.name} = T.alloc_var("{b.dtype}", init={b.init!r})'
    if b.scope == "reducer":
        return (f'{b.name} = T.alloc_reducer({_shape(b.shape)}, "{b.dtype}", '
                f'op="{b.reduce_op}", replication="all")')
    fn = {"shared": "alloc_shared", "fragment": "alloc_fragment", "local": "alloc_local"}[b.scope]
    return f'{b.name} = T.{fn}({_shape(b.shape)}, "{b.dtype}")'


def _store(target: str, buf: str, idx: List[Any], value: Any) -> str:
    if (isinstance(value, Bin) and value.op in _AUGMENTED and isinstance(value.a, Load)
            and value.a.buf == buf and value.a.idx == idx):
        return f"{target} {value.op}= {expr(value.b)}"
    return f"{target} = {expr(value)}"


def _loop_range(s: For) -> str:
    n = expr(s.extent)
    if s.kind == "pipelined":
        return f"T.Pipelined({n}, num_stages={s.stages})"
    return {"serial": f"T.serial({n})", "unroll": f"T.unroll({n})", "range": f"range({n})"}[s.kind]


def stmts(body: List[Any], indent: int) -> List[str]:
    pad = "    " * indent
    out: List[str] = []
    for s in body:
        if isinstance(s, Alloc):
            out.append(pad + _alloc(s))
        elif isinstance(s, Let):
            out.append(f"{pad}{s.name} = {expr(s.value)}")
        elif isinstance(s, Store):
            target = s.buf if not s.idx else f"{s.buf}[{', '.join(expr(i) for i in s.idx)}]"
            out.append(pad + _store(target, s.buf, s.idx, s.value))
        elif isinstance(s, AtomicAdd):
            out.append(f"{pad}T.atomic_add({s.buf}[{', '.join(expr(i) for i in s.idx)}], "
                       f"{expr(s.value)})")
        elif isinstance(s, Copy):
            out.append(f"{pad}T.copy({operand(s.src)}, {operand(s.dst)})")
        elif isinstance(s, Gemm):
            flags = "".join(f", {k}=True" for k, v in (("transpose_A", s.trans_a),
                                                     ("transpose_B", s.trans_b),
                                                     ("clear_accum", s.clear)) if v)
            out.append(f"{pad}T.gemm({s.a}, {s.b}, {s.c}{flags})")
        elif isinstance(s, Reduce):
            clear = "" if s.clear else ", clear=False"
            out.append(f"{pad}T.reduce_{s.kind}({s.src}, {s.dst}, dim={s.dim}{clear})")
        elif isinstance(s, Fill):
            out.append(f"{pad}T.clear({operand(s.dst)})" if s.as_clear else
                       f"{pad}T.fill({operand(s.dst)}, {expr(s.value)})")
        elif isinstance(s, FinalizeReducer):
            out.append(f"{pad}T.finalize_reducer({s.buf})")
        elif isinstance(s, Parallel):
            out.append(f"{pad}for {', '.join(s.vars)} in "
                       f"T.Parallel({', '.join(str(n) for n in s.extents)}):")
            out += stmts(s.body, indent + 1) or [pad + "    pass"]
        elif isinstance(s, For):
            out.append(f"{pad}for {s.var} in {_loop_range(s)}:")
            out += stmts(s.body, indent + 1) or [pad + "    pass"]
        elif isinstance(s, If):
            out.append(f"{pad}if {expr(s.cond)}:")
            out += stmts(s.then, indent + 1) or [pad + "    pass"]
            if s.orelse:
                out.append(f"{pad}else:")
                out += stmts(s.orelse, indent + 1)
        else:
            raise TypeError(f"render: not a statement: {s!r}")
    return out


def source(p: Program, header: str = "") -> str:
    """The module text of `p`; `header` lines go first as comments."""
    lines = [f"# {h}" for h in header.splitlines()] if header else []
    lines += ["import tilejit.language as T", ""]
    lines += [f'{name} = T.symbolic("{name}")' for name in p.symbols]
    params = ", ".join(f'{q.buf.name}: T.Tensor({_shape(q.buf.shape)}, "{q.buf.dtype}")'
                       for q in p.params)
    grid = ", ".join(expr(g) for g in p.grid)
    names = ["bx", "by", "bz"][:len(p.grid)]
    bound = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
    lines += ["", "", "@T.prim_func", f"def {p.name}({params}):",
              f"    with T.Kernel({grid}, threads={p.threads}) as {bound}:"]
    lines += stmts(p.body, 2) or ["        pass"]
    return "\n".join(lines) + "\n"

"""The AST rewrite of a prim_func body: only what Python cannot overload.

Everything else in a body (T.* calls, arithmetic, indexing, ``with
T.Kernel``) is plain Python that records by tracing. The rewrite turns

  if c: A elif d: B else: C   ->  s = __tj.if_(c)            (one per if)
                                  if __tj.then_(s): A
                                  if __tj.else_(s): <the elif, rewritten>
                                  __tj.endif_(s)
  for x, y in it: A           ->  for x, y in __tj.for_(it, ("x", "y")): A
  for i in range(a, b): A     ->  for i in __tj.for_(__tj.range_(range, a, b), ("i",)): A
  while c: A                  ->  for __tj_w in __tj.while_(lambda: c): A
  break / continue            ->  if __tj.jump("break"): break
  return v                    ->  return __tj.ret(v)
  x = v                       ->  __tj.target = "x"; x = __tj.bind("x", v, <old x>)
  x op= v                     ->  x = __tj.aug("x", <old x>, "op", v)
  a and b, a or b, not a      ->  __tj.and_(lambda: a, lambda: b), __tj.or_(...), __tj.not_(a)
  a if c else b               ->  __tj.ifexp(c, lambda: a, lambda: b)
  a < b, a < b < c            ->  __tj.cmp(a, "lt", b), __tj.chain(a, ("lt", "lt"), lambda: b, ...)

Subscript stores (``C[i, j] = v``, ``C[i, j] += v``) stay Python: the
buffer's __setitem__ records them, with the span of the store's own
instruction. Every new node takes the position of the node it replaces, and
the code is compiled under the author's file name with the author's line
numbers and columns, so spans (spans.py) and tracebacks point at the
author's program. Constructs the front end cannot trace (try, global,
nonlocal, async, yield, match, for/while ... else) are errors naming the
construct and its file:line:col.

The compiled body is cached per code object: a factory called again with
other arguments reuses it (the prim_func's free variables are passed in).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import threading
import types
from typing import Any, Callable, Dict, Optional, Tuple

__all__ = ["rewritten", "param_spans"]

TJ = "__tj"

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.FloorDiv: "floordiv", ast.Mod: "floormod", ast.Pow: "pow",
           ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "bitand",
           ast.BitOr: "bitor", ast.BitXor: "bitxor", ast.MatMult: "matmult"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
           ast.GtE: "ge", ast.Is: "is", ast.IsNot: "is_not", ast.In: "in", ast.NotIn: "not_in"}

_UNSUPPORTED = {
    ast.Try: "try", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.AsyncFunctionDef: "async def", ast.AsyncFor: "async for", ast.AsyncWith: "async with",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from",
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = "match"


def _at(new: ast.AST, node: ast.AST, width: int = 1) -> Any:
    """`new` placed at the start of `node`, `width` columns wide on its first
    line. (A method call's instruction takes its position from the end of
    its attribute, so a synthesized call must not end where `node` ends.)"""
    new.lineno = node.lineno
    new.col_offset = node.col_offset
    new.end_lineno = node.lineno
    new.end_col_offset = node.col_offset + width
    return new


def _tj(attr: str, node: ast.AST) -> ast.expr:
    name = _at(ast.Name(id=TJ, ctx=ast.Load()), node, 0)
    return _at(ast.Attribute(value=name, attr=attr, ctx=ast.Load()), node, len(attr))


def _call(attr: str, args: list, node: ast.AST) -> ast.Call:
    return _at(ast.Call(func=_tj(attr, node), args=args, keywords=[]), node, len(attr))


def _const(value: Any, node: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=value), node)


def _lambda(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), body)


def _old_value(name: str, node: ast.AST) -> ast.expr:
    # locals().get("x", __tj_unset): the value `x` has before this
    # assignment, or a marker when it has none yet.
    get = ast.copy_location(ast.Attribute(
        value=ast.copy_location(ast.Call(func=ast.copy_location(ast.Name(id="locals",
                                                                         ctx=ast.Load()), node),
                                         args=[], keywords=[]), node),
        attr="get", ctx=ast.Load()), node)
    return ast.copy_location(ast.Call(func=get, args=[_const(name, node), _tj("UNSET", node)],
                                      keywords=[]), node)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename: str, kernel: str, eager: Tuple[str, ...] = ()) -> None:
        self.filename = filename
        self.kernel = kernel
        self.eager = eager  # the parameters a bare annotation declares
        self.count = 0

    def fail(self, node: ast.AST, construct: str) -> ValueError:
        return ValueError(f"{self.filename}:{node.lineno}:{node.col_offset + 1}: "
                            f"{self.kernel}: '{construct}' is not supported in a T.prim_func")

    def generic_visit(self, node: ast.AST) -> Any:
        construct = _UNSUPPORTED.get(type(node))
        if construct is not None:
            raise self.fail(node, construct)
        return super().generic_visit(node)

    # --- statements --------------------------------------------------------

    def visit_If(self, node: ast.If) -> Any:
        node = self.generic_visit(node)
        self.count += 1
        state = f"__tj_if{self.count}"
        store = ast.copy_location(ast.Name(id=state, ctx=ast.Store()), node)
        load = ast.copy_location(ast.Name(id=state, ctx=ast.Load()), node)
        out = [ast.copy_location(ast.Assign(targets=[store], value=_call("if_", [node.test],
                                                                              node)), node),
               ast.copy_location(ast.If(test=_call("then_", [load], node), body=node.body,
                                        orelse=[]), node)]
        if node.orelse:
            first = node.orelse[0]
            out.append(ast.copy_location(ast.If(test=_call("else_", [load], first),
                                                body=node.orelse, orelse=[]), first))
        end = node.body[-1] if not node.orelse else node.orelse[-1]
        out.append(ast.copy_location(ast.Expr(value=_call("endif_", [load], end)), end))
        return out

    def visit_For(self, node: ast.For) -> Any:
        if node.orelse:
            raise self.fail(node, "for ... else")
        node = self.generic_visit(node)
        names = _target_names(node.target)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                it.func.id == "range" and not it.keywords:
            it = _call("range_", [it.func] + list(it.args), it)
        names_node = _const(names, node)
        node.iter = _call("for_", [it, names_node], node)
        return node

    def visit_While(self, node: ast.While) -> Any:
        if node.orelse:
            raise self.fail(node, "while ... else")
        node = self.generic_visit(node)
        self.count += 1
        target = ast.copy_location(ast.Name(id=f"__tj_while{self.count}", ctx=ast.Store()), node)
        return ast.copy_location(ast.For(target=target,
                                         iter=_call("while_", [_lambda(node.test)], node),
                                         body=node.body, orelse=[], type_comment=None), node)

    def _jump(self, node: ast.stmt, kind: str) -> ast.stmt:
        return ast.copy_location(ast.If(test=_call("jump", [_const(kind, node)], node),
                                        body=[node], orelse=[]), node)

    def visit_Break(self, node: ast.Break) -> Any:
        return self._jump(node, "break")

    def visit_Continue(self, node: ast.Continue) -> Any:
        return self._jump(node, "continue")

    def visit_Return(self, node: ast.Return) -> Any:
        node = self.generic_visit(node)
        node.value = _call("ret", [node.value] if node.value is not None else [], node)
        return node

    def visit_Assign(self, node: ast.Assign) -> Any:
        node = self.generic_visit(node)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return node
        return self._bind(node)

    def _bind(self, node: ast.Assign) -> Any:
        name = node.targets[0].id
        mark = ast.copy_location(ast.Assign(
            targets=[ast.copy_location(ast.Attribute(value=ast.copy_location(
                ast.Name(id=TJ, ctx=ast.Load()), node), attr="target", ctx=ast.Store()), node)],
            value=_const(name, node)), node)
        node.value = _call("bind", [_const(name, node), node.value, _old_value(name, node)],
                           node)
        return [mark, node]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        node = self.generic_visit(node)
        if (node.value is None and isinstance(node.target, ast.Name) and
                node.target.id in self.eager):
            # TileLang's eager style: `A: T.Tensor((M, N), dtype)` declares
            # the parameter A, which Python alone would not even evaluate.
            name = node.target.id
            target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), node)
            value = _call("declare", [_const(name, node), node.annotation], node)
            return ast.copy_location(ast.Assign(targets=[target], value=value,
                                                type_comment=None), node)
        if node.value is None or not isinstance(node.target, ast.Name):
            return node
        assign = ast.copy_location(ast.Assign(targets=[node.target], value=node.value,
                                              type_comment=None), node)
        return self._bind(assign)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        node = self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node  # subscripts and attributes: Python's own (a store for buffers)
        name = node.target.id
        value = _call("aug", [_const(name, node), _old_value(name, node),
                              _const(_BINOPS[type(node.op)], node), node.value], node)
        target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), node)
        return ast.copy_location(ast.Assign(targets=[target], value=value, type_comment=None),
                                 node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        # A helper defined inside the body (a macro): its body is traced
        # where it is called, so it is rewritten too.
        return self.generic_visit(node)

    # --- expressions -------------------------------------------------------

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        node = self.generic_visit(node)
        attr = "and_" if isinstance(node.op, ast.And) else "or_"
        return _call(attr, [_lambda(v) for v in node.values], node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call("not_", [node.operand], node)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        node = self.generic_visit(node)
        return _call("ifexp", [node.test, _lambda(node.body), _lambda(node.orelse)], node)

    def visit_Compare(self, node: ast.Compare) -> Any:
        node = self.generic_visit(node)
        ops = [_CMPOPS[type(op)] for op in node.ops]
        if len(ops) == 1:
            return _call("cmp", [node.left, _const(ops[0], node), node.comparators[0]], node)
        return _call("chain", [node.left, _const(tuple(ops), node)] +
                     [_lambda(c) for c in node.comparators], node)


def _target_names(target: ast.expr) -> Any:
    """A name (str) for a plain target, a tuple of names for a tuple target,
    None otherwise."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name)
                                                         for e in target.elts):
        return tuple(e.id for e in target.elts)
    return None


# Keyed by (code, eager): the eager style rewrites bare annotations too.
_cache: Dict[Any, Callable[..., Any]] = {}
# Where each parameter of a rewritten function is declared.
_param_spans: Dict[types.CodeType, Dict[str, Any]] = {}
_cache_lock = threading.Lock()
_MAKER = "__tilejit_make__"


def _compile(fn: types.FunctionType, kernel: str,
             eager: bool = False) -> Optional[Callable[..., Any]]:
    """The maker of the rewritten function, or None when the source is not
    available (the body then runs as written)."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    source = "".join(lines)
    filename = fn.__code__.co_filename
    # Parse with the author's columns: an indented def is put under an
    # `if 1:` rather than dedented.
    if source[:1] in (" ", "\t"):
        tree = ast.parse("if 1:\n" + source, filename=filename)
        ast.increment_lineno(tree, first_line - 2)
        stmt = tree.body[0].body[0]
    else:
        tree = ast.parse(textwrap.dedent(source), filename=filename)
        ast.increment_lineno(tree, first_line - 1)
        stmt = tree.body[0]
    if not isinstance(stmt, ast.FunctionDef) or stmt.name != fn.__name__:
        return None
    stmt.decorator_list = []
    stmt.returns = None
    spans = {}
    for a in stmt.args.posonlyargs + stmt.args.args + stmt.args.kwonlyargs:
        spans[a.arg] = (filename, a.lineno, a.col_offset + 1)
        a.annotation = None  # the signature was read from the original function
    _param_spans[fn.__code__] = spans
    params = tuple(a.arg for a in stmt.args.posonlyargs + stmt.args.args)
    body = _Rewriter(filename, kernel, params if eager else ()).visit(stmt)
    freevars = list(fn.__code__.co_freevars)
    args = [ast.arg(arg=TJ)] + [ast.arg(arg=n) for n in freevars]
    maker = ast.FunctionDef(
        name=_MAKER,
        args=ast.arguments(posonlyargs=[], args=args, vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[]),
        body=[body, ast.Return(value=ast.Name(id=fn.__name__, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    ast.copy_location(maker, stmt)
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    namespace: Dict[str, Any] = {}
    exec(code, fn.__globals__, namespace)  # noqa: S102: the author's own function
    return namespace[_MAKER]


def rewritten(fn: types.FunctionType, tracer: Any, kernel: str,
              eager: bool = False) -> Callable[..., Any]:
    """`fn` rewritten, bound to `tracer`; `fn` itself when its source is not
    available. `eager`: a bare annotation of a parameter, `A: ann`, becomes
    `A = __tj.declare("A", ann)` (TileLang's eager style, eager.py)."""
    key = (fn.__code__, eager)
    with _cache_lock:
        maker = _cache.get(key)
    if maker is None:
        maker = _compile(fn, kernel, eager)
        if maker is None:
            return fn
        with _cache_lock:
            _cache[key] = maker
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # a free variable not bound yet
            cells.append(None)
    return maker(tracer, *cells)


def param_spans(fn: types.FunctionType) -> Dict[str, Any]:
    """{parameter name: (file, line, col)} of a rewritten function; empty
    when it was not rewritten."""
    return _param_spans.get(fn.__code__, {})

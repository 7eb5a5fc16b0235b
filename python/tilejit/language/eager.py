"""TileLang's eager style: a ``@tilejit.jit`` function called with tensors.

    @tilejit.jit
    def add(A, B, block_M=32, dtype=T.float32):
        M, N = T.const("M, N")          # dimensions read from the arguments
        A: T.Tensor((M, N), dtype)      # A and B are tensor parameters
        B: T.Tensor((M, N), dtype)
        C = T.empty((M, N), dtype)      # an output, returned
        with T.Kernel(...): ...
        return C

    c = add(a, b)                        # compiles for a's shape, then runs
    kernel = add.compile(M=1024, N=512)  # or without tensors

Note [Eager specialisation]
A parameter whose name the body annotates bare (``A: T.Tensor(...)``) is a
tensor; every other parameter is configuration. The kernel is specialised on
the T.const values, which the body only learns from its own annotations, so a
cache miss traces the body twice:

1. the probe: T.const returns symbols and the body runs until its last tensor
   parameter is declared (the declarations precede the kernel, so none of it
   is traced); each annotation dimension
   that is exactly a T.const takes the argument's extent, and two arguments
   that disagree on one are an error naming both;
2. the trace: T.const returns those ints, so every shape, grid and loop bound
   derived from them is static; T.empty adds an output parameter after the
   declared ones, and the T.empty tensors the body returns are out_idx, in
   order.

Kernels are cached twice: by the call's form (each tensor's shape and dtype,
and the configuration as given), which is all a hit computes, and by the
specialisation (configuration bound to the signature, and the T.const
values), so that two spellings of one call and ``compile()`` share a kernel.
"""

from __future__ import annotations

import ast
import inspect
import numbers
import textwrap
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _C
from . import builder as _builder
from . import rewrite as _rewrite
from .declare import TensorType, _shape_tuple
from .dtypes import dtype_name
from .spans import Span, error, strip_internal_frames, user_span
from .active import active, tracing
from .tracer import ParamBuffer, Tracer


class _ProbeDone(Exception):
    """Every tensor parameter is declared: the probe has what it needs."""


def _is_tensor(x: Any) -> bool:
    # numpy's scalars speak the array protocols too, and are configuration.
    if isinstance(x, numbers.Number):
        return False
    t = type(x)
    return (hasattr(t, "__dlpack__") or hasattr(t, "__array_interface__") or
            hasattr(t, "__cuda_array_interface__"))


def refuse_tensors(name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    """A tensor given to a factory-style jit function (one whose body
    declares no tensor parameter) is a TypeError saying how to write either
    style."""
    named = [(f"argument #{i}", a) for i, a in enumerate(args)]
    named += [(f"argument '{k}'", v) for k, v in kwargs.items()]
    for label, value in named:
        if _is_tensor(value):
            t = type(value)
            raise error(TypeError,
                        f"{name}: {label} is a tensor ({t.__module__}.{t.__qualname__}), but "
                        f"{name}'s body declares no tensor parameter; in TileLang's eager "
                        f"style the body declares each one (A: T.Tensor((M, N), dtype)), in "
                        f"the factory style call kernel = {name}(<configuration>), then "
                        f"kernel(<tensors>)")


def tensor_parameters(fn: Any) -> Optional[List[str]]:
    """The parameters the body of `fn` annotates bare (TileLang's eager
    style), in signature order; None when there are none or the source is
    not available."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0] if tree.body else None
    if not isinstance(func, ast.FunctionDef):
        return None
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
    declared = set()
    for stmt in func.body:
        for node in ast.walk(stmt):
            if (isinstance(node, ast.AnnAssign) and node.value is None and
                    isinstance(node.target, ast.Name) and node.target.id in params):
                declared.add(node.target.id)
    found = [p for p in params if p in declared]
    return found or None


def _shape_of(fn: str, param: str, value: Any, span: Span) -> Tuple[int, ...]:
    try:
        return tuple(int(d) for d in value.shape)
    except (AttributeError, TypeError):
        raise error(TypeError, f"{fn}: argument '{param}' must be a tensor with a shape, got "
                               f"{type(value).__name__}", span) from None


def _dims_text(dims: Sequence[Any]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


class EagerTracer(Tracer):
    """The trace of an eager function: parameters are added as the body
    declares them (``declare``, ``T.empty``), before its kernel begins.
    `consts` is None while probing (Note [Eager specialisation])."""

    def __init__(self, name: str, tensors: Dict[str, Any], wanted: Sequence[str],
                 consts: Optional[Dict[str, int]]) -> None:
        super().__init__(name, [], _builder.make_builder)
        self.tensors = tensors  # parameter name -> the argument, when given
        self.wanted = set(wanted)
        self.consts = consts
        self.const_names: List[str] = []
        self.declared: List[Tuple[str, Tuple[Any, ...], Span]] = []
        self.outputs: List[ParamBuffer] = []

    def _add_param(self, name: str, shape: Sequence[Any], dtype: str, span: Span) -> Any:
        if self._b is not None:
            raise error(ValueError, f"{self.name}: '{name}' is declared after the kernel "
                                    f"began; declare every T.Tensor parameter and T.empty "
                                    f"output before the first tile statement", span)
        self.params.append((name, dtype, list(shape)))
        self.names[name] = 1
        self.param_spans[name] = span
        proxy = ParamBuffer(self, name, list(shape), dtype)
        self.proxies.append(proxy)
        return proxy

    def declare(self, name: str, ann: Any) -> Any:
        """`name: ann` in the body: the tensor parameter `name`."""
        span = user_span()
        if not isinstance(ann, TensorType):
            raise error(TypeError, f"{self.name}: '{name}' is annotated with {ann!r}; a "
                                   f"tensor parameter is declared T.Tensor(shape, dtype)", span)
        if self.consts is None:
            self.declared.append((name, ann.shape, span))
            if {n for n, _, _ in self.declared} >= self.wanted:
                raise _ProbeDone()
            return self._add_param(name, ann.shape, ann.dtype, span)
        value = self.tensors.get(name)
        if value is not None:
            shape = _shape_of(self.name, name, value, span)
            if len(shape) != len(ann.shape) or any(
                    isinstance(d, int) and d != s for d, s in zip(ann.shape, shape)):
                raise error(ValueError, f"{self.name}: argument '{name}' has shape "
                                        f"{_dims_text(shape)}, but its annotation gives "
                                        f"{_dims_text(ann.shape)}", span)
        return self._add_param(name, ann.shape, ann.dtype, span)

    def const(self, names: List[str]) -> List[Any]:
        if self.consts is None:
            self.const_names.extend(n for n in names if n not in self.const_names)
            return [_C.Expr.var(n) for n in names]
        out = []
        for n in names:
            if n not in self.consts:
                raise error(ValueError, f"{self.name}: T.const '{n}' is not bound: no tensor "
                                        f"argument's annotation has it as a dimension; pass "
                                        f"that tensor, or give {n}=... to {self.name}.compile()")
            out.append(self.consts[n])
        return out

    def empty(self, shape: Sequence[Any], dtype: Any) -> Any:
        span = user_span()
        name = self.take_target() or "out"
        if name in self.names:
            self.names[name] += 1
            name = f"{name}_{self.names[name] - 1}"
        out = self._add_param(name, _shape_tuple(shape, "T.empty"), dtype_name(dtype), span)
        self.outputs.append(out)
        return out


def _eager_tracer(what: str) -> EagerTracer:
    tr = active()
    if not isinstance(tr, EagerTracer):
        raise error(ValueError, f"{what} is only valid in the body of a @tilejit.jit function "
                                f"in TileLang's eager style (one whose body declares its tensor "
                                f"parameters: A: T.Tensor((M, N), dtype))")
    return tr


def const(names: str, dtype: Any = None) -> Any:
    """``M, N = T.const("M, N")``: dimensions the call's tensors give (Note
    [Eager specialisation]); one name gives one value."""
    tr = _eager_tracer("T.const")
    if not isinstance(names, str):
        raise error(TypeError, f"T.const takes the names as one str, got "
                               f"{type(names).__name__}")
    split = [n for n in names.replace(",", " ").split() if n]
    values = tr.const(split)
    return values[0] if len(values) == 1 else tuple(values)


def empty(*shape: Any, dtype: Any = "float32") -> Any:
    """``C = T.empty((M, N), dtype)`` (or ``T.empty(M, N, dtype=...)``): an
    output of the eager function, made at each call; return it."""
    tr = _eager_tracer("T.empty")
    if shape and isinstance(shape[0], (tuple, list)):
        if len(shape) > 2:
            raise error(TypeError, "T.empty takes (shape, dtype)")
        dtype = shape[1] if len(shape) == 2 else dtype
        shape = tuple(shape[0])
    return tr.empty(shape, dtype)


class EagerPrimFunc:
    """The PrimFunc of one specialisation and its outputs (the returned
    T.empty tensors): what tilejit.compile takes for this style."""

    def __init__(self, prim_func: Any, out_idx: List[int]) -> None:
        self.prim_func = prim_func
        self.out_idx = out_idx

    def __getattr__(self, name: str) -> Any:
        return getattr(self.prim_func, name)


class EagerFunction:
    """The eager half of a JitFunction (Note [Eager specialisation])."""

    def __init__(self, fn: Any, name: str, tensors: List[str], compile_fn: Any,
                 options: Dict[str, Any]) -> None:
        self.fn = fn
        self.name = name
        self.tensors = tensors
        self.tensor_set = frozenset(tensors)
        self.signature = inspect.signature(fn)
        params = list(self.signature.parameters)
        self.params = set(params)
        # Per position: whether the argument there is a tensor.
        self.is_tensor = tuple(p in tensors for p in params)
        self.compile_fn = compile_fn
        self.options = options
        self.by_call: Dict[Any, Tuple[Any, Any]] = {}
        self.key_functions: Dict[int, Any] = {}
        self.by_spec: Dict[Any, Any] = {}
        self.lock = threading.RLock()

    def clear(self) -> None:
        with self.lock:
            self.by_call.clear()
            self.by_spec.clear()

    def size(self) -> int:
        """Distinct kernels held (specialisations, not call forms)."""
        with self.lock:
            return len({id(k) for k, _ in self.by_spec.values()})

    # --- the call ----------------------------------------------------------

    def _key_function(self, n: int) -> Any:
        """The hit's key of n positional arguments, as one generated lambda
        (each tensor's shape and dtype, each configuration value and its
        type): a comprehension over the arguments costs twice as much, and
        this is most of what a hit does."""
        parts = []
        for i in range(n):
            tensor = i < len(self.is_tensor) and self.is_tensor[i]
            parts.append(f"a[{i}].shape, a[{i}].dtype" if tensor else f"a[{i}], type(a[{i}])")
        fn = eval(f"lambda a: ({', '.join(parts)}{',' if parts else ''})")  # noqa: S307
        self.key_functions[n] = fn
        return fn

    def _key(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        key_fn = self.key_functions.get(len(args)) or self._key_function(len(args))
        key = key_fn(args)
        if kwargs:
            if self.tensor_set.isdisjoint(kwargs):
                key = (key, tuple(kwargs.items()), tuple(map(type, kwargs.values())))
            else:  # a tensor by keyword: its shape and dtype, never the tensor
                key = (key, tuple([(k, (v.shape, v.dtype)) if k in self.tensor_set else
                                   (k, v, type(v)) for k, v in kwargs.items()]))
        return key

    def call(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        try:
            kernel, positions = self.by_call[self._key(args, kwargs)]
        except (KeyError, TypeError, AttributeError, IndexError):
            return self._miss(args, kwargs)
        if positions is None:  # the tensors are the arguments, in order
            return kernel(*args)
        if type(positions) is list:  # some tensor given by keyword: their names
            bound = self.signature.bind(*args, **kwargs).arguments
            return kernel(*[bound[n] for n in positions])
        return kernel(*[args[i] for i in positions])

    def _miss(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        bound = self._bind(args, kwargs)
        given = {n: bound.pop(n) for n in self.tensors if n in bound}
        missing = [n for n in self.tensors if given.get(n) is None]
        if missing:
            raise TypeError(f"{self.name}: tensor argument '{missing[0]}' is missing; give "
                            f"every tensor, or compile without tensors: "
                            f"{self.name}.compile(<T.const values>, <configuration>)")
        kernel, order = self._specialise(bound, given, {})
        names = list(self.signature.parameters)
        positions = tuple(names.index(n) for n in order)
        if not all(p < len(args) for p in positions):
            positions = list(order)
        elif positions == tuple(range(len(args))):
            positions = None
        try:
            key = self._key(args, kwargs)
            with self.lock:
                self.by_call[key] = (kernel, positions)
        except (TypeError, AttributeError):
            pass  # an unhashable configuration: every call takes this path
        return kernel(*[given[n] for n in order])

    def _bind(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
        try:
            bound = self.signature.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}: {e}") from None
        bound.apply_defaults()
        config = dict(bound.arguments)
        absent = [p for p in self.signature.parameters
                  if p not in config and p not in self.tensors]
        if absent:
            raise TypeError(f"{self.name}: missing a required argument: '{absent[0]}'")
        return config

    # --- compile -----------------------------------------------------------

    def compile(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        """``fn.compile(M=1024, N=1024, block_M=64)``: the kernel, with the
        T.const values given by keyword (or read from tensors given)."""
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k not in self.params}
        bound = self._bind(args, kwargs)
        given = {n: bound.pop(n) for n in self.tensors if n in bound}
        return self._specialise(bound, {n: v for n, v in given.items() if v is not None},
                                consts)[0]

    def get_tir(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> EagerPrimFunc:
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k not in self.params}
        bound = self._bind(args, kwargs)
        given = {n: bound.pop(n) for n in self.tensors if n in bound}
        pf, out_idx, _ = self._trace(bound, {n: v for n, v in given.items() if v is not None},
                                     consts)
        return EagerPrimFunc(pf, out_idx)

    # --- specialisation ----------------------------------------------------

    def _specialise(self, config: Dict[str, Any], given: Dict[str, Any],
                    consts: Dict[str, Any]) -> Tuple[Any, List[str]]:
        solved = self._solve(config, given, consts)
        try:
            key = (tuple((k, v, type(v)) for k, v in config.items()),
                   tuple(sorted(solved.items())))
            hash(key)
        except TypeError:
            key = None
        with self.lock:
            if key is not None and key in self.by_spec:
                return self.by_spec[key]
            pf, out_idx, order = self._trace(config, given, solved)
            options = dict(self.options)
            if options.get("out_idx") is not None:
                raise ValueError(f"{self.name}: out_idx is for the factory style; in the "
                                 f"eager style the outputs are the T.empty tensors returned")
            options["out_idx"] = out_idx
            entry = (self.compile_fn(pf, **options), order)
            if key is not None:
                self.by_spec[key] = entry
            return entry

    def _run(self, tracer: EagerTracer, config: Dict[str, Any], given: Dict[str, Any]) -> Any:
        body = _rewrite.rewritten(self.fn, tracer, self.name, eager=True)
        with tracing(tracer):
            return body(**config, **{n: given.get(n) for n in self.tensors})

    def _solve(self, config: Dict[str, Any], given: Dict[str, Any],
               consts: Dict[str, Any]) -> Dict[str, int]:
        """The probe: each T.const's value, from the tensors' extents."""
        probe = EagerTracer(self.name, given, self.tensors, None)
        try:
            self._run(probe, config, given)
        except _ProbeDone:
            pass
        except Exception as e:
            strip_internal_frames(e)
            raise e.with_traceback(e.__traceback__) from e.__cause__
        unknown = [k for k in consts if k not in probe.const_names]
        if unknown:
            raise TypeError(f"{self.name}: unexpected keyword argument '{unknown[0]}': neither "
                            f"a parameter nor a T.const of {self.name}")
        solved = dict(consts)
        source: Dict[str, str] = {}
        for name, dims, span in probe.declared:
            value = given.get(name)
            if value is None:
                continue
            shape = _shape_of(self.name, name, value, span)
            if len(shape) != len(dims):
                raise error(ValueError, f"{self.name}: argument '{name}' has shape "
                                        f"{_dims_text(shape)}, but its annotation gives "
                                        f"{_dims_text(dims)}", span)
            for d, (dim, extent) in enumerate(zip(dims, shape)):
                if not isinstance(dim, _C.Expr) or str(dim) not in probe.const_names:
                    continue
                c = str(dim)
                where = f"{name}.shape[{d}]"
                if c in solved and solved[c] != extent:
                    first = source.get(c, f"the given {c}")
                    raise error(ValueError, f"{self.name}: T.const '{c}': {first} = "
                                            f"{solved[c]} but {where} = {extent}", span)
                solved[c] = extent
                source.setdefault(c, where)
        return solved

    def _trace(self, config: Dict[str, Any], given: Dict[str, Any],
               consts: Dict[str, int]) -> Tuple[Any, List[int], List[str]]:
        tracer = EagerTracer(self.name, given, self.tensors, consts)
        try:
            result = self._run(tracer, config, given)
            returned = result if isinstance(result, tuple) else (
                () if result is None else (result,))
            for r in returned:
                if not any(r is o for o in tracer.outputs):
                    raise TypeError(f"{self.name}: returns {r!r}; an eager function returns "
                                    f"the tensors it made with T.empty")
            for o in tracer.outputs:
                if not any(r is o for r in returned):
                    raise ValueError(f"{self.name}: the T.empty tensor '{o.name}' is not "
                                     f"returned")
            pf = tracer.finish()
        except Exception as e:
            strip_internal_frames(e)
            raise e.with_traceback(e.__traceback__) from e.__cause__
        names = [p[0] for p in tracer.params]
        out_idx = [names.index(r.name) for r in returned]
        order = [n for n in names if n in self.tensors]
        return pf, out_idx, order

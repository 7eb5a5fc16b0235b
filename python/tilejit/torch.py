"""tilejit kernels as PyTorch operators.

    import tilejit.torch

    op = tilejit.torch.register(kernel, "mylib::scale")
    y = op(x, 2.0)                      # torch.ops.mylib.scale
    torch.compile(f, fullgraph=True)    # traces op through its fake impl

register() defines the operator with a schema derived from the kernel's
inputs and outputs, a fake implementation that computes the outputs' shapes
from the kernel's shape program (Kernel.shape_program) over the inputs'
possibly symbolic shapes, and the real implementation: the kernel's own call,
for the dispatch key of its target (CPU or CUDA). Importing this module
imports torch; ``import tilejit`` alone never does.
"""

import keyword
import operator
import re

import torch

from . import Kernel

__all__ = ["register"]

# tilejit dtype names (DataType::name) -> torch dtypes.
_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
# torch has uint16 / uint32 / uint64 tensors from 2.3 on.
_DTYPES.update({n: getattr(torch, n) for n in ("uint16", "uint32", "uint64") if hasattr(torch, n)})
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}

# Scalar inputs (a PrimFunc's scalars are int32, int64 or float32): integers
# are SymInt, so that torch.compile(dynamic=True) can pass a symbol through;
# floats are float. _DTYPES covers every tensor dtype tilejit has.
_SCALAR_TYPES = {"int32": "SymInt", "int64": "SymInt", "float32": "float", "float64": "float"}

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALNAME = re.compile(rf"({_IDENT})::({_IDENT})")

# The operators a shape program's trees use (Note [Shape program in Python]
# in python/src/shape_export.h), over ints and torch.SymInts alike.
_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "floormod": operator.mod,
    "ceildiv": lambda a, b: -((-a) // b),
    "min": torch.sym_min, "max": torch.sym_max,
}

# The Library objects of the operators registered here, by qualname; a
# Library that is collected takes its registrations with it.
_LIBRARIES = {}


def _evaluate(tree, env):
    """A shape value: an int, a symbol's value from `env`, or (op, a, b)."""
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return env[tree]
    op, a, b = tree
    return _OPS[op](_evaluate(a, env), _evaluate(b, env))


def _schema(kernel, program, mutated):
    """The schema's text after the name: "(Tensor A, SymInt n) -> Tensor"."""
    args = []
    aliases = 0  # each mutated input its own alias set: a, b, ..., z, aa, bb, ...
    for i, spec in enumerate(program["inputs"]):
        name = spec["name"]
        if keyword.iskeyword(name):
            # The schema parser takes Python's keywords (None, True, def...)
            # for its own.
            raise ValueError(f"tilejit.torch.register: {kernel.name}: input #{i} '{name}' "
                             f"cannot name a schema argument (a Python keyword)")
        if spec["scalar"]:
            typ = _SCALAR_TYPES[spec["dtype"]]
        elif name in mutated:
            tag = chr(ord("a") + aliases % 26) * (1 + aliases // 26)
            aliases += 1
            typ = f"Tensor({tag}!)"
        else:
            typ = "Tensor"
        args.append(f"{typ} {name}")
    outs = ["Tensor"] * len(program["outputs"])
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _mutated_inputs(kernel, program, mutates_args):
    if isinstance(mutates_args, str):
        raise TypeError(f"tilejit.torch.register: {kernel.name}: mutates_args must be a sequence "
                        f"of input names, not a str")
    inputs = {spec["name"]: spec for spec in program["inputs"]}
    mutated = []
    for name in mutates_args:
        spec = inputs.get(name)
        if spec is None:
            raise ValueError(f"tilejit.torch.register: {kernel.name}: mutates_args names "
                             f"'{name}', which is no input (inputs: "
                             f"{', '.join(kernel.input_names)})")
        if spec["scalar"]:
            raise ValueError(f"tilejit.torch.register: {kernel.name}: mutates_args names "
                             f"'{name}', a scalar input; only tensors can be mutated")
        mutated.append(name)
    return set(mutated)


def _make_fake(kernel, program):
    """The fake implementation: the outputs as empty tensors of the shapes
    that the kernel's shape program gives for these inputs, with
    torch._check for every equality a call checks. Shapes may be SymInts."""
    name = kernel.name
    inputs = program["inputs"]
    tensors = [i for i, spec in enumerate(inputs) if not spec["scalar"]]
    first = tensors[0] if tensors else None
    outputs = [(tuple(o["shape"]), _DTYPES[o["dtype"]]) for o in program["outputs"]]
    bindings = [(b["symbol"], b["input"], b["dim"], b["coeff"], b["offset"])
                for b in program["bindings"]]
    checks = [(c["input"], c["dim"], c["value"]) for c in program["checks"]]
    device = torch.device(kernel.device)

    def arg_name(i):
        return f"{name}: argument #{i} '{inputs[i]['name']}'"

    def fake(*args):
        for i in tensors:
            x, spec = args[i], inputs[i]
            if x.dtype != _DTYPES[spec["dtype"]]:
                got = _DTYPE_NAMES.get(x.dtype, str(x.dtype).replace("torch.", ""))
                raise TypeError(f"{arg_name(i)}: expected {spec['dtype']}, got {got}")
            if x.dim() != len(spec["dims"]):
                raise ValueError(f"{arg_name(i)}: expected {len(spec['dims'])} dimensions, got "
                                 f"{x.dim()}")
            for d, extent in enumerate(spec["dims"]):
                if extent is not None:
                    torch._check(x.shape[d] == extent,
                                 lambda: f"{arg_name(i)}: dimension {d} must be {extent}")
        env = {}
        for symbol, i, d, coeff, offset in bindings:
            if d is None:
                env[symbol] = args[i]
                continue
            extent = args[i].shape[d]
            if coeff != 1 or offset != 0:
                torch._check((extent - offset) % coeff == 0,
                             lambda: f"{arg_name(i)}: dimension {d} must be {coeff} * {symbol} "
                                     f"+ {offset}")
                extent = (extent - offset) // coeff
            env[symbol] = extent
        for i, d, value in checks:
            torch._check(args[i].shape[d] == _evaluate(value, env),
                         lambda: f"{arg_name(i)}: dimension {d} does not match the symbols "
                                 f"bound by the other inputs")
        if first is not None:
            like = args[first]
            result = [like.new_empty([_evaluate(e, env) for e in shape], dtype=dtype)
                      for shape, dtype in outputs]
        else:
            result = [torch.empty([_evaluate(e, env) for e in shape], dtype=dtype,
                                  device=device) for shape, dtype in outputs]
        if not result:
            return None
        return result[0] if len(result) == 1 else tuple(result)

    return fake


def _make_impl(kernel, program, fake):
    """The real implementation. With a tensor input, the kernel itself: it
    makes its outputs through torch's allocator (torch's caching allocator
    on CUDA) on the inputs' device and launches on torch's current stream.
    Without one, the outputs are made with torch.empty on the kernel's
    device (the shapes from the fake implementation's arithmetic) and passed
    through out=."""
    if any(not spec["scalar"] for spec in program["inputs"]) or not program["outputs"]:
        return kernel
    single = len(program["outputs"]) == 1

    def impl(*args):
        out = fake(*args)
        return kernel(*args, out=[out] if single else list(out))

    return impl


def _make_inplace_view(overload, mutated_positions):
    """ADInplaceOrView for an operator that mutates inputs: bumps their
    version counters (what autograd uses to detect a stale saved tensor),
    then goes on to the backend."""
    below = torch._C._after_ADInplaceOrView_keyset
    increment = torch.autograd.graph.increment_version

    def inplace_view(keyset, *args):
        for i in mutated_positions:
            increment(args[i])
        return overload.redispatch(keyset & below, *args)

    return inplace_view


def _defined(qualname):
    """Whether torch knows an operator `qualname` (its default overload)."""
    try:
        torch._C._dispatch_find_schema_or_throw(qualname, "")
    except RuntimeError:
        return False
    return True


def register(kernel, qualname, *, mutates_args=()):
    """Registers `kernel` (a tilejit.Kernel) as the PyTorch operator
    `qualname` ("namespace::name") and returns it (torch.ops.namespace.name).

    The schema has one argument per kernel input, named after it: Tensor for
    a tensor (Tensor(a!) for one named in `mutates_args`), SymInt for an
    integer scalar, float for a float scalar; it returns one Tensor, a tuple
    of them in out_idx order, or nothing. The operator has a fake
    implementation (the outputs' shapes from Kernel.shape_program, so that
    torch.compile traces it without running it, SymInts included) and a
    real one for the dispatch key of the kernel's target (CPU or CUDA): the
    kernel's call, on torch's current stream, its outputs from torch's
    allocator, its workspaces from tilejit's pool. It has no autograd
    formula.

    Raises TypeError for a `kernel` that is no tilejit.Kernel and for a str
    `mutates_args`; ValueError for a malformed `qualname`, for
    `mutates_args` naming no tensor input and for an input whose name the
    schema parser does not take (a Python keyword); RuntimeError when
    `qualname` is registered already."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"tilejit.torch.register: expected a tilejit.Kernel, got "
                        f"{type(kernel).__name__}")
    match = _QUALNAME.fullmatch(qualname) if isinstance(qualname, str) else None
    if match is None:
        raise ValueError(f"tilejit.torch.register: {kernel.name}: qualname {qualname!r} is not "
                         f"of the form 'namespace::name' (identifiers)")
    namespace, name = match.groups()
    program = kernel.shape_program
    mutated = _mutated_inputs(kernel, program, mutates_args)
    schema = _schema(kernel, program, mutated)
    if qualname in _LIBRARIES or _defined(qualname):
        raise RuntimeError(f"tilejit.torch.register: {kernel.name}: operator '{qualname}' is "
                           f"registered already")
    if all(spec["scalar"] for spec in program["inputs"]):
        # No tensor argument gives the dispatcher a backend: one kernel for all.
        key = "CompositeExplicitAutograd"
    else:
        key = {"cpu": "CPU", "cuda": "CUDA"}[kernel.target]

    lib = torch.library.Library(namespace, "FRAGMENT")
    lib.define(name + schema)
    fake = _make_fake(kernel, program)
    lib.impl(name, _make_impl(kernel, program, fake), key)
    torch.library.register_fake(qualname, fake, lib=lib)
    packet = getattr(getattr(torch.ops, namespace), name)
    if mutated:
        positions = [i for i, spec in enumerate(program["inputs"]) if spec["name"] in mutated]
        lib.impl(name, _make_inplace_view(packet.default, positions), "ADInplaceOrView",
                 with_keyset=True)
    _LIBRARIES[qualname] = lib
    return packet

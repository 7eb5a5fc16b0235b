// tilejit._C: the nanobind face of the tile-IR builder (tilejit/ir/tile_builder.h).
// The Python front end (tilejit.language) records every T.* call here.
//
// Python API (module tilejit._C):
//
//   Spans: every builder method takes `span=None | (file, line, col)`.
//   dtypes are strings as DataType::parse reads them ("float32", "float",
//   "bfloat16", "int32", "bool", ...); scopes "shared" | "fragment" | "local";
//   loop kinds "serial" | "unroll" | "parallel" | "vectorized" | "pipelined";
//   reduce kinds "sum" | "max" | "min" | "abssum" | "absmax"; workspace inits
//   "empty" | "zero" | "zero_once".
//
//   Expr (also phase 1's shape expression):
//     + - * / // % and their reflected forms with Expr, int or float operands;
//     unary -; < <= > >= == != (Exprs; bool(e) of == / != is structural
//     equality, of a constant its value, so `e == 3` still works in an `if`);
//     & | ~ (logical and / or / not on bool Exprs); e.astype(dtype);
//     properties dtype (str), kind (str: "Add", "Load", ...), is_const,
//     is_var, name, value (int or float of a constant), var_id, buffer and
//     indices (of a Load); float(e) of a float constant.
//   make_var(name, dtype="int32")           a new IR variable
//   const(value, dtype)                     a constant of a dtype
//   cast(dtype, value), select(cond, t, f), logical_and/or/not(...),
//   truncdiv(a, b), infinity(dtype),
//   call_intrinsic(name, args)              name in exp exp2 log log2 sqrt
//                                           rsqrt tanh sigmoid abs floor
//                                           ceil sin cos pow, shfl_sync
//                                           shfl_up shfl_down shfl_xor
//   load(buffer, indices) -> Expr
//   binary(op, a, b)                        op: add sub mul div floordiv floormod
//                                           ceildiv min max eq ne lt le gt ge and or
//   int_imm(value, dtype="int32"), float_imm(value, dtype="float32")
//   contains_load(e) -> bool, to_string(e) -> str
//   region(buffer, [(min, extent), ...]) -> Region    a slice
//   corner(buffer, indices) -> Region                 a start corner
//   whole(buffer) -> Region
//   Buffer: name, shape (list of Expr), dtype (str), scope (str), param,
//     id, init (str); buffer[i, j] -> Load (all indices) or Region (any
//     slice; an index in a sliced subscript is extent 1; slice bounds default
//     to 0 and the dimension; steps are not supported).
//   Region(buffer, [(min, extent-or-None), ...]); properties buffer, ranges,
//     is_whole, is_corner.
//   Region operands of the builder accept a Buffer (the whole buffer), a
//     Region, a (buffer, [(min, extent-or-None), ...]) tuple, or a Load Expr
//     (a start corner at its indices).
//   TileBuilder(func_name):
//     tensor_param(name, shape, dtype) -> Buffer
//     scalar_param(name, dtype) -> Expr
//     begin_kernel(grid, threads) -> [bx, by, bz][:len(grid)];  end_kernel()
//     thread_binding(dim=0) -> Expr
//     use_swizzle(panel_size, order="row" | "col", enable=True)
//     alloc(name, shape, dtype, scope) -> Buffer
//     alloc_global(name, shape, dtype, init="empty") -> Buffer
//     begin_for(var_name, min, extent, kind="serial", stages=0) -> Expr; end_for()
//     begin_if(cond); begin_else(); end_if(); begin_while(cond); end_while()
//     break_loop(); continue_loop(); sync_threads()
//     store(buffer, indices, value); let(name, value) -> Expr; evaluate(value)
//     copy(src, dst); gemm(a, b, c, trans_a=False, trans_b=False,
//       clear_accum=False, policy=0); fill(dst, value);
//     reduce(kind, src, dst, dim, clear=True); atomic_add(dst, value_or_region);
//     print(value_or_region, message="")
//     finish() -> PrimFunc   (runs transform.verify: errors at the span)
//   PrimFunc.script() prints the IR; PrimFunc.is_tile.
#include "ir_builder.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "errors.h"
#include "ir_convert.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/verify.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::Region;
using ir::Span;

using namespace convert;  // NOLINT: the bindings below are written in its terms

}  // namespace

void bind_expr_ops(nb::class_<Expr>& cls) {
  using ir::ExprKind;
  auto bin = [](ExprKind k) {
    return [k](const Expr& a, nb::handle b) -> nb::object {
      if (!is_number_or_expr(b)) return nb::borrow(Py_NotImplemented);
      return nb::cast(ir::make_binary(k, a, to_expr(b, "operand")));
    };
  };
  auto rbin = [](ExprKind k) {
    return [k](const Expr& b, nb::handle a) -> nb::object {
      if (!is_number_or_expr(a)) return nb::borrow(Py_NotImplemented);
      return nb::cast(ir::make_binary(k, to_expr(a, "operand"), b));
    };
  };
  // & | ~ are logical on two bool operands (masks), bitwise otherwise.
  auto mask_or_bits = [](ExprKind logical, ExprKind bits, bool reflected) {
    return [=](const Expr& self, nb::handle other) -> nb::object {
      if (!is_number_or_expr(other)) return nb::borrow(Py_NotImplemented);
      Expr o = to_expr(other, "operand");
      const bool masks = self.dtype() == DataType::boolean() && o.dtype() == DataType::boolean();
      const ExprKind k = masks ? logical : bits;
      return nb::cast(reflected ? ir::make_binary(k, o, self) : ir::make_binary(k, self, o));
    };
  };
  // Float (and Expr) operands; the int overloads of ir_bindings.cpp come first.
  cls.def("__add__", bin(ExprKind::kAdd), nb::is_operator())
      .def("__radd__", rbin(ExprKind::kAdd), nb::is_operator())
      .def("__sub__", bin(ExprKind::kSub), nb::is_operator())
      .def("__rsub__", rbin(ExprKind::kSub), nb::is_operator())
      .def("__mul__", bin(ExprKind::kMul), nb::is_operator())
      .def("__rmul__", rbin(ExprKind::kMul), nb::is_operator())
      .def("__truediv__", bin(ExprKind::kDiv), nb::is_operator())
      .def("__rtruediv__", rbin(ExprKind::kDiv), nb::is_operator())
      .def("__floordiv__", bin(ExprKind::kFloorDiv), nb::is_operator())
      .def("__rfloordiv__", rbin(ExprKind::kFloorDiv), nb::is_operator())
      .def("__mod__", bin(ExprKind::kFloorMod), nb::is_operator())
      .def("__rmod__", rbin(ExprKind::kFloorMod), nb::is_operator())
      .def("__lt__", bin(ExprKind::kLT), nb::is_operator())
      .def("__le__", bin(ExprKind::kLE), nb::is_operator())
      .def("__gt__", bin(ExprKind::kGT), nb::is_operator())
      .def("__ge__", bin(ExprKind::kGE), nb::is_operator())
      .def("__eq__", bin(ExprKind::kEQ), nb::is_operator())
      .def("__ne__", bin(ExprKind::kNE), nb::is_operator())
      .def("__and__", mask_or_bits(ExprKind::kAnd, ExprKind::kBitAnd, false), nb::is_operator())
      .def("__rand__", mask_or_bits(ExprKind::kAnd, ExprKind::kBitAnd, true), nb::is_operator())
      .def("__or__", mask_or_bits(ExprKind::kOr, ExprKind::kBitOr, false), nb::is_operator())
      .def("__ror__", mask_or_bits(ExprKind::kOr, ExprKind::kBitOr, true), nb::is_operator())
      .def("__xor__", bin(ExprKind::kBitXor), nb::is_operator())
      .def("__rxor__", rbin(ExprKind::kBitXor), nb::is_operator())
      .def("__lshift__", bin(ExprKind::kShiftLeft), nb::is_operator())
      .def("__rlshift__", rbin(ExprKind::kShiftLeft), nb::is_operator())
      .def("__rshift__", bin(ExprKind::kShiftRight), nb::is_operator())
      .def("__rrshift__", rbin(ExprKind::kShiftRight), nb::is_operator())
      .def("__invert__",
           [](const Expr& a) {
             return a.dtype() == DataType::boolean() ? ir::logical_not(a) : ir::bitwise_not(a);
           })
      .def("__bool__", &truth)
      .def("__float__",
           [](const Expr& e) {
             if (e.is_float_const()) return e.float_value();
             if (e.is_const()) return double(e.int_value());
             throw_error(ErrorKind::kTypeError, "'" + ir::to_string(e) + "' is not a constant");
           })
      .def("astype", [](const Expr& e, const std::string& t) { return ir::cast(dtype_of(t), e); },
           nb::arg("dtype"))
      .def_prop_ro("dtype", [](const Expr& e) { return e.dtype().name(); })
      .def_prop_ro("kind", [](const Expr& e) { return std::string(ir::expr_kind_name(e.kind())); })
      .def_prop_ro("var_id", &Expr::var_id)
      .def_prop_ro("buffer",
                   [](const Expr& e) -> nb::object {
                     const ir::LoadNode* l = e.as<ir::LoadNode>();
                     return l ? nb::cast(l->buffer) : nb::none();
                   })
      .def_prop_ro("indices", [](const Expr& e) -> nb::object {
        const ir::LoadNode* l = e.as<ir::LoadNode>();
        return l ? nb::cast(l->indices) : nb::none();
      });
}

void bind_ir_builder(nb::module_& m) {
  nb::implicitly_convertible<double, Expr>();

  nb::class_<Buffer>(m, "Buffer", "A buffer of the tile IR (a tensor parameter or an allocation).")
      .def_prop_ro("name", [](const Buffer& b) { return b.name(); })
      .def_prop_ro("shape", [](const Buffer& b) { return b.shape(); })
      .def_prop_ro("dtype", [](const Buffer& b) { return b.dtype().name(); })
      .def_prop_ro("scope", [](const Buffer& b) { return std::string(ir::scope_name(b.scope())); })
      .def_prop_ro("param", &Buffer::param)
      .def_prop_ro("id", &Buffer::id)
      .def_prop_ro("init", [](const Buffer& b) { return std::string(init_name(b->init)); })
      .def_prop_ro("ndim", &Buffer::rank)
      .def("__getitem__", &subscript)
      .def("__eq__", [](const Buffer& a, const Buffer& b) { return a == b; }, nb::is_operator())
      .def("__hash__", [](const Buffer& b) { return b.id(); })
      .def("__repr__", &buffer_repr);

  nb::class_<Region>(m, "Region", "A rectangular part of a buffer (a tile op operand).")
      .def("__init__",
           [](Region* r, const Buffer& b, nb::handle ranges) {
             new (r) Region(ir::region(b, to_ranges(ranges)));
           },
           nb::arg("buffer"), nb::arg("ranges"),
           "(min, extent) per dimension; extent None everywhere: a start corner.")
      .def_prop_ro("buffer", [](const Region& r) { return r.buffer; })
      .def_prop_ro("ranges",
                   [](const Region& r) {
                     nb::list out;
                     for (const ir::Range& x : r.ranges) {
                       out.append(nb::make_tuple(x.min, x.extent.defined() ? nb::cast(x.extent)
                                                                           : nb::none()));
                     }
                     return out;
                   })
      .def_prop_ro("is_whole", &Region::is_whole)
      .def_prop_ro("is_corner", &Region::is_corner)
      .def("__repr__", [](const Region& r) { return ir::to_string(r); });

  m.def("make_var",
        [](const std::string& name, const std::string& dtype) {
          return ir::make_var(name, dtype_of(dtype));
        },
        nb::arg("name"), nb::arg("dtype") = "int32", "A new IR variable (its own identity).");
  m.def("const",
        [](nb::handle value, const std::string& dtype) {
          const DataType t = dtype_of(dtype);
          if (t.is_float()) return ir::make_float(nb::cast<double>(value), t);
          if (PyFloat_Check(value.ptr())) {
            throw_error(ErrorKind::kTypeError,
                        "const: a float value for the integer dtype " + t.name());
          }
          return ir::make_int(nb::cast<int64_t>(value), t);
        },
        nb::arg("value"), nb::arg("dtype"));
  m.def("binary",
        [](const std::string& op, nb::handle a, nb::handle b) {
          return ir::make_binary(parse_binary(op), to_expr(a, op.c_str()), to_expr(b, op.c_str()));
        },
        nb::arg("op"), nb::arg("a"), nb::arg("b"),
        "op: add sub mul div floordiv floormod ceildiv min max eq ne lt le gt ge and or "
        "bitand bitor bitxor shl shr.");
  m.def("int_imm",
        [](int64_t v, const std::string& dtype) { return ir::make_int(v, dtype_of(dtype)); },
        nb::arg("value"), nb::arg("dtype") = "int32");
  m.def("float_imm",
        [](double v, const std::string& dtype) { return ir::make_float(v, dtype_of(dtype)); },
        nb::arg("value"), nb::arg("dtype") = "float32");
  m.def("contains_load", &contains_load, nb::arg("expr"), "Whether the expression reads a buffer.");
  m.def("to_string", [](const Expr& e) { return ir::to_string(e); }, nb::arg("expr"));
  m.def("cast", [](const std::string& t, nb::handle v) { return ir::cast(dtype_of(t), to_expr(v, "cast")); },
        nb::arg("dtype"), nb::arg("value"));
  m.def("select",
        [](nb::handle c, nb::handle t, nb::handle f) {
          return ir::select(to_expr(c, "select"), to_expr(t, "select"), to_expr(f, "select"));
        },
        nb::arg("cond"), nb::arg("true_value"), nb::arg("false_value"));
  m.def("logical_and", [](nb::handle a, nb::handle b) {
    return ir::logical_and(to_expr(a, "logical_and"), to_expr(b, "logical_and"));
  });
  m.def("logical_or", [](nb::handle a, nb::handle b) {
    return ir::logical_or(to_expr(a, "logical_or"), to_expr(b, "logical_or"));
  });
  m.def("logical_not", [](nb::handle a) { return ir::logical_not(to_expr(a, "logical_not")); });
  m.def("bitwise_not", [](nb::handle a) { return ir::bitwise_not(to_expr(a, "bitwise_not")); });
  m.def("truncdiv", [](nb::handle a, nb::handle b) {
    return ir::div(to_expr(a, "truncdiv"), to_expr(b, "truncdiv"));
  });
  m.def("infinity", [](const std::string& t) { return ir::infinity(dtype_of(t)); }, nb::arg("dtype"));
  m.def("call_intrinsic",
        [](const std::string& name, nb::handle args) {
          return ir::call_intrinsic(parse_intrinsic(name), to_exprs(args, name.c_str()));
        },
        nb::arg("name"), nb::arg("args"));
  m.def("load", [](const Buffer& b, nb::handle idx) { return ir::load(b, to_exprs(idx, "load")); },
        nb::arg("buffer"), nb::arg("indices"));
  m.def("region",
        [](const Buffer& b, nb::handle ranges) { return ir::region(b, to_ranges(ranges)); },
        nb::arg("buffer"), nb::arg("ranges"), "A slice: one (min, extent) per dimension.");
  m.def("corner", [](const Buffer& b, nb::handle idx) { return ir::corner(b, to_exprs(idx, "corner")); },
        nb::arg("buffer"), nb::arg("indices"), "A start corner: extents from the other operand.");
  m.def("whole", &ir::whole, nb::arg("buffer"));

  using ir::TileBuilder;
  nb::class_<TileBuilder>(m, "TileBuilder", "Builds a PrimFunc with a tile-IR body.")
      .def(nb::init<std::string>(), nb::arg("func_name"))
      .def_prop_ro("func_name", &TileBuilder::func_name)
      .def("tensor_param",
           [](TileBuilder& b, std::string name, nb::handle shape, const std::string& dtype,
              nb::handle span) {
             return b.tensor_param(std::move(name), to_exprs(shape, "shape"), dtype_of(dtype),
                                   to_span(span));
           },
           nb::arg("name"), nb::arg("shape"), nb::arg("dtype"), nb::arg("span").none() = nb::none())
      .def("scalar_param",
           [](TileBuilder& b, std::string name, const std::string& dtype, nb::handle span) {
             return b.scalar_param(std::move(name), dtype_of(dtype), to_span(span));
           },
           nb::arg("name"), nb::arg("dtype"), nb::arg("span").none() = nb::none())
      .def("begin_kernel",
           [](TileBuilder& b, nb::handle grid, std::vector<int> threads, nb::handle span) {
             return b.begin_kernel(to_exprs(grid, "T.Kernel"), std::move(threads), to_span(span));
           },
           nb::arg("grid"), nb::arg("threads"), nb::arg("span").none() = nb::none())
      .def("end_kernel", [](TileBuilder& b, nb::handle span) { b.end_kernel(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("thread_binding",
           [](TileBuilder& b, int dim, nb::handle span) { return b.thread_binding(dim, to_span(span)); },
           nb::arg("dim") = 0, nb::arg("span").none() = nb::none())
      .def("use_swizzle",
           [](TileBuilder& b, int panel_size, const std::string& order, bool enable,
              nb::handle span) {
             b.use_swizzle(panel_size, parse_raster_order(order), enable, to_span(span));
           },
           nb::arg("panel_size"), nb::arg("order") = "row", nb::arg("enable") = true,
           nb::arg("span").none() = nb::none())
      .def("alloc",
           [](TileBuilder& b, std::string name, nb::handle shape, const std::string& dtype,
              const std::string& scope, nb::handle span) {
             return b.alloc(std::move(name), to_exprs(shape, "shape"), dtype_of(dtype),
                            parse_scope(scope), to_span(span));
           },
           nb::arg("name"), nb::arg("shape"), nb::arg("dtype"), nb::arg("scope"),
           nb::arg("span").none() = nb::none())
      .def("alloc_global",
           [](TileBuilder& b, std::string name, nb::handle shape, const std::string& dtype,
              const std::string& init, nb::handle span) {
             return b.alloc_global(std::move(name), to_exprs(shape, "shape"), dtype_of(dtype),
                                   parse_init(init), to_span(span));
           },
           nb::arg("name"), nb::arg("shape"), nb::arg("dtype"), nb::arg("init") = "empty",
           nb::arg("span").none() = nb::none())
      .def("begin_for",
           [](TileBuilder& b, std::string var, nb::handle min, nb::handle extent,
              const std::string& kind, int stages, nb::handle span) {
             return b.begin_for(std::move(var), to_expr(min, "loop start"),
                                to_expr(extent, "loop extent"), parse_for_kind(kind), stages,
                                to_span(span));
           },
           nb::arg("var_name"), nb::arg("min"), nb::arg("extent"), nb::arg("kind") = "serial",
           nb::arg("stages") = 0, nb::arg("span").none() = nb::none())
      .def("end_for", [](TileBuilder& b, nb::handle span) { b.end_for(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("set_pipeline_schedule",
           [](TileBuilder& b, std::vector<int> order, std::vector<int> stage,
              std::vector<std::vector<int>> group, nb::handle span) {
             b.set_pipeline_schedule(std::move(order), std::move(stage), std::move(group),
                                     to_span(span));
           },
           nb::arg("order"), nb::arg("stage"), nb::arg("group"),
           nb::arg("span").none() = nb::none())
      .def("set_loop_origin",
           [](TileBuilder& b, std::string op, std::string reason, nb::handle span) {
             b.set_loop_origin(std::move(op), std::move(reason), to_span(span));
           },
           nb::arg("op"), nb::arg("reason"), nb::arg("span").none() = nb::none())
      .def("begin_if",
           [](TileBuilder& b, nb::handle c, nb::handle span) { b.begin_if(to_expr(c, "if"), to_span(span)); },
           nb::arg("cond"), nb::arg("span").none() = nb::none())
      .def("begin_else", [](TileBuilder& b, nb::handle span) { b.begin_else(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("end_if", [](TileBuilder& b, nb::handle span) { b.end_if(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("begin_while",
           [](TileBuilder& b, nb::handle c, nb::handle span) {
             b.begin_while(to_expr(c, "while"), to_span(span));
           },
           nb::arg("cond"), nb::arg("span").none() = nb::none())
      .def("end_while", [](TileBuilder& b, nb::handle span) { b.end_while(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("break_loop", [](TileBuilder& b, nb::handle span) { b.break_loop(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("continue_loop", [](TileBuilder& b, nb::handle span) { b.continue_loop(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("sync_threads", [](TileBuilder& b, nb::handle span) { b.sync_threads(to_span(span)); },
           nb::arg("span").none() = nb::none())
      .def("store",
           [](TileBuilder& b, const Buffer& buf, nb::handle idx, nb::handle v, nb::handle span) {
             b.store(buf, to_exprs(idx, "store"), to_expr(v, "store"), to_span(span));
           },
           nb::arg("buffer"), nb::arg("indices"), nb::arg("value"),
           nb::arg("span").none() = nb::none())
      .def("let",
           [](TileBuilder& b, std::string name, nb::handle v, nb::handle span) {
             return b.let(std::move(name), to_expr(v, "let"), to_span(span));
           },
           nb::arg("name"), nb::arg("value"), nb::arg("span").none() = nb::none())
      .def("evaluate",
           [](TileBuilder& b, nb::handle v, nb::handle span) { b.evaluate(to_expr(v, "evaluate"), to_span(span)); },
           nb::arg("value"), nb::arg("span").none() = nb::none())
      .def("copy",
           [](TileBuilder& b, nb::handle src, nb::handle dst, nb::handle span, bool disable_tma) {
             // Operands convert in order, so an error names the first bad one.
             Region s = to_region(src, "T.copy");
             Region d = to_region(dst, "T.copy");
             b.copy(std::move(s), std::move(d), to_span(span), disable_tma);
           },
           nb::arg("src"), nb::arg("dst"), nb::arg("span").none() = nb::none(),
           nb::arg("disable_tma") = false)
      .def("gemm",
           [](TileBuilder& b, nb::handle a, nb::handle bb, nb::handle c, bool ta, bool tb,
              bool clear, int policy, nb::handle span) {
             Region ra = to_region(a, "T.gemm");
             Region rb = to_region(bb, "T.gemm");
             Region rc = to_region(c, "T.gemm");
             b.gemm(std::move(ra), std::move(rb), std::move(rc), ta, tb, clear, policy,
                    to_span(span));
           },
           nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("trans_a") = false,
           nb::arg("trans_b") = false, nb::arg("clear_accum") = false, nb::arg("policy") = 0,
           nb::arg("span").none() = nb::none())
      .def("fill",
           [](TileBuilder& b, nb::handle dst, nb::handle v, nb::handle span) {
             b.fill(to_region(dst, "T.fill"), to_expr(v, "T.fill"), to_span(span));
           },
           nb::arg("dst"), nb::arg("value"), nb::arg("span").none() = nb::none())
      .def("reduce",
           [](TileBuilder& b, const std::string& kind, nb::handle src, nb::handle dst, int dim,
              bool clear, nb::handle span) {
             const ir::ReduceKind k = parse_reduce_kind(kind);
             Region s = to_region(src, "T.reduce");
             Region d = to_region(dst, "T.reduce");
             b.reduce(k, std::move(s), std::move(d), dim, clear, to_span(span));
           },
           nb::arg("kind"), nb::arg("src"), nb::arg("dst"), nb::arg("dim"),
           nb::arg("clear") = true, nb::arg("span").none() = nb::none())
      .def("atomic_add",
           [](TileBuilder& b, nb::handle dst, nb::handle v, nb::handle span) {
             const Region d = to_region(dst, "T.atomic_add");
             const bool is_region = nb::isinstance<Region>(v) || nb::isinstance<Buffer>(v);
             if (is_region) {
               b.atomic_add(d, to_region(v, "T.atomic_add"), to_span(span));
             } else {
               b.atomic_add(d, to_expr(v, "T.atomic_add"), to_span(span));
             }
           },
           nb::arg("dst"), nb::arg("value"), nb::arg("span").none() = nb::none())
      .def("print",
           [](TileBuilder& b, nb::handle v, std::string msg, nb::handle span) {
             if (nb::isinstance<Region>(v) || nb::isinstance<Buffer>(v)) {
               b.print(to_region(v, "T.print"), std::move(msg), to_span(span));
             } else {
               b.print(to_expr(v, "T.print"), std::move(msg), to_span(span));
             }
           },
           nb::arg("value"), nb::arg("message") = "", nb::arg("span").none() = nb::none())
      .def("set_dialect", &TileBuilder::set_dialect, nb::arg("dialect"))
      .def("finish",
           [](TileBuilder& b, nb::handle span) { return transform::verify(b.finish(to_span(span))); },
           nb::arg("span").none() = nb::none());
}

}  // namespace tilejit::python

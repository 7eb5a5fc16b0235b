// tilejit._C.Expr (symbolic integer expressions) and tilejit._C.PrimFunc
// (a declared signature), as the language layer (tilejit/language.py)
// builds them. Operators accept Python ints on either side; anything else
// returns NotImplemented, so Python raises its usual TypeError.
#include "ir_bindings.h"

#include <nanobind/operators.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "errors.h"
#include "ir_builder.h"
#include "tilejit/core/data_type.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/simplify.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

using ir::Expr;

// A shape or grid entry: an Expr, or a Python int. `where` names the place
// for the error ("main: parameter 'Q' dimension 1").
Expr to_expr(nb::handle h, const std::string& where) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0) {
      throw_error(ErrorKind::kValueError, where + ": " + nb::str(h).c_str() +
                                              " does not fit in int64");
    }
    return Expr(int64_t(v));
  }
  throw_error(ErrorKind::kTypeError, where + ": expected an int or a T.symbolic expression, got " +
                                         Py_TYPE(h.ptr())->tp_name);
}

std::string shape_text(const std::vector<Expr>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + ir::to_string(shape[i]);
  return s + "]";
}

std::string prim_func_repr(const ir::PrimFunc& f) {
  std::ostringstream os;
  os << "<tilejit.PrimFunc " << f.name << "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ir::Param& p = f.params[i];
    os << (i ? ", " : "") << p.name << ": ";
    if (p.is_scalar) {
      os << p.scalar.name();
    } else {
      os << p.tensor.dtype.name() << shape_text(p.tensor.shape);
    }
  }
  os << ") grid=" << shape_text(f.launch.grid) << " threads=" << f.launch.threads << ">";
  return os.str();
}

// Builds and validates a PrimFunc. `params` holds (name, dtype, shape) with
// shape None for a scalar.
ir::PrimFunc make_prim_func(const std::string& name, nb::list params, nb::list grid, int threads,
                            const std::map<std::string, std::string>& bodies,
                            nb::handle dynamic_smem) {
  ir::PrimFuncBuilder builder(name);
  for (nb::handle entry : params) {
    nb::tuple t = nb::cast<nb::tuple>(entry);
    const std::string pname = nb::cast<std::string>(t[0]);
    const DataType dtype = DataType::parse(nb::cast<std::string>(t[1]));
    if (t[2].is_none()) {
      builder.scalar(pname, dtype);
      continue;
    }
    std::vector<Expr> shape;
    size_t d = 0;
    for (nb::handle dim : nb::borrow<nb::sequence>(t[2])) {
      shape.push_back(
          to_expr(dim, name + ": parameter '" + pname + "' dimension " + std::to_string(d++)));
    }
    builder.tensor(pname, std::move(shape), dtype);
  }
  std::vector<Expr> extents;
  size_t d = 0;
  for (nb::handle e : grid) extents.push_back(to_expr(e, name + ": grid extent " + std::to_string(d++)));
  builder.grid(std::move(extents));
  builder.threads(threads);
  if (!dynamic_smem.is_none()) builder.dynamic_smem(to_expr(dynamic_smem, name + ": dynamic_smem"));
  for (const auto& [target, body] : bodies) builder.body(target, body);
  return builder.build();
}

// int(e) and range(e): the value of a constant expression; a symbolic one
// has none until a call binds it.
int64_t const_value(const Expr& e) {
  if (!e.is_const()) {
    std::string message = "'";  // appended, not "'" + ...: GCC 12 warns falsely (-Wrestrict)
    message += ir::to_string(e);
    message += "' is symbolic: its value is known only when the kernel is called";
    throw_error(ErrorKind::kTypeError, message);
  }
  return e.int_value();
}

nb::list params_of(const ir::PrimFunc& f) {
  nb::list out;
  for (const ir::Param& p : f.params) {
    nb::dict d;
    d["name"] = p.name;
    d["kind"] = p.is_scalar ? "scalar" : "tensor";
    d["dtype"] = (p.is_scalar ? p.scalar : p.tensor.dtype).name();
    if (!p.is_scalar) d["shape"] = nb::cast(p.tensor.shape);
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_ir(nb::module_& m) {
  nb::class_<Expr> expr_class(m, "Expr", "An expression: a shape, an index, a value.");
  expr_class.def(nb::init<int64_t>())
      .def_static("var",
                  [](std::string name, const std::string& dtype) {
                    return Expr::var(std::move(name), DataType::parse(dtype));
                  },
                  nb::arg("name"), nb::arg("dtype") = "int64",
                  "A symbol; same name, same symbol.")
      .def(nb::self + nb::self)
      .def(nb::self - nb::self)
      .def(nb::self * nb::self)
      .def(nb::self + int64_t())
      .def(nb::self - int64_t())
      .def(nb::self * int64_t())
      .def(int64_t() + nb::self)
      .def(int64_t() - nb::self)
      .def(int64_t() * nb::self)
      .def("__neg__", [](const Expr& a) { return Expr(0) - a; })
      .def("__floordiv__", [](const Expr& a, const Expr& b) { return ir::floordiv(a, b); },
           nb::is_operator())
      .def("__floordiv__", [](const Expr& a, int64_t b) { return ir::floordiv(a, b); },
           nb::is_operator())
      .def("__rfloordiv__", [](const Expr& b, int64_t a) { return ir::floordiv(a, b); },
           nb::is_operator())
      .def("__mod__", [](const Expr& a, const Expr& b) { return ir::floormod(a, b); },
           nb::is_operator())
      .def("__mod__", [](const Expr& a, int64_t b) { return ir::floormod(a, b); },
           nb::is_operator())
      .def("__rmod__", [](const Expr& b, int64_t a) { return ir::floormod(a, b); },
           nb::is_operator())
      .def("__repr__", [](const Expr& e) { return ir::to_string(e); })
      .def("__str__", [](const Expr& e) { return ir::to_string(e); })
      .def("__hash__", [](const Expr& e) { return nb::hash(nb::str(ir::to_string(e).c_str())); })
      .def("__index__", &const_value)
      .def("__int__", &const_value)
      .def_prop_ro("is_const", &Expr::is_const)
      .def_prop_ro("is_var", &Expr::is_var)
      .def_prop_ro("name",
                   [](const Expr& e) -> nb::object {
                     if (!e.is_var()) return nb::none();
                     return nb::str(e.var_name().c_str());
                   })
      .def_prop_ro("value", [](const Expr& e) -> nb::object {
        if (e.is_float_const()) return nb::float_(e.float_value());
        if (!e.is_const()) return nb::none();
        return nb::int_(e.int_value());
      });
  nb::implicitly_convertible<int64_t, Expr>();
  bind_expr_ops(expr_class);

  m.def("ceildiv", [](const Expr& a, const Expr& b) { return ir::ceildiv(a, b); });
  m.def("floordiv", [](const Expr& a, const Expr& b) { return ir::floordiv(a, b); });
  m.def("floormod", [](const Expr& a, const Expr& b) { return ir::floormod(a, b); });
  m.def("min", [](const Expr& a, const Expr& b) { return ir::min(a, b); });
  m.def("max", [](const Expr& a, const Expr& b) { return ir::max(a, b); });
  m.def("simplify", &ir::simplify, "The canonical form of an expression.");
  m.def("symbols", [](const Expr& e) {
    std::vector<std::string> out;
    ir::collect_vars(e, &out);
    return out;
  }, "Names of the symbols in an expression, in order of first appearance.");
  m.def("parse_dtype", [](const std::string& text) { return DataType::parse(text).name(); },
        "The canonical name of a dtype name or alias; ValueError for unknown names.");

  nb::class_<ir::PrimFunc>(m, "PrimFunc", "A kernel's declared signature, launch and bodies.")
      .def_prop_ro("name", [](const ir::PrimFunc& f) { return f.name; })
      .def_prop_ro("params", &params_of)
      .def_prop_ro("grid", [](const ir::PrimFunc& f) { return f.launch.grid; })
      .def_prop_ro("threads", [](const ir::PrimFunc& f) { return f.launch.threads; })
      .def_prop_ro("bodies", [](const ir::PrimFunc& f) { return f.sources(); })
      .def_prop_ro("is_tile", &ir::PrimFunc::is_tile)
      .def("with_name",
           [](const ir::PrimFunc& f, const std::string& name) {
             ir::PrimFunc copy = f;
             copy.name = name;
             ir::validate(copy);
             return copy;
           },
           "A copy under another name (error messages and the generated entry use it).")
      .def("script", [](const ir::PrimFunc& f) { return ir::print(f); },
           "The IR as text (tile bodies in full, source bodies by line count).")
      .def("__repr__", &prim_func_repr);
  m.def("make_prim_func", &make_prim_func, nb::arg("name"), nb::arg("params"), nb::arg("grid"),
        nb::arg("threads"), nb::arg("bodies"), nb::arg("dynamic_smem").none() = nb::none());
}

}  // namespace tilejit::python

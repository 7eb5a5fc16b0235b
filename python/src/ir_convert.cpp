// Python values as tile IR (ir_convert.h).
#include "ir_convert.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "errors.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/visitor.h"

namespace nb = nanobind;

namespace tilejit::python::convert {

using ir::Buffer;
using ir::Expr;
using ir::Region;
using ir::Span;

Span to_span(nb::handle h) {
  if (h.is_none()) return {};
  nb::tuple t = nb::cast<nb::tuple>(h);
  if (t.size() != 3) throw_error(ErrorKind::kTypeError, "span: expected (file, line, col)");
  return Span{nb::cast<std::string>(t[0]), nb::cast<int>(t[1]), nb::cast<int>(t[2])};
}

// An Expr from an Expr, a Python int (int64) or float (float32), or a bool.
Expr to_expr(nb::handle h, const char* what) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (PyBool_Check(h.ptr())) return ir::make_bool(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0) {
      throw_error(ErrorKind::kValueError,
                  std::string(what) + ": " + nb::str(h).c_str() + " does not fit in int64");
    }
    return Expr(int64_t(v));
  }
  if (PyFloat_Check(h.ptr())) return Expr(PyFloat_AsDouble(h.ptr()));
  throw_error(ErrorKind::kTypeError, std::string(what) + ": expected an expression, got " +
                                         Py_TYPE(h.ptr())->tp_name);
}

std::vector<Expr> to_exprs(nb::handle seq, const char* what) {
  std::vector<Expr> out;
  if (nb::isinstance<nb::tuple>(seq) || nb::isinstance<nb::list>(seq)) {
    for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_expr(h, what));
  } else {
    out.push_back(to_expr(seq, what));
  }
  return out;
}

// Binary operators return NotImplemented for operands that are not numbers
// or Exprs, so that Python falls back (`e == None` is False, not an error).
bool is_number_or_expr(nb::handle h) {
  return nb::isinstance<Expr>(h) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr());
}

// A tile op operand: a Buffer, a Region or a Load (a start corner).
std::vector<ir::Range> to_ranges(nb::handle ranges) {
  std::vector<ir::Range> rs;
  for (nb::handle h : nb::borrow<nb::sequence>(ranges)) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    if (t.size() != 2) throw_error(ErrorKind::kTypeError, "region: a range is (min, extent)");
    rs.push_back({to_expr(t[0], "region min"),
                  t[1].is_none() ? Expr() : to_expr(t[1], "region extent")});
  }
  return rs;
}

Region to_region(nb::handle h, const char* what) {
  if (nb::isinstance<Region>(h)) return nb::cast<Region>(h);
  if (nb::isinstance<nb::tuple>(h) && nb::len(h) == 2 && nb::isinstance<Buffer>(h[0])) {
    return ir::region(nb::cast<Buffer>(h[0]), to_ranges(h[1]));
  }
  if (nb::isinstance<Buffer>(h)) return ir::whole(nb::cast<Buffer>(h));
  if (nb::isinstance<Expr>(h)) {
    Expr e = nb::cast<Expr>(h);
    if (const ir::LoadNode* l = e.as<ir::LoadNode>()) return ir::corner(l->buffer, l->indices);
  }
  throw_error(ErrorKind::kTypeError, std::string(what) + ": expected a buffer or a region, got " +
                                         nb::str(nb::repr(h)).c_str());
}

ir::Scope parse_scope(const std::string& s) {
  if (s == "shared" || s == "shared.dyn") return ir::Scope::kShared;
  if (s == "fragment" || s == "local.fragment") return ir::Scope::kFragment;
  if (s == "local" || s == "local.var") return ir::Scope::kLocal;
  if (s == "global") return ir::Scope::kGlobal;
  throw_error(ErrorKind::kValueError,
              "unknown scope '" + s + "'; expected shared, fragment or local");
}

ir::RasterOrder parse_raster_order(const std::string& s) {
  if (s == "row") return ir::RasterOrder::kRow;
  if (s == "col") return ir::RasterOrder::kColumn;
  throw_error(ErrorKind::kValueError, "unknown block order '" + s + "'; expected row or col");
}

ir::ForKind parse_for_kind(const std::string& s) {
  if (s == "serial") return ir::ForKind::kSerial;
  if (s == "unroll") return ir::ForKind::kUnroll;
  if (s == "parallel") return ir::ForKind::kParallel;
  if (s == "vectorized") return ir::ForKind::kVectorized;
  if (s == "pipelined") return ir::ForKind::kPipelined;
  throw_error(ErrorKind::kValueError, "unknown loop kind '" + s +
                                          "'; expected serial, unroll, parallel, vectorized or "
                                          "pipelined");
}

ir::ReduceKind parse_reduce_kind(const std::string& s) {
  if (s == "sum") return ir::ReduceKind::kSum;
  if (s == "max") return ir::ReduceKind::kMax;
  if (s == "min") return ir::ReduceKind::kMin;
  if (s == "abssum") return ir::ReduceKind::kAbsSum;
  if (s == "absmax") return ir::ReduceKind::kAbsMax;
  throw_error(ErrorKind::kValueError, "unknown reduction '" + s +
                                          "'; expected sum, max, min, abssum or absmax");
}

WorkspaceInit parse_init(const std::string& s) {
  if (s == "empty") return WorkspaceInit::kEmpty;
  if (s == "zero") return WorkspaceInit::kZero;
  if (s == "zero_once") return WorkspaceInit::kZeroOnce;
  throw_error(ErrorKind::kValueError,
              "unknown init '" + s + "'; expected empty, zero or zero_once");
}

const char* init_name(WorkspaceInit init) {
  switch (init) {
    case WorkspaceInit::kZero: return "zero";
    case WorkspaceInit::kZeroOnce: return "zero_once";
    default: return "empty";
  }
}

ir::Intrinsic parse_intrinsic(const std::string& s) {
  for (int i = 0; i <= int(ir::kLastIntrinsic); ++i) {
    if (s == ir::intrinsic_name(ir::Intrinsic(i))) return ir::Intrinsic(i);
  }
  throw_error(ErrorKind::kValueError, "unknown intrinsic '" + s + "'");
}

DataType dtype_of(const std::string& s) { return DataType::parse(s); }

ir::ExprKind parse_binary(const std::string& s) {
  using ir::ExprKind;
  static const std::pair<const char*, ExprKind> kOps[] = {
      {"add", ExprKind::kAdd},        {"sub", ExprKind::kSub},           {"mul", ExprKind::kMul},
      {"div", ExprKind::kDiv},        {"floordiv", ExprKind::kFloorDiv}, {"floormod", ExprKind::kFloorMod},
      {"ceildiv", ExprKind::kCeilDiv}, {"min", ExprKind::kMin},           {"max", ExprKind::kMax},
      {"eq", ExprKind::kEQ},          {"ne", ExprKind::kNE},             {"lt", ExprKind::kLT},
      {"le", ExprKind::kLE},          {"gt", ExprKind::kGT},             {"ge", ExprKind::kGE},
      {"and", ExprKind::kAnd},        {"or", ExprKind::kOr},
      {"bitand", ExprKind::kBitAnd},  {"bitor", ExprKind::kBitOr},       {"bitxor", ExprKind::kBitXor},
      {"shl", ExprKind::kShiftLeft},  {"shr", ExprKind::kShiftRight}};
  for (const auto& [name, kind] : kOps) {
    if (s == name) return kind;
  }
  throw_error(ErrorKind::kValueError, "unknown binary operator '" + s + "'");
}

namespace {

class LoadFinder : public ir::IRVisitor {
 public:
  bool found = false;

 protected:
  void visit_load(const ir::LoadNode*, const Expr&) override { found = true; }
};

}  // namespace

bool contains_load(const Expr& e) {
  LoadFinder f;
  f.visit(e);
  return f.found;
}

// bool(e): a constant's value; == and != structurally (Note in the header
// comment); anything else has no value until the kernel runs.
bool truth(const Expr& e) {
  if (e.is_const()) return e.int_value() != 0;
  if (e.kind() == ir::ExprKind::kEQ) return ir::structural_equal(e.a(), e.b());
  if (e.kind() == ir::ExprKind::kNE) return !ir::structural_equal(e.a(), e.b());
  std::string message = "'";
  message += ir::to_string(e);
  message += "' is symbolic: its truth value is known only when the kernel runs";
  throw_error(ErrorKind::kTypeError, message);
}

// Buffer.__getitem__: a Load when every subscript is an index, a Region when
// one is a slice.
nb::object subscript(const Buffer& b, nb::handle key) {
  std::vector<nb::handle> items;
  if (nb::isinstance<nb::tuple>(key)) {
    for (nb::handle h : nb::borrow<nb::tuple>(key)) items.push_back(h);
  } else {
    items.push_back(key);
  }
  bool any_slice = false;
  for (nb::handle h : items) any_slice = any_slice || PySlice_Check(h.ptr());
  if (!any_slice) {
    std::vector<Expr> idx;
    for (nb::handle h : items) idx.push_back(to_expr(h, "subscript"));
    return nb::cast(ir::load(b, std::move(idx)));
  }
  if (items.size() != size_t(b.rank())) {
    throw_error(ErrorKind::kValueError, b.name() + ": " + std::to_string(items.size()) +
                                            " subscripts for a buffer of rank " +
                                            std::to_string(b.rank()));
  }
  std::vector<ir::Range> ranges;
  for (size_t d = 0; d < items.size(); ++d) {
    nb::handle h = items[d];
    if (!PySlice_Check(h.ptr())) {
      ranges.push_back({to_expr(h, "subscript"), Expr(1)});
      continue;
    }
    nb::object start = h.attr("start"), stop = h.attr("stop"), step = h.attr("step");
    if (!step.is_none() && !(PyLong_Check(step.ptr()) && nb::cast<int64_t>(step) == 1)) {
      throw_error(ErrorKind::kValueError, b.name() + ": slices with a step are not supported");
    }
    Expr lo = start.is_none() ? Expr(0) : to_expr(start, "slice start");
    Expr hi = stop.is_none() ? b.shape()[d] : to_expr(stop, "slice stop");
    ranges.push_back({lo, ir::simplify(hi - lo)});
  }
  return nb::cast(ir::region(b, std::move(ranges)));
}

std::string buffer_repr(const Buffer& b) {
  return std::string("<Buffer ") + b.name() + ": " + ir::scope_name(b.scope()) + " " +
         b.dtype().name() + ir::shape_string(b.shape()) + ">";
}

}  // namespace tilejit::python::convert

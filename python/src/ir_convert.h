// Python values as tile IR, for the builder's bindings (ir_builder.cpp):
// spans, expressions, regions, the enums' names, Buffer subscripts. Errors
// are the Python exceptions of errors.h.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/jit/jit_options.h"

namespace tilejit::python::convert {

ir::Span to_span(nanobind::handle h);
ir::Expr to_expr(nanobind::handle h, const char* what);
std::vector<ir::Expr> to_exprs(nanobind::handle seq, const char* what);
bool is_number_or_expr(nanobind::handle h);
std::vector<ir::Range> to_ranges(nanobind::handle ranges);
ir::Region to_region(nanobind::handle h, const char* what);
DataType dtype_of(const std::string& s);
ir::Scope parse_scope(const std::string& s);
ir::RasterOrder parse_raster_order(const std::string& s);
ir::ForKind parse_for_kind(const std::string& s);
ir::ReduceKind parse_reduce_kind(const std::string& s);
WorkspaceInit parse_init(const std::string& s);
const char* init_name(WorkspaceInit init);
ir::Intrinsic parse_intrinsic(const std::string& s);
ir::ExprKind parse_binary(const std::string& s);
bool contains_load(const ir::Expr& e);
bool truth(const ir::Expr& e);
nanobind::object subscript(const ir::Buffer& b, nanobind::handle key);
std::string buffer_repr(const ir::Buffer& b);

}  // namespace tilejit::python::convert

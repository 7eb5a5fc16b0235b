// The shared tile-IR C++ printer (tile_codegen.h).
#include "backend/common/tile_codegen.h"

#include <string>
#include <string_view>
#include <vector>

#include "backend/common/cxx_source.h"
#include "core/string_literal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::backend {
namespace {

using ir::Expr;
// Names the entry declares or C++ reserves: an IR variable never takes one.
const char* const kReserved[] = {
    "int", "float", "double", "char", "bool", "auto",
    "for", "if", "else", "while", "do", "return", "break", "continue", "const", "static",
    "void", "true", "false", "new", "delete", "this", "class", "struct", "union", "enum",
    "switch", "case", "default", "goto", "sizeof", "signed", "unsigned", "long", "short",
    "volatile", "register", "extern", "inline", "template", "typename", "namespace", "using",
    "operator", "friend", "virtual", "public", "private", "protected", "try", "catch", "throw",
    "and", "or", "not", "xor", "std", "tilejit", "min", "max", "floordiv", "floormod", "ceildiv"};

}  // namespace

bool has_loop(const ir::Stmt& s) {
  struct Finder : ir::IRVisitor {
    bool found = false;
    void visit_for(const ir::ForStmt*, const ir::Stmt&) override { found = true; }
    void visit_while(const ir::WhileStmt*, const ir::Stmt&) override { found = true; }
  } f;
  f.visit(s);
  return f.found;
}

TileCodegen::TileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                         std::ostream& os, const char* display, int base_levels)
    : func_(func), os_(os), display_(display), base_levels_(base_levels) {
  for (const char* r : kReserved) used_names_[r] = 1;
  for (const ir::Param& p : func.params) used_names_[p.name] = 1;
  for (const std::string& s : symbols) used_names_[s] = 1;
}

const char* TileCodegen::compute_type(DataType t) {
  if (t == DataType::float64()) return "double";
  if (t.is_float()) return "float";
  if (t == DataType::boolean()) return "bool";
  // Note [Unsigned arithmetic] (tile_codegen.h).
  if (t == DataType::uint32()) return "uint32_t";
  if (t == DataType::uint64()) return "uint64_t";
  return "int64_t";
}

const char* TileCodegen::storage_type(DataType t, const ir::Span& span, const std::string& what) {
  if (const char* type = element_type(t)) return type;
  fail(ErrorKind::kTypeError, span, what,
       "dtype " + t.name() + " has no element type in the " + display_ + " backend");
}

std::string TileCodegen::fresh(const std::string& base) {
  auto [it, inserted] = used_names_.emplace(base, 1);
  if (inserted) return base;
  for (;;) {
    std::string name = base + "_" + std::to_string(it->second++);
    if (used_names_.emplace(name, 1).second) return name;
  }
}

std::string TileCodegen::var_name(const ir::Expr& v) {
  auto it = vars_.find(v.var_id());
  if (it != vars_.end()) return it->second;
  std::string name = v.var_name();
  if (name.rfind("tilejit", 0) == 0) name = "v_" + name;
  name = fresh(name);
  vars_.emplace(v.var_id(), name);
  return name;
}

void TileCodegen::bind_var(const ir::Expr& var, const std::string& name) {
  vars_[var.var_id()] = name;
}

std::string TileCodegen::tile_element(const BufferAccess& b, const std::vector<ir::Expr>& indices) {
  std::string flat;
  int64_t stride = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    std::string term = expr(indices[d]);
    if (debug_bounds && d < b.extents.size()) term = checked_index(b, d, term);
    if (stride != 1) term += " * " + std::to_string(stride);
    flat = flat.empty() ? term : term + " + " + flat;
    stride *= b.static_shape[d];
  }
  if (flat.empty()) flat = "0";
  return b.name + "[" + flat + "]";
}

std::string TileCodegen::checked_index(const BufferAccess& b, size_t dim,
                                       const std::string& index) {
  std::string shape;
  for (int64_t e : b.extents) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
  return lib() + "::checked_index(" + index + ", " + int_literal(b.extents[dim]) + ", " +
         c_string_literal(func_.name) + ", " + c_string_literal(b.buffer + " [" + shape + "]") +
         ", " + std::to_string(dim) + ")";
}

std::string TileCodegen::element(const BufferAccess& b, const std::vector<ir::Expr>& indices) {
  for (const RunElement& r : run_elements_) {
    if (r.access != b.name || r.indices.size() != indices.size()) continue;
    bool same = true;
    for (size_t d = 0; same && d < indices.size(); ++d) {
      same = ir::structural_equal(r.indices[d], indices[d]);
    }
    if (same) return r.array + "[" + r.lane + "]";
  }
  if (!b.global) return tile_element(b, indices);
  std::string out = b.name + "(";
  for (size_t d = 0; d < indices.size(); ++d) out += (d ? ", " : "") + expr(indices[d]);
  return out + ")";
}

void TileCodegen::line(const std::string& text) {
  // Note [Line directives]: every line a statement emits is the author's
  // line, not only its first (a barrier put before a store, then the store).
  if (line_directives_ && directive_line_ > 0 && directive_used_) {
    ++lines_;
    os_ << "#line " << directive_line_ << " " << c_string_literal(directive_file_) << "\n";
  }
  directive_used_ = true;
  ++lines_;
  os_ << std::string(size_t(depth_ + base_levels_) * 2, ' ') << text << '\n';
}

void TileCodegen::fail(ErrorKind kind, const ir::Span& span, const std::string& op,
                       const std::string& what) const {
  throw Error(kind, ir::diagnostic_prefix(span, func_.name, op) + what);
}

const BufferAccess& TileCodegen::access(const ir::Buffer& b, const ir::Span& span, const char* op) {
  auto it = buffers_.find(b.id());
  if (it != buffers_.end()) return it->second;
  (void)span;
  (void)op;
  // A tensor parameter, or a T.alloc_global buffer: the hidden parameter
  // transform::plan_workspaces made of it, a View the entry declares.
  std::string view = b.scope() == ir::Scope::kGlobal && b.param() >= 0 ? b.name() : "";
  const ir::TileBody& tile = *func_.tile();
  int64_t base_align = 0;
  for (size_t i = 0; view.empty() && i < tile.globals.size() && i < tile.global_params.size(); ++i) {
    if (tile.globals[i] == b) {
      view = func_.params[size_t(tile.global_params[i])].name;
      base_align = 256;
    }
  }
  TILEJIT_CHECK(!view.empty(), kInternalError)
      << func_.name << ": " << display_ << " tile codegen: buffer '" << b.name()
      << "' used before its allocation";
  BufferAccess a;
  a.name = view;
  a.dtype = b.dtype();
  a.global = true;
  a.base_align = base_align;
  a.data = view + ".data()";
  for (const Expr& d : b.shape()) {
    a.shape.push_back("int64_t(" + expr(d) + ")");
    a.static_shape.push_back(d.is_const() ? d.int_value() : -1);
  }
  return buffers_.emplace(b.id(), std::move(a)).first->second;
}

BufferAccess TileCodegen::tile_access(const ir::AllocStmt& op, int64_t* elements) {
  const ir::Buffer& b = op.buffer;
  if (!b->layout.defined()) {
    fail(ErrorKind::kInternalError, op.span, "T.alloc",
         "buffer " + b.name() + " reached the " + display_ + " lowering without a layout");
  }
  BufferAccess a;
  a.name = fresh(b.name());
  a.dtype = b.dtype();
  a.data = a.name;
  a.buffer = b.name();
  *elements = 1;
  for (const Expr& d : b.shape()) {
    if (!d.is_const()) {
      fail(ErrorKind::kValueError, op.span, "T.alloc",
           "buffer " + b.name() + " has a dynamic shape " + ir::shape_string(b.shape()) +
               "; tiles have constant shapes");
    }
    a.static_shape.push_back(d.int_value());
    a.extents.push_back(d.int_value());
    a.shape.push_back(std::to_string(d.int_value()));
    *elements *= d.int_value();
  }
  return a;
}

std::string TileCodegen::loop_end(const std::string& v, const ir::ForStmt& op,
                                  const std::string& lo) {
  if (op.min.is_const() && op.extent.is_const()) {
    return int_literal(op.min.int_value() + op.extent.int_value());
  }
  const std::string end = fresh(v + "_end");
  line("const int64_t " + end + " = " + lo + " + " + expr(op.extent) + ";");
  return end;
}

std::string restore_line_numbers(const std::string& source, const std::string& unit) {
  std::string out;
  out.reserve(source.size());
  const std::string marker = TileCodegen::kLineRestoreMarker;
  int64_t line = 1;
  for (size_t at = 0; at < source.size();) {
    size_t end = source.find('\n', at);
    if (end == std::string::npos) end = source.size();
    const std::string_view text(source.data() + at, end - at);
    if (text == marker) {
      out += "#line " + std::to_string(line + 1) + " " + c_string_literal(unit);
    } else {
      out.append(text);
    }
    if (end < source.size()) out += '\n';
    at = end + 1;
    ++line;
  }
  return out;
}

// Note [Line directives]
// A generated unit (CUDA, and the CPU's C++) maps its kernel bodies' lines
// to the author's: before
// the lines of a statement whose span is known, `#line L "file"` (again
// before each further line it emits, so that a barrier or a declaration
// the lowering puts first does not shift the statement's own line), so that NVRTC's errors, ptxas's warnings and,
// through -lineinfo, compute-sanitizer's and the profilers' reports name the
// author's line; on the CPU, g++'s messages and a debugger's line table. After a body, kLineRestoreMarker becomes the #line that
// returns to the unit's own numbering, once the unit is assembled
// (restore_line_numbers), where its physical line is known.
void TileCodegen::emit_stmt(const ir::Stmt& s) {
  if (!s.defined()) return;
  if (line_directives_ && s.kind() != ir::StmtKind::kSeq && s.span().line > 0 &&
      !s.span().file.empty() &&
      (s.span().line != directive_line_ || s.span().file != directive_file_)) {
    directive_line_ = s.span().line;
    directive_file_ = s.span().file;
    directive_used_ = false;
    ++lines_;
    os_ << "#line " << directive_line_ << " " << c_string_literal(directive_file_) << "\n";
  }
  if (s.kind() != ir::StmtKind::kSeq) {
    if (emit_own(s)) return;
    before_stmt(s);
  }
  switch (s.kind()) {
    case ir::StmtKind::kKernel:
      fail(ErrorKind::kValueError, s.span(), "T.Kernel",
           std::string("a kernel inside a kernel; the ") + display_ +
               " backend runs one T.Kernel per launch");
    case ir::StmtKind::kAlloc: emit_alloc(*s.as<ir::AllocStmt>()); return;
    case ir::StmtKind::kSeq:
      for (const ir::Stmt& x : s.as<ir::SeqStmt>()->stmts) emit_stmt(x);
      return;
    case ir::StmtKind::kFor: emit_for(*s.as<ir::ForStmt>()); return;
    case ir::StmtKind::kIf: emit_if(*s.as<ir::IfStmt>()); return;
    case ir::StmtKind::kWhile: emit_while(*s.as<ir::WhileStmt>()); return;
    case ir::StmtKind::kBreak: line("break;"); return;
    case ir::StmtKind::kContinue: line("continue;"); return;
    case ir::StmtKind::kStore: emit_store(*s.as<ir::StoreStmt>()); return;
    case ir::StmtKind::kLet: {
      const auto* op = s.as<ir::LetStmt>();
      const std::string value = expr(op->value);
      line(std::string("const ") + compute_type(op->var.dtype()) + " " + var_name(op->var) +
           " = " + value + ";");
      return;
    }
    case ir::StmtKind::kEvaluate:
      line("(void)(" + expr(s.as<ir::EvaluateStmt>()->value) + ");");
      return;
    case ir::StmtKind::kSync: emit_sync(s); return;
    case ir::StmtKind::kCopy:
    case ir::StmtKind::kGemm:
    case ir::StmtKind::kFill:
    case ir::StmtKind::kReduce:
    case ir::StmtKind::kAtomicAdd:
    case ir::StmtKind::kPrint: emit_tile_op(s); return;
  }
  ir::unhandled_stmt("tile codegen", s);
}

void TileCodegen::emit_if(const ir::IfStmt& op) {
  line("if (" + expr(op.cond) + ") {");
  indent();
  emit_block(op.then_case);
  dedent();
  if (op.else_case.defined()) {
    line("} else {");
    indent();
    emit_block(op.else_case);
    dedent();
  }
  line("}");
}

void TileCodegen::emit_while(const ir::WhileStmt& op) {
  line("while (" + expr(op.cond) + ") {");
  indent();
  emit_block(op.body);
  dedent();
  line("}");
}

// transform::verify resolves regions the same way; doing it here too keeps
// the lowering whole for bodies that skip it.
ir::Region resolve(TileCodegen& cg, const ir::Region& r, const std::vector<Expr>* other,
                   const ir::Span& span, const std::string& op) {
  if (r.is_whole()) {
    ir::Region out{r.buffer, {}};
    for (const Expr& d : r.buffer.shape()) out.ranges.push_back({Expr(0), d});
    return out;
  }
  if (!r.is_corner()) return r;
  if (other == nullptr) {
    cg.fail(ErrorKind::kValueError, span, op,
            ir::to_string(r) + " is a start corner, and no other operand gives its extents");
  }
  std::vector<Expr> extents = *other;
  const size_t rank = r.ranges.size();
  while (extents.size() > rank && extents.front().is_const() && extents.front().int_value() == 1) {
    extents.erase(extents.begin());
  }
  if (extents.size() > rank) {
    cg.fail(ErrorKind::kValueError, span, op,
            ir::to_string(r) + " has " + std::to_string(rank) + " dimensions; the other operand has " +
                std::to_string(extents.size()) + " of extent above 1");
  }
  while (extents.size() < rank) extents.insert(extents.begin(), Expr(1));
  ir::Region out{r.buffer, {}};
  for (size_t d = 0; d < rank; ++d) out.ranges.push_back({r.ranges[d].min, extents[d]});
  return out;
}

std::vector<Expr> extents_of(const ir::Region& r) {
  std::vector<Expr> e;
  for (const ir::Range& range : r.ranges) e.push_back(range.extent);
  return e;
}

std::pair<ir::Region, ir::Region> resolve_pair(TileCodegen& cg, const ir::Region& a,
                                               const ir::Region& b, const ir::Span& span,
                                               const std::string& op) {
  if (a.is_corner()) {
    ir::Region rb = resolve(cg, b, nullptr, span, op);
    const std::vector<Expr> eb = extents_of(rb);
    return {resolve(cg, a, &eb, span, op), rb};
  }
  ir::Region ra = resolve(cg, a, nullptr, span, op);
  const std::vector<Expr> ea = extents_of(ra);
  return {ra, resolve(cg, b, &ea, span, op)};
}

void TileCodegen::sync_in_parallel(const ir::Stmt& s) {
  fail(ErrorKind::kValueError, s.span(), "T.sync_threads",
       "a barrier inside a T.Parallel loop, whose iterations are spread over the threads (not "
       "every thread reaches it equally often); put it between the loops");
}

}  // namespace tilejit::backend

// The CPU unit of a tile-IR body (Note [CPU lowering of tile IR] in
// tile_codegen.h). For kernel `add(A: float32[n], B: float32[n])` with one
// T.Kernel(ceildiv(n, 256)) it reads
//
//   <the head of every CPU unit: prelude, fault handler (emit_entry_head)>
//   #include "tilejit/cpu/tile_ops.h"
//   extern "C" int64_t tilejit_entry(...) {
//     <the symbols and views of the parameters, as for a source body>
//     tilejit::cpu::Arena tilejit_arena;  // allocated: the bytes of the large tiles
//     for (<blocks [begin, end)>) {
//       const int64_t bx = tilejit_x;
//       try { <the kernel's statements> } catch (...) { <report>; return block; }
//     }
//     return -1;
//   }
//
// IR variables keep their names where no other name in the unit has them,
// else get a suffix (`i`, `i_1`).
#include "backend/cpu/tile_codegen.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"

namespace tilejit::cpu {
namespace {

using ir::Expr;
using ir::ExprKind;

// Names the entry declares or C++ reserves: an IR variable never takes one.
const char* const kReserved[] = {
    "int", "float", "double", "char", "bool", "auto",
    "for", "if", "else", "while", "do", "return", "break", "continue", "const", "static",
    "void", "true", "false", "new", "delete", "this", "class", "struct", "union", "enum",
    "switch", "case", "default", "goto", "sizeof", "signed", "unsigned", "long", "short",
    "volatile", "register", "extern", "inline", "template", "typename", "namespace", "using",
    "operator", "friend", "virtual", "public", "private", "protected", "try", "catch", "throw",
    "and", "or", "not", "xor", "std", "tilejit", "min", "max", "floordiv", "floormod", "ceildiv"};

bool is_half(DataType t) { return t == DataType::float16() || t == DataType::bfloat16(); }

std::string int_literal(int64_t v) {
  std::string s = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) s += "LL";
  return v < 0 ? "(" + s + ")" : s;
}

std::string float_literal(double v, DataType t) {
  const bool f64 = t == DataType::float64();
  if (std::isinf(v)) {
    const std::string inf = f64 ? "double(INFINITY)" : "INFINITY";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  if (std::isnan(v)) return f64 ? "double(NAN)" : "NAN";
  char buf[64];
  std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  if (!f64) s += 'f';
  return v < 0 ? "(" + s + ")" : s;
}

// Scalar expressions as C++ (Note [CPU lowering of tile IR], "Scalars").
class ExprEmitter : public ir::ExprFunctor<std::string> {
 public:
  explicit ExprEmitter(TileCodegen& cg, std::map<uint64_t, std::string>& vars)
      : cg_(cg), vars_(vars) {}

 private:
  const char* walk_name() const override { return "CPU tile codegen"; }

  std::string visit_int_imm(const ir::IntImmNode* op, const Expr&) override {
    if (op->dtype == DataType::boolean()) return op->value ? "true" : "false";
    return int_literal(op->value);
  }
  std::string visit_float_imm(const ir::FloatImmNode* op, const Expr&) override {
    return float_literal(op->value, op->dtype);
  }
  std::string visit_var(const ir::VarNode* op, const Expr& e) override {
    std::string name;
    if (op->id == 0) {
      name = op->name;  // a symbol or scalar parameter, declared by the entry
    } else {
      auto it = vars_.find(op->id);
      TILEJIT_ICHECK(it != vars_.end()) << "IR variable '" << op->name << "' used unbound";
      name = it->second;
    }
    return is_half(e.dtype()) ? "float(" + name + ")" : name;
  }
  std::string visit_binary(const ir::BinaryNode* op, const Expr& e) override {
    const std::string a = visit_expr(op->a), b = visit_expr(op->b);
    const bool is_float = op->a.dtype().is_float() || op->b.dtype().is_float();
    const char* ct = TileCodegen::compute_type(ir::promote(op->a.dtype(), op->b.dtype()));
    switch (op->kind) {
      case ExprKind::kAdd: return "(" + a + " + " + b + ")";
      case ExprKind::kSub: return "(" + a + " - " + b + ")";
      case ExprKind::kMul: return "(" + a + " * " + b + ")";
      case ExprKind::kDiv: return "(" + a + " / " + b + ")";
      case ExprKind::kFloorDiv:
        return is_float ? "std::floor(" + a + " / " + b + ")"
                        : "tilejit::floordiv(" + a + ", " + b + ")";
      case ExprKind::kFloorMod:
        if (is_float) return "(" + a + " - std::floor(" + a + " / " + b + ") * " + b + ")";
        return "tilejit::floormod(" + a + ", " + b + ")";
      case ExprKind::kCeilDiv:
        return is_float ? "std::ceil(" + a + " / " + b + ")"
                        : "tilejit::ceildiv(" + a + ", " + b + ")";
      case ExprKind::kMin: return std::string("std::min<") + ct + ">(" + a + ", " + b + ")";
      case ExprKind::kMax: return std::string("std::max<") + ct + ">(" + a + ", " + b + ")";
      case ExprKind::kEQ: return "(" + a + " == " + b + ")";
      case ExprKind::kNE: return "(" + a + " != " + b + ")";
      case ExprKind::kLT: return "(" + a + " < " + b + ")";
      case ExprKind::kLE: return "(" + a + " <= " + b + ")";
      case ExprKind::kGT: return "(" + a + " > " + b + ")";
      case ExprKind::kGE: return "(" + a + " >= " + b + ")";
      case ExprKind::kAnd: return "(" + a + " && " + b + ")";
      case ExprKind::kOr: return "(" + a + " || " + b + ")";
      default: break;
    }
    ir::unhandled_expr(walk_name(), e);
  }
  std::string visit_not(const ir::NotNode* op, const Expr&) override {
    return "(!" + visit_expr(op->a) + ")";
  }
  std::string visit_select(const ir::SelectNode* op, const Expr& e) override {
    const std::string ct = TileCodegen::compute_type(e.dtype());
    return "(" + visit_expr(op->cond) + " ? " + ct + "(" + visit_expr(op->true_value) + ") : " +
           ct + "(" + visit_expr(op->false_value) + "))";
  }
  std::string visit_cast(const ir::CastNode* op, const Expr& e) override {
    const std::string v = visit_expr(op->value);
    const DataType t = e.dtype();
    if (is_half(t)) {
      // Rounded to the 16-bit type, then computed on as float.
      const char* st = t == DataType::bfloat16() ? "tilejit::bfloat16" : "tilejit::float16";
      return std::string("float(") + st + "(float(" + v + ")))";
    }
    if (t == DataType::boolean()) return "static_cast<bool>(" + v + ")";
    if (t.is_int() && t.bits < 64) {
      // The value of the narrow type, held in the int64 compute type.
      const std::string st = (t == DataType::uint8() ? "uint8_t" : "int" + std::to_string(t.bits) + "_t");
      return "int64_t(static_cast<" + st + ">(" + v + "))";
    }
    return std::string("static_cast<") + TileCodegen::compute_type(t) + ">(" + v + ")";
  }
  std::string visit_call(const ir::CallNode* op, const Expr& e) override {
    const std::string ct = TileCodegen::compute_type(e.dtype());
    std::vector<std::string> args;
    for (const Expr& a : op->args) args.push_back(ct + "(" + visit_expr(a) + ")");
    auto fn = [&](const char* name) { return std::string(name) + "(" + args[0] + ")"; };
    switch (op->op) {
      case ir::Intrinsic::kExp: return fn("std::exp");
      case ir::Intrinsic::kExp2: return fn("std::exp2");
      case ir::Intrinsic::kLog: return fn("std::log");
      case ir::Intrinsic::kLog2: return fn("std::log2");
      case ir::Intrinsic::kSqrt: return fn("std::sqrt");
      case ir::Intrinsic::kRsqrt: return "(" + ct + "(1) / std::sqrt(" + args[0] + "))";
      case ir::Intrinsic::kTanh: return fn("std::tanh");
      case ir::Intrinsic::kSigmoid:
        return "(" + ct + "(1) / (" + ct + "(1) + std::exp(-" + args[0] + ")))";
      case ir::Intrinsic::kAbs: return fn("std::abs");
      case ir::Intrinsic::kFloor: return fn("std::floor");
      case ir::Intrinsic::kCeil: return fn("std::ceil");
      case ir::Intrinsic::kSin: return fn("std::sin");
      case ir::Intrinsic::kCos: return fn("std::cos");
      case ir::Intrinsic::kPow: return "std::pow(" + args[0] + ", " + args[1] + ")";
    }
    ir::unhandled_expr(walk_name(), e);
  }
  std::string visit_load(const ir::LoadNode* op, const Expr& e) override {
    const BufferAccess& b = cg_.access(op->buffer, {}, "load");
    std::string ref = element(b, op->indices);
    return is_half(e.dtype()) ? "float(" + ref + ")" : ref;
  }

 public:
  // The element at `indices`: View call for a tensor, flat index for a tile.
  std::string element(const BufferAccess& b, const std::vector<Expr>& indices) {
    if (b.global) {
      std::string out = b.name + "(";
      for (size_t d = 0; d < indices.size(); ++d) out += (d ? ", " : "") + visit_expr(indices[d]);
      return out + ")";
    }
    std::string flat;
    int64_t stride = 1;
    for (size_t d = indices.size(); d-- > 0;) {
      std::string term = visit_expr(indices[d]);
      if (stride != 1) term += " * " + std::to_string(stride);
      flat = flat.empty() ? term : term + " + " + flat;
      stride *= b.static_shape[d];
    }
    if (flat.empty()) flat = "0";
    return b.name + "[" + flat + "]";
  }

 private:
  TileCodegen& cg_;
  std::map<uint64_t, std::string>& vars_;
};

// True when `s` holds a loop (so a loop around it is not the innermost).
bool has_loop(const ir::Stmt& s) {
  struct Finder : ir::IRVisitor {
    bool found = false;
    void visit_for(const ir::ForStmt*, const ir::Stmt&) override { found = true; }
    void visit_while(const ir::WhileStmt*, const ir::Stmt&) override { found = true; }
  } f;
  f.visit(s);
  return f.found;
}

}  // namespace

TileCodegen::TileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                         std::ostream& os)
    : func_(func), os_(os) {
  for (const char* r : kReserved) used_names_[r] = 1;
  for (const ir::Param& p : func.params) used_names_[p.name] = 1;
  for (const std::string& s : symbols) used_names_[s] = 1;
}

const char* TileCodegen::compute_type(DataType t) {
  if (t == DataType::float64()) return "double";
  if (t.is_float()) return "float";
  if (t == DataType::boolean()) return "bool";
  return "int64_t";
}

const char* TileCodegen::storage_type(DataType t, const ir::Span& span, const std::string& what) {
  if (t == DataType::float64()) return "double";
  if (t == DataType::float32()) return "float";
  if (t == DataType::float16()) return "tilejit::float16";
  if (t == DataType::bfloat16()) return "tilejit::bfloat16";
  if (t == DataType::int8()) return "int8_t";
  if (t == DataType::int16()) return "int16_t";
  if (t == DataType::int32()) return "int32_t";
  if (t == DataType::int64()) return "int64_t";
  if (t == DataType::uint8()) return "uint8_t";
  if (t == DataType::boolean()) return "bool";
  fail(ErrorKind::kTypeError, span, what,
       "dtype " + t.name() + " has no element type in the CPU backend");
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

std::string TileCodegen::expr(const ir::Expr& e) {
  ExprEmitter emitter(*this, vars_);
  return emitter.visit_expr(e);
}

void TileCodegen::line(const std::string& text) {
  os_ << std::string(size_t(depth_ + 2) * 2, ' ') << text << '\n';
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
  for (size_t i = 0; view.empty() && i < tile.globals.size() && i < tile.global_params.size(); ++i) {
    if (tile.globals[i] == b) view = func_.params[size_t(tile.global_params[i])].name;
  }
  TILEJIT_CHECK(!view.empty(), kInternalError)
      << func_.name << ": CPU tile codegen: buffer '" << b.name() << "' used before its allocation";
  BufferAccess a;
  a.name = view;
  a.dtype = b.dtype();
  a.global = true;
  a.data = view + ".data()";
  for (const Expr& d : b.shape()) {
    a.shape.push_back("int64_t(" + expr(d) + ")");
    a.static_shape.push_back(d.is_const() ? d.int_value() : -1);
  }
  return buffers_.emplace(b.id(), std::move(a)).first->second;
}

void TileCodegen::emit_alloc(const ir::AllocStmt& op) {
  const ir::Buffer& b = op.buffer;
  if (b->layout != "row_major") {
    fail(ErrorKind::kValueError, op.span, "T.alloc",
         "buffer " + b.name() + " has layout '" + b->layout +
             "'; the CPU backend lays tiles out row-major only");
  }
  const char* st = storage_type(b.dtype(), op.span, "T.alloc");
  BufferAccess a;
  a.name = fresh(b.name());
  a.dtype = b.dtype();
  a.data = a.name;
  int64_t elements = 1;
  for (const Expr& d : b.shape()) {
    if (!d.is_const()) {
      fail(ErrorKind::kValueError, op.span, "T.alloc",
           "buffer " + b.name() + " has a dynamic shape " + ir::shape_string(b.shape()) +
               "; tiles have constant shapes");
    }
    a.static_shape.push_back(d.int_value());
    a.shape.push_back(std::to_string(d.int_value()));
    elements *= d.int_value();
  }
  const int64_t bytes = elements * b.dtype().bytes();
  if (bytes <= kMaxStackTileBytes) {
    line("alignas(64) " + std::string(st) + " " + a.name + "[" + std::to_string(elements) +
         "];  // " + ir::scope_name(b.scope()));
  } else {
    line(std::string(st) + "* const " + a.name + " = tilejit_arena.at<" + st + ">(" +
         std::to_string(arena_bytes_) + ");  // " + ir::scope_name(b.scope()) + ", " +
         std::to_string(bytes) + " bytes");
    arena_bytes_ += (bytes + 63) / 64 * 64;
  }
  buffers_[b.id()] = std::move(a);
}

void TileCodegen::emit_for(const ir::ForStmt& op) {
  const std::string v = var_name(op.var);
  const std::string lo = expr(op.min);
  std::string end;
  if (op.min.is_const() && op.extent.is_const()) {
    end = int_literal(op.min.int_value() + op.extent.int_value());
  } else {
    end = fresh(v + "_end");
    line("const int64_t " + end + " = " + lo + " + " + expr(op.extent) + ";");
  }
  switch (op.for_kind) {
    case ir::ForKind::kParallel:
    case ir::ForKind::kVectorized:
      if (!has_loop(op.body)) line("#pragma GCC ivdep");
      break;
    case ir::ForKind::kUnroll:
      if (op.extent.is_const() && op.extent.int_value() <= 64) {
        line("#pragma GCC unroll " + std::to_string(std::max<int64_t>(op.extent.int_value(), 1)));
      }
      break;
    case ir::ForKind::kPipelined:
      line("// T.Pipelined(num_stages=" + std::to_string(op.stages) + "): a plain loop on the CPU");
      break;
    case ir::ForKind::kSerial: break;
  }
  line("for (int64_t " + v + " = " + lo + "; " + v + " < " + end + "; ++" + v + ") {");
  indent();
  emit_stmt(op.body);
  dedent();
  line("}");
}

void TileCodegen::emit_stmt(const ir::Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case ir::StmtKind::kKernel:
      fail(ErrorKind::kValueError, s.span(), "T.Kernel",
           "a kernel inside a kernel; the CPU backend runs one T.Kernel per function");
    case ir::StmtKind::kAlloc: emit_alloc(*s.as<ir::AllocStmt>()); return;
    case ir::StmtKind::kSeq:
      for (const ir::Stmt& x : s.as<ir::SeqStmt>()->stmts) emit_stmt(x);
      return;
    case ir::StmtKind::kFor: emit_for(*s.as<ir::ForStmt>()); return;
    case ir::StmtKind::kIf: {
      const auto* op = s.as<ir::IfStmt>();
      line("if (" + expr(op->cond) + ") {");
      indent();
      emit_stmt(op->then_case);
      dedent();
      if (op->else_case.defined()) {
        line("} else {");
        indent();
        emit_stmt(op->else_case);
        dedent();
      }
      line("}");
      return;
    }
    case ir::StmtKind::kWhile: {
      const auto* op = s.as<ir::WhileStmt>();
      line("while (" + expr(op->cond) + ") {");
      indent();
      emit_stmt(op->body);
      dedent();
      line("}");
      return;
    }
    case ir::StmtKind::kBreak: line("break;"); return;
    case ir::StmtKind::kContinue: line("continue;"); return;
    case ir::StmtKind::kStore: {
      const auto* op = s.as<ir::StoreStmt>();
      const BufferAccess& b = access(op->buffer, s.span(), "store");
      const char* st = storage_type(b.dtype, s.span(), "store");
      ExprEmitter emitter(*this, vars_);
      line(emitter.element(b, op->indices) + " = tilejit::cpu::convert<" + st + ">(" +
           expr(op->value) + ");");
      return;
    }
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
    case ir::StmtKind::kCopy: lower_copy(*this, *s.as<ir::CopyOp>()); return;
    case ir::StmtKind::kGemm: lower_gemm(*this, *s.as<ir::GemmOp>()); return;
    case ir::StmtKind::kFill: lower_fill(*this, *s.as<ir::FillOp>()); return;
    case ir::StmtKind::kReduce: lower_reduce(*this, *s.as<ir::ReduceOp>()); return;
    case ir::StmtKind::kAtomicAdd: lower_atomic_add(*this, *s.as<ir::AtomicAddOp>()); return;
    case ir::StmtKind::kPrint: lower_print(*this, *s.as<ir::PrintOp>()); return;
  }
  ir::unhandled_stmt("CPU tile codegen", s);
}

namespace {

// The entry `entry` that runs the blocks of `kernel`.
void emit_kernel_entry(std::ostream& os, const ir::PrimFunc& f,
                       const std::vector<std::string>& symbols, const ir::KernelStmt& kernel,
                       const std::string& entry) {
  // The body first: it decides the arena's size and the names.
  std::ostringstream body;
  TileCodegen cg(f, symbols, body);
  static const char* const kBlock[] = {"tilejit_x", "tilejit_y", "tilejit_z"};
  std::vector<std::string> block_decls;
  for (size_t d = 0; d < kernel.block_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.block_vars[d].var_name());
    cg.bind_var(kernel.block_vars[d], name);
    block_decls.push_back("[[maybe_unused]] const int64_t " + name + " = " + kBlock[d] + ";");
    cg.block_names.push_back(name);
  }
  for (const Expr& tv : kernel.thread_vars) {
    const std::string name = cg.fresh(tv.var_name());
    cg.bind_var(tv, name);
    // One thread per block (Note [CPU lowering of tile IR]).
    block_decls.push_back("[[maybe_unused]] const int64_t " + name + " = 0;");
  }
  cg.indent();
  cg.emit_stmt(kernel.body);

  emit_entry_signature(os, f, entry.c_str());
  backend::emit_arguments(os, f, symbols, kCpuEntry);
  if (cg.arena_bytes() > 0) {
    // Note [Exceptions from a body]: a failed allocation is the first block's.
    os << "  // The tiles above " << kMaxStackTileBytes << " bytes, for every block of this call.\n"
       << "  tilejit::cpu::Arena tilejit_arena;\n"
       << "  try {\n"
       << "    tilejit_arena.allocate(" << cg.arena_bytes() << ");\n"
       << "  } catch (...) {\n"
       << "    tilejit_report_fault(tilejit_fault, tilejit_fault_context);\n"
       << "    return tilejit_begin;\n"
       << "  }\n";
  }
  os << "  const int64_t tilejit_gx = tilejit_grid[0], tilejit_gy = tilejit_grid[1];\n"
        "  int64_t tilejit_x = tilejit_begin % tilejit_gx;\n"
        "  int64_t tilejit_y = tilejit_begin / tilejit_gx % tilejit_gy;\n"
        "  int64_t tilejit_z = tilejit_begin / tilejit_gx / tilejit_gy;\n"
        "  for (int64_t tilejit_b = tilejit_begin; tilejit_b < tilejit_end; ++tilejit_b) {\n";
  for (const std::string& d : block_decls) os << "    " << d << "\n";
  os << "    try {\n" << body.str()
     << "    } catch (...) {\n"
        "      tilejit_report_fault(tilejit_fault, tilejit_fault_context);\n"
        "      return tilejit_b;\n"
        "    }\n";
  os << "    if (++tilejit_x == tilejit_gx) {\n"
        "      tilejit_x = 0;\n"
        "      if (++tilejit_y == tilejit_gy) {\n"
        "        tilejit_y = 0;\n"
        "        ++tilejit_z;\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "  return -1;\n"
        "}\n";
}


}  // namespace

runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  // The target-neutral passes, then the CPU's layouts.
  ir::PrimFunc f = transform::verify(*request.func);
  f = transform::predicate(f);
  f = transform::select_layouts(f, transform::LayoutTarget::kCpu);
  const ir::TileBody& tile = *f.tile();
  const std::vector<const ir::KernelStmt*> kernels = tile.kernels();
  TILEJIT_ICHECK(!kernels.empty()) << f.name << ": a tile body without a kernel";
  if (tile.globals.size() != tile.global_params.size()) {
    throw Error(ErrorKind::kValueError,
                ir::diagnostic_prefix(tile.globals[0]->span, f.name, "T.alloc_global") +
                    "buffer " + tile.globals[0].name() +
                    " has no workspace: run transform::plan_workspaces first (jit() does)");
  }
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());

  // One entry per T.Kernel, run in order (Note [Kernel ABI]): tilejit_entry,
  // tilejit_entry_1, ...
  std::ostringstream os;
  emit_entry_head(os, f, " (tile IR)");
  os << "#include \"tilejit/cpu/tile_ops.h\"\n\n";
  std::vector<runtime::AbiLaunch> launches;
  for (size_t i = 0; i < kernels.size(); ++i) {
    runtime::AbiLaunch& l = launches.emplace_back();
    l.entry = i == 0 ? std::string(kEntryName) : std::string(kEntryName) + "_" + std::to_string(i);
    for (size_t d = 0; d < kernels[i]->threads.size() && d < 3; ++d) {
      l.threads[d] = kernels[i]->threads[d];
    }
    if (i > 0) os << "\n";
    emit_kernel_entry(os, f, symbols, *kernels[i], l.entry);
  }
  return {os.str(), backend::slot_abi(request, std::move(launches))};
}

}  // namespace tilejit::cpu

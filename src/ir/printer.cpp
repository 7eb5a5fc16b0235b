#include "tilejit/ir/printer.h"

#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "tilejit/core/error.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {
namespace {

// Binding strength, loosest first. A child is parenthesised when it binds
// more loosely than its parent, or, as a right operand, equally loosely
// (every infix operator here associates to the left, so "a - (b + c)" and
// "a * (b // c)" need them). Constants (negative ones included), symbols and
// calls are atoms: "-3" reads as one token in the languages a reader has in
// mind. Bitwise operators bind as in both C and Python, | ^ & and shifts in
// that order, looser than + and tighter than &&; C and Python disagree on
// them next to a comparison, so a comparison's bitwise operand, and a
// bitwise operator's comparison operand, are always parenthesised:
// "(x & 1) == 0".
enum Prec : int {
  kOr = 1, kAnd, kCompare, kBitOr, kBitXor, kBitAnd, kShift, kAdditive, kMultiplicative,
  kUnary, kAtom
};

int precedence(const Expr& e) {
  if (!e.defined()) return kAtom;
  switch (e.kind()) {
    case ExprKind::kOr: return kOr;
    case ExprKind::kAnd: return kAnd;
    case ExprKind::kAdd:
    case ExprKind::kSub: return kAdditive;
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: return kMultiplicative;
    case ExprKind::kNot:
    case ExprKind::kBitNot: return kUnary;
    case ExprKind::kBitOr: return kBitOr;
    case ExprKind::kBitXor: return kBitXor;
    case ExprKind::kBitAnd: return kBitAnd;
    case ExprKind::kShiftLeft:
    case ExprKind::kShiftRight: return kShift;
    default: return is_compare_kind(e.kind()) ? kCompare : kAtom;
  }
}

bool is_call_kind(ExprKind k) {
  return k == ExprKind::kCeilDiv || k == ExprKind::kMin || k == ExprKind::kMax;
}

// The shortest text that reads back as `v`, always with a '.' or an exponent
// so that it reads as a float.
std::string float_text(double v) {
  if (v != v) return "nan";
  if (v == std::numeric_limits<double>::infinity()) return "inf";
  if (v == -std::numeric_limits<double>::infinity()) return "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// The end of [min, min + extent) as an author writes it: the extent itself
// from 0, else min + extent unsimplified ("k * 32 + 32").
Expr end_of(const Expr& min, const Expr& extent) {
  if (min.is_const() && min.int_value() == 0) return extent;
  return min + extent;
}

// Prints expressions, regions and statements, giving distinct IR variables
// and buffers of one name distinct display names (Note [Variables]).
class Printer : public ExprFunctor<void>, public StmtFunctor<void> {
 public:
  explicit Printer(std::string* out) : out_(*out) {}

  void expr(const Expr& e) {
    if (!e.defined()) {
      out_ += "<undefined>";
      return;
    }
    visit_expr(e);
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) {
      line_start();
      out_ += "<undefined>\n";
      return;
    }
    visit_stmt(s);
  }

  void region(const Region& r) {
    out_ += buffer_name(r.buffer);
    if (r.ranges.empty()) return;
    out_ += '[';
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (i) out_ += ", ";
      const Range& range = r.ranges[i];
      expr(range.min);
      if (range.extent.defined()) {
        out_ += ':';
        // min + extent as written (constants fold): "k * 32:k * 32 + 32".
        if (range.min.defined()) expr(end_of(range.min, range.extent));
      }
    }
    out_ += ']';
  }

  void shape(const std::vector<Expr>& dims) {
    out_ += '[';
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i) out_ += ", ";
      expr(dims[i]);
    }
    out_ += ']';
  }

  std::string buffer_name(const Buffer& b) {
    if (!b.defined()) return "<undefined>";
    return unique_name(buffer_names_, b.id(), b.name());
  }

  void reserve(const std::string& name) { used_.insert(name); }
  int indent = 0;

 private:
  std::string unique_name(std::map<uint64_t, std::string>& names, uint64_t id,
                          const std::string& name) {
    auto it = names.find(id);
    if (it != names.end()) return it->second;
    std::string shown = name;
    for (int n = 1; used_.count(shown); ++n) shown = name + "_" + std::to_string(n);
    used_.insert(shown);
    names.emplace(id, shown);
    return shown;
  }

  void operand(const Expr& e, bool paren) {
    if (paren) out_ += '(';
    expr(e);
    if (paren) out_ += ')';
  }

  void call(const char* name, const std::vector<const Expr*>& args) {
    out_ += name;
    out_ += '(';
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) out_ += ", ";
      expr(*args[i]);
    }
    out_ += ')';
  }

  void visit_int_imm(const IntImmNode* op, const Expr&) override {
    if (op->dtype == DataType::boolean()) {
      out_ += op->value ? "true" : "false";
    } else {
      out_ += std::to_string(op->value);
    }
  }
  void visit_float_imm(const FloatImmNode* op, const Expr&) override {
    if (op->dtype == DataType::float32()) {
      out_ += float_text(op->value);
      return;
    }
    out_ += op->dtype.name();
    out_ += '(';
    out_ += float_text(op->value);
    out_ += ')';
  }
  void visit_var(const VarNode* op, const Expr&) override {
    if (op->id == 0) {
      used_.insert(op->name);
      out_ += op->name;
      return;
    }
    out_ += unique_name(var_names_, op->id, op->name);
  }
  void visit_binary(const BinaryNode* op, const Expr& e) override {
    if (is_call_kind(op->kind)) {
      call(binary_op_name(op->kind), {&op->a, &op->b});
      return;
    }
    const int p = precedence(e);
    // The pairs C and Python read differently (see Prec).
    auto ambiguous = [p](int q) {
      return (p == kCompare && q >= kBitOr && q <= kShift) ||
             (q == kCompare && p >= kBitOr && p <= kShift);
    };
    const int pa = precedence(op->a), pb = precedence(op->b);
    operand(op->a, pa < p || ambiguous(pa));
    out_ += ' ';
    out_ += binary_op_name(op->kind);
    out_ += ' ';
    operand(op->b, pb <= p || ambiguous(pb));
  }
  void visit_not(const NotNode* op, const Expr&) override {
    out_ += '!';
    operand(op->a, precedence(op->a) < kUnary);
  }
  void visit_bit_not(const BitNotNode* op, const Expr&) override {
    out_ += '~';
    operand(op->a, precedence(op->a) < kUnary);
  }
  void visit_select(const SelectNode* op, const Expr&) override {
    call("select", {&op->cond, &op->true_value, &op->false_value});
  }
  void visit_cast(const CastNode* op, const Expr&) override {
    call(op->dtype.name().c_str(), {&op->value});
  }
  void visit_call(const CallNode* op, const Expr&) override {
    std::vector<const Expr*> args;
    for (const Expr& a : op->args) args.push_back(&a);
    call(intrinsic_name(op->op), args);
  }
  void visit_load(const LoadNode* op, const Expr&) override {
    out_ += buffer_name(op->buffer);
    out_ += '[';
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) out_ += ", ";
      expr(op->indices[i]);
    }
    out_ += ']';
  }

  // --- statements
  void line_start() { out_.append(size_t(indent) * 2, ' '); }
  void body(const Stmt& s) {
    ++indent;
    stmt(s);
    --indent;
  }
  void vars(const std::vector<Expr>& vs) {
    for (size_t i = 0; i < vs.size(); ++i) {
      if (i) out_ += ", ";
      expr(vs[i]);
    }
  }

  void visit_kernel(const KernelStmt* op, const Stmt&) override {
    line_start();
    out_ += "kernel(";
    vars(op->block_vars);
    out_ += " in ";
    shape(op->grid);
    out_ += ", threads ";
    vars(op->thread_vars);
    out_ += " in [";
    for (size_t i = 0; i < op->threads.size(); ++i) {
      if (i) out_ += ", ";
      out_ += std::to_string(op->threads[i]);
    }
    out_ += "]";
    if (op->raster.enabled()) {
      out_ += ", swizzle(panel_size=" + std::to_string(op->raster.panel_size) + ", order=\"" +
              raster_order_name(op->raster.order) + "\")";
    }
    out_ += "):\n";
    body(op->body);
  }
  void visit_alloc(const AllocStmt* op, const Stmt&) override {
    line_start();
    out_ += "alloc ";
    out_ += buffer_name(op->buffer);
    out_ += ": ";
    out_ += scope_name(op->buffer.scope());
    out_ += ' ';
    out_ += op->buffer.dtype().name();
    shape(op->buffer.shape());
    if (op->buffer->layout.defined()) out_ += " layout " + op->buffer->layout.to_string();
    out_ += '\n';
  }
  void visit_seq(const SeqStmt* op, const Stmt&) override {
    if (op->stmts.empty()) {
      line_start();
      out_ += "pass\n";
    }
    for (const Stmt& s : op->stmts) stmt(s);
  }
  void visit_for(const ForStmt* op, const Stmt&) override {
    line_start();
    out_ += "for ";
    expr(op->var);
    out_ += " in ";
    out_ += for_kind_name(op->for_kind);
    out_ += '(';
    expr(op->min);
    out_ += ", ";
    expr(end_of(op->min, op->extent));
    if (op->for_kind == ForKind::kPipelined) out_ += ", stages=" + std::to_string(op->stages);
    if (!op->schedule.empty()) {
      auto list = [](const std::vector<int>& v) {
        std::string t = "[";
        for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
        return t + "]";
      };
      out_ += ", order=" + list(op->schedule.order) + ", stage=" + list(op->schedule.stage) +
              ", group=[";
      for (size_t g = 0; g < op->schedule.group.size(); ++g) {
        out_ += (g ? ", " : "") + list(op->schedule.group[g]);
      }
      out_ += "]";
    }
    out_ += "):\n";
    body(op->body);
  }
  void visit_if(const IfStmt* op, const Stmt&) override {
    line_start();
    out_ += "if ";
    expr(op->cond);
    out_ += ":\n";
    body(op->then_case);
    if (op->else_case.defined()) {
      line_start();
      out_ += "else:\n";
      body(op->else_case);
    }
  }
  void visit_while(const WhileStmt* op, const Stmt&) override {
    line_start();
    out_ += "while ";
    expr(op->cond);
    out_ += ":\n";
    body(op->body);
  }
  void visit_break(const BreakStmt*, const Stmt&) override {
    line_start();
    out_ += "break\n";
  }
  void visit_continue(const ContinueStmt*, const Stmt&) override {
    line_start();
    out_ += "continue\n";
  }
  void visit_sync(const SyncStmt*, const Stmt&) override {
    line_start();
    out_ += "T.sync_threads()\n";
  }
  void visit_store(const StoreStmt* op, const Stmt&) override {
    line_start();
    out_ += buffer_name(op->buffer);
    out_ += '[';
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) out_ += ", ";
      expr(op->indices[i]);
    }
    out_ += "] = ";
    expr(op->value);
    out_ += '\n';
  }
  void visit_let(const LetStmt* op, const Stmt&) override {
    line_start();
    out_ += "let ";
    expr(op->var);
    out_ += " = ";
    expr(op->value);
    out_ += '\n';
  }
  void visit_evaluate(const EvaluateStmt* op, const Stmt&) override {
    line_start();
    out_ += "evaluate(";
    expr(op->value);
    out_ += ")\n";
  }
  void op_start(const char* name) {
    line_start();
    out_ += name;
    out_ += '(';
  }
  void flag(const char* name, bool value) {
    out_ += ", ";
    out_ += name;
    out_ += value ? "=true" : "=false";
  }
  void visit_copy(const CopyOp* op, const Stmt&) override {
    op_start("copy");
    region(op->src);
    out_ += ", ";
    region(op->dst);
    if (op->disable_tma) flag("disable_tma", true);
    out_ += ")\n";
  }
  void visit_gemm(const GemmOp* op, const Stmt&) override {
    op_start("gemm");
    region(op->a);
    out_ += ", ";
    region(op->b);
    out_ += ", ";
    region(op->c);
    if (op->trans_a) flag("trans_a", true);
    if (op->trans_b) flag("trans_b", true);
    if (op->clear_accum) flag("clear_accum", true);
    if (op->policy != 0) out_ += ", policy=" + std::to_string(op->policy);
    out_ += ")\n";
  }
  void visit_fill(const FillOp* op, const Stmt&) override {
    op_start("fill");
    region(op->dst);
    out_ += ", ";
    expr(op->value);
    out_ += ")\n";
  }
  void visit_reduce(const ReduceOp* op, const Stmt&) override {
    line_start();
    out_ += "reduce_";
    out_ += reduce_kind_name(op->reduce_kind);
    out_ += '(';
    region(op->src);
    out_ += ", ";
    region(op->dst);
    out_ += ", dim=" + std::to_string(op->dim);
    flag("clear", op->clear);
    out_ += ")\n";
  }
  void visit_atomic_add(const AtomicAddOp* op, const Stmt&) override {
    op_start("atomic_add");
    region(op->dst);
    out_ += ", ";
    if (op->src.buffer.defined()) {
      region(op->src);
    } else {
      expr(op->value);
    }
    out_ += ")\n";
  }
  void visit_print(const PrintOp* op, const Stmt&) override {
    op_start("print");
    if (op->region.buffer.defined()) {
      region(op->region);
    } else {
      expr(op->value);
    }
    if (!op->message.empty()) {
      out_ += ", \"";
      out_ += op->message;
      out_ += '"';
    }
    out_ += ")\n";
  }

  std::string& out_;
  std::set<std::string> used_;
  std::map<uint64_t, std::string> var_names_;
  std::map<uint64_t, std::string> buffer_names_;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::string out;
  Printer(&out).expr(e);
  return out;
}

std::string to_string(const Region& r) {
  std::string out;
  Printer(&out).region(r);
  return out;
}

std::string shape_string(const std::vector<Expr>& shape) {
  std::string out;
  Printer(&out).shape(shape);
  return out;
}

std::string to_string(const Stmt& s) {
  std::string out;
  Printer(&out).stmt(s);
  return out;
}

std::string print(const PrimFunc& f) {
  std::string out;
  Printer p(&out);
  out += "func " + f.name + "(";
  const TileBody* tile = f.tile();
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Param& param = f.params[i];
    if (i) out += ", ";
    out += param.name + ": ";
    if (param.is_scalar) {
      p.reserve(param.name);
      out += param.scalar.name();
      continue;
    }
    out += param.tensor.dtype.name();
    p.shape(param.tensor.shape);
    // The parameter's buffer prints by the parameter's name.
    if (tile && i < tile->params.size() && tile->params[i].defined()) {
      p.buffer_name(tile->params[i]);
    }
  }
  out += ")\n";
  if (!tile) {
    for (const auto& [target, source] : f.sources()) {
      size_t lines = 0;
      for (char c : source) lines += c == '\n';
      if (!source.empty() && source.back() != '\n') ++lines;
      out += "source " + target + ": " + std::to_string(lines) + " lines\n";
    }
    return out;
  }
  for (const Buffer& g : tile->globals) {
    out += "global " + p.buffer_name(g) + ": " + g.dtype().name();
    p.shape(g.shape());
    if (g->init == WorkspaceInit::kZero) out += " init=zero";
    if (g->init == WorkspaceInit::kZeroOnce) out += " init=zero_once";
    out += '\n';
  }
  p.stmt(tile->stmt);
  return out;
}

}  // namespace tilejit::ir

#include "tilejit/ir/shape_program.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include "tilejit/core/error.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {
namespace {

using Op = ShapeProgram::Op;
using Instr = ShapeProgram::Instr;

Op op_of(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd: return Op::kAdd;
    case ExprKind::kSub: return Op::kSub;
    case ExprKind::kMul: return Op::kMul;
    case ExprKind::kFloorDiv: return Op::kFloorDiv;
    case ExprKind::kFloorMod: return Op::kFloorMod;
    case ExprKind::kCeilDiv: return Op::kCeilDiv;
    case ExprKind::kMin: return Op::kMin;
    case ExprKind::kMax: return Op::kMax;
    default: break;
  }
  TILEJIT_THROW(kInternalError) << "shape program: kind " << expr_kind_name(kind)
                                << " is not an integer shape operator";
}

// Emits code by value numbering: an operator applied to the same operand
// registers is the same value, so structurally equal subtrees (whose operands
// got the same registers first) share one register. This is common
// subexpression elimination by structural equality without comparing trees.
class Compiler : public ExprFunctor<int32_t> {
 public:
  explicit Compiler(std::span<const std::string> symbols) {
    TILEJIT_CHECK(symbols.size() <= size_t(ShapeProgram::kMaxRegisters), kInternalError)
        << "shape program: " << symbols.size() << " symbols exceed the "
        << ShapeProgram::kMaxRegisters << " registers";
    for (size_t i = 0; i < symbols.size(); ++i) {
      bool inserted = slots_.emplace(symbols[i], int32_t(i)).second;
      TILEJIT_CHECK(inserted, kInternalError)
          << "shape program: symbol '" << symbols[i] << "' is given twice";
    }
    next_register_ = int32_t(symbols.size());
  }

  int32_t emit(const Expr& e) { return visit_expr(e); }

  std::vector<Instr> code;
  int32_t num_registers() const { return next_register_; }

 private:
  const char* walk_name() const override { return "shape program"; }

  int32_t visit_var(const VarNode* op, const Expr&) override {
    auto it = slots_.find(op->name);
    TILEJIT_CHECK(it != slots_.end(), kInternalError)
        << "shape program: symbol '" << op->name << "' is not among its symbols";
    return it->second;
  }

  int32_t visit_int_imm(const IntImmNode* op, const Expr&) override {
    auto [it, inserted] = constants_.emplace(op->value, 0);
    if (inserted) it->second = push(Op::kConst, 0, 0, op->value);
    return it->second;
  }

  int32_t visit_binary(const BinaryNode* node, const Expr&) override {
    Op op = op_of(node->kind);
    int32_t a = emit(node->a);
    int32_t b = emit(node->b);
    auto [it, inserted] = values_.emplace(std::make_tuple(op, a, b), 0);
    if (inserted) it->second = push(op, a, b, 0);
    return it->second;
  }

  int32_t push(Op op, int32_t a, int32_t b, int64_t imm) {
    TILEJIT_CHECK(next_register_ < ShapeProgram::kMaxRegisters, kInternalError)
        << "shape program: more than " << ShapeProgram::kMaxRegisters << " registers needed";
    int32_t dst = next_register_++;
    code.push_back(Instr{op, dst, a, b, imm});
    return dst;
  }

  int32_t next_register_ = 0;
  std::unordered_map<std::string, int32_t> slots_;
  std::map<int64_t, int32_t> constants_;
  std::map<std::tuple<Op, int32_t, int32_t>, int32_t> values_;
};

}  // namespace

ShapeProgram ShapeProgram::compile(std::span<const Expr> exprs,
                                   std::span<const std::string> symbols) {
  Compiler compiler(symbols);
  ShapeProgram program;
  program.num_symbols_ = int(symbols.size());
  program.result_regs_.reserve(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) {
    TILEJIT_CHECK(exprs[i].defined(), kInternalError)
        << "shape program: expression #" << i << " is undefined";
    program.result_regs_.push_back(compiler.emit(simplify(exprs[i])));
  }
  program.code_ = std::move(compiler.code);
  program.num_registers_ = compiler.num_registers();
  return program;
}

unsigned ShapeProgram::run(const int64_t* symbols, int64_t* results) const noexcept {
  // Uninitialised on purpose: every register is written (a symbol slot or an
  // instruction's dst) before any instruction reads it.
  int64_t regs[kMaxRegisters];
  for (int i = 0; i < num_symbols_; ++i) regs[i] = symbols[i];
  // Note [Integer semantics] in expr.cpp: checked arithmetic, its failures
  // ORed into two flags and tested once by the caller, so that the cost of
  // never wrapping is one flag update per operation and no branch.
  bool divided_by_zero = false;
  bool overflowed = false;
  for (const Instr& in : code_) {
    if (in.op == Op::kConst) {
      regs[in.dst] = in.imm;
      continue;
    }
    int64_t a = regs[in.a];
    int64_t b = regs[in.b];
    int64_t v = 0;
    switch (in.op) {
      case Op::kAdd: overflowed |= __builtin_add_overflow(a, b, &v); break;
      case Op::kSub: overflowed |= __builtin_sub_overflow(a, b, &v); break;
      case Op::kMul: overflowed |= __builtin_mul_overflow(a, b, &v); break;
      case Op::kMin: v = a < b ? a : b; break;
      case Op::kMax: v = a < b ? b : a; break;
      case Op::kFloorDiv:
      case Op::kFloorMod:
      case Op::kCeilDiv:
        if (b == 0) {
          divided_by_zero = true;  // v stays 0; the caller reports the failure
        } else if (b == -1) {
          // Answered before the helpers, which cannot represent
          // INT64_MIN // -1: the one quotient that overflows.
          if (in.op != Op::kFloorMod) overflowed |= __builtin_sub_overflow(int64_t{0}, a, &v);
        } else if (in.op == Op::kFloorDiv) {
          v = floordiv_int(a, b);
        } else if (in.op == Op::kFloorMod) {
          v = floormod_int(a, b);
        } else {
          v = ceildiv_int(a, b);
        }
        break;
      case Op::kConst: break;
    }
    regs[in.dst] = v;
  }
  for (size_t i = 0; i < result_regs_.size(); ++i) results[i] = regs[result_regs_[i]];
  return (divided_by_zero ? kDivisionByZero : 0u) | (overflowed ? kOverflow : 0u);
}

}  // namespace tilejit::ir

// Scalar expressions of tile IR as C++ (tile_codegen.h, "Scalars"): the
// expression printer TileCodegen::expr uses, and the literals.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "backend/common/cxx_source.h"
#include "backend/common/tile_codegen.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::backend {
namespace {

using ir::Expr;
using ir::ExprKind;

bool is_half(DataType t) { return t == DataType::float16() || t == DataType::bfloat16(); }

// Scalar expressions as C++ (tile_codegen.h, "Scalars").
class ExprEmitter : public ir::ExprFunctor<std::string> {
 public:
  explicit ExprEmitter(TileCodegen& cg, std::map<uint64_t, std::string>& vars)
      : cg_(cg), vars_(vars) {}

 private:
  const char* walk_name() const override { return "tile codegen"; }

  std::string visit_int_imm(const ir::IntImmNode* op, const Expr&) override {
    if (op->dtype == DataType::boolean()) return op->value ? "true" : "false";
    // Note [Unsigned constants] (ir/expr.cpp): the value's bits, typed.
    if (op->dtype == DataType::uint64()) return std::to_string(uint64_t(op->value)) + "ULL";
    if (op->dtype == DataType::uint32()) return std::to_string(uint64_t(op->value)) + "u";
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
  // An operand converted to the unsigned type `t` its operation computes in
  // (Note [Unsigned arithmetic] in tile_codegen.h): C would otherwise
  // compute a uint32 product in int64 and never wrap it, or compare a
  // negative int8 with a uint8 as ints.
  std::string unsigned_operand(const Expr& x, DataType t) {
    const std::string v = visit_expr(x);
    if (t.bits >= 32) return std::string(TileCodegen::compute_type(t)) + "(" + v + ")";
    if (x.dtype() == t) return v;
    return "int64_t(" + std::string(element_type(t)) + "(" + v + "))";
  }
  std::string visit_binary(const ir::BinaryNode* op, const Expr& e) override {
    const DataType operand_type = ir::promote(op->a.dtype(), op->b.dtype());
    const bool is_unsigned = operand_type.is_uint();
    const std::string a = is_unsigned ? unsigned_operand(op->a, operand_type) : visit_expr(op->a);
    const std::string b = is_unsigned ? unsigned_operand(op->b, operand_type) : visit_expr(op->b);
    const bool is_float = op->a.dtype().is_float() || op->b.dtype().is_float();
    const char* ct = TileCodegen::compute_type(operand_type);
    if (ir::is_bitwise_kind(op->kind)) return bitwise(op->kind, a, b, operand_type);
    if (is_unsigned) {
      // Non-negative operands: floor division is C's; min and max are plain.
      switch (op->kind) {
        case ExprKind::kFloorDiv: return "(" + a + " / " + b + ")";
        case ExprKind::kFloorMod: return "(" + a + " % " + b + ")";
        case ExprKind::kCeilDiv:
          return "(" + a + " / " + b + " + " + ct + "(" + a + " % " + b + " != 0))";
        case ExprKind::kMin: return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
        case ExprKind::kMax: return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
        default: break;
      }
    }
    switch (op->kind) {
      case ExprKind::kAdd: return "(" + a + " + " + b + ")";
      case ExprKind::kSub: return "(" + a + " - " + b + ")";
      case ExprKind::kMul: return "(" + a + " * " + b + ")";
      case ExprKind::kDiv: return "(" + a + " / " + b + ")";
      case ExprKind::kFloorDiv:
        return is_float ? cg_.math("floor", ct, {a + " / " + b})
                        : "tilejit::floordiv(" + a + ", " + b + ")";
      case ExprKind::kFloorMod:
        if (is_float) return "(" + a + " - " + cg_.math("floor", ct, {a + " / " + b}) + " * " + b + ")";
        return "tilejit::floormod(" + a + ", " + b + ")";
      case ExprKind::kCeilDiv:
        return is_float ? cg_.math("ceil", ct, {a + " / " + b})
                        : "tilejit::ceildiv(" + a + ", " + b + ")";
      case ExprKind::kMin: return cg_.math("min", ct, {a, b});
      case ExprKind::kMax: return cg_.math("max", ct, {a, b});
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
  // Note [Bitwise operators] (ir/expr.h) on values held as Note [Unsigned
  // arithmetic] says: a narrow signed value sign-extended, a narrow unsigned
  // one zero-extended in int64, so & | ^ and >> of them are the dtype's
  // (>> arithmetic for signed values, logical for the non-negative
  // unsigned ones). << and ~ would leave bits above a narrow width, so their
  // results are wrapped to it; << shifts the unsigned bits (a negative
  // value's left shift is undefined in C++17).
  static std::string bitwise(ExprKind kind, const std::string& a, const std::string& b,
                             DataType t) {
    switch (kind) {
      case ExprKind::kBitAnd: return "(" + a + " & " + b + ")";
      case ExprKind::kBitOr: return "(" + a + " | " + b + ")";
      case ExprKind::kBitXor: return "(" + a + " ^ " + b + ")";
      case ExprKind::kShiftRight: return "(" + a + " >> " + b + ")";
      default: break;  // kShiftLeft
    }
    if (t == DataType::uint32() || t == DataType::uint64()) return "(" + a + " << " + b + ")";
    const std::string bits = "(uint64_t(" + a + ") << " + b + ")";
    if (t.bits >= 64) return "int64_t" + bits;
    return std::string("int64_t(static_cast<") + element_type(t) + ">" + bits + ")";
  }
  std::string visit_not(const ir::NotNode* op, const Expr&) override {
    return "(!" + visit_expr(op->a) + ")";
  }
  std::string visit_bit_not(const ir::BitNotNode* op, const Expr& e) override {
    const DataType t = e.dtype();
    const std::string a = visit_expr(op->a);
    const char* ct = TileCodegen::compute_type(t);
    if (t == DataType::uint32() || t == DataType::uint64()) {
      return std::string("(~") + ct + "(" + a + "))";
    }
    if (t.is_uint()) {
      return std::string("int64_t(static_cast<") + element_type(t) + ">(~int64_t(" + a + ")))";
    }
    return "(~int64_t(" + a + "))";
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
    const bool held_in_int64 = std::string_view(TileCodegen::compute_type(t)) == "int64_t";
    if (t.is_int() && held_in_int64 && t.bits < 64) {
      // The value of the narrow type, held in the int64 compute type.
      return std::string("int64_t(static_cast<") + element_type(t) + ">(" + v + "))";
    }
    return std::string("static_cast<") + TileCodegen::compute_type(t) + ">(" + v + ")";
  }
  std::string visit_call(const ir::CallNode* op, const Expr& e) override {
    const std::string ct = TileCodegen::compute_type(e.dtype());
    if (ir::is_shuffle(op->op)) {
      std::vector<std::string> args;
      for (const Expr& a : op->args) args.push_back(visit_expr(a));
      return cg_.shuffle(*op, args);
    }
    // |x| of an unsigned x is x (std::abs has no unsigned overload).
    if (op->op == ir::Intrinsic::kAbs && e.dtype().is_uint()) {
      return ct + "(" + visit_expr(op->args[0]) + ")";
    }
    std::vector<std::string> args;
    for (const Expr& a : op->args) args.push_back(ct + "(" + visit_expr(a) + ")");
    auto fn = [&](const char* name) { return cg_.math(name, ct.c_str(), args); };
    switch (op->op) {
      case ir::Intrinsic::kExp: return fn("exp");
      case ir::Intrinsic::kExp2: return fn("exp2");
      case ir::Intrinsic::kLog: return fn("log");
      case ir::Intrinsic::kLog2: return fn("log2");
      case ir::Intrinsic::kSqrt: return fn("sqrt");
      case ir::Intrinsic::kRsqrt: return "(" + ct + "(1) / " + fn("sqrt") + ")";
      case ir::Intrinsic::kTanh: return fn("tanh");
      case ir::Intrinsic::kSigmoid:
        return "(" + ct + "(1) / (" + ct + "(1) + " + cg_.math("exp", ct.c_str(), {"-" + args[0]}) +
               "))";
      case ir::Intrinsic::kAbs: return fn("abs");
      case ir::Intrinsic::kFloor: return fn("floor");
      case ir::Intrinsic::kCeil: return fn("ceil");
      case ir::Intrinsic::kSin: return fn("sin");
      case ir::Intrinsic::kCos: return fn("cos");
      case ir::Intrinsic::kPow: return fn("pow");
      default: break;
    }
    ir::unhandled_expr(walk_name(), e);
  }
  std::string visit_load(const ir::LoadNode* op, const Expr& e) override {
    const BufferAccess& b = cg_.access(op->buffer, {}, "load");
    std::string ref = cg_.element(b, op->indices);
    return is_half(e.dtype()) ? "float(" + ref + ")" : ref;
  }

 private:
  TileCodegen& cg_;
  std::map<uint64_t, std::string>& vars_;
};

}  // namespace

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

std::string TileCodegen::expr(const ir::Expr& e) {
  ExprEmitter emitter(*this, vars_);
  return emitter.visit_expr(e);
}

}  // namespace tilejit::backend

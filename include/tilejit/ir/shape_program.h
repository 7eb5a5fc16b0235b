// ShapeProgram: a list of expressions compiled once into flat register code
// over symbol slots, so that the call path evaluates every shape, grid and
// size without walking trees or allocating.
//
// Invariants: registers are numbered densely; slots [0, num_symbols) hold the
// symbol values as given; each instruction writes one new register; results
// are read from `result_regs_`. A program never needs more than
// kMaxRegisters registers (compile() enforces it).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tilejit/ir/expr.h"

namespace tilejit::ir {

class ShapeProgram {
 public:
  static constexpr int kMaxRegisters = 1024;

  enum class Op : uint8_t { kConst, kAdd, kSub, kMul, kFloorDiv, kFloorMod, kCeilDiv, kMin, kMax };
  struct Instr {
    Op op;
    int32_t dst;
    int32_t a;  // register of the first operand
    int32_t b;  // register of the second operand
    int64_t imm;  // kConst's value
  };

  ShapeProgram() = default;

  /// Compiles `exprs` over the symbols named in `symbols` (slot i holds
  /// symbols[i]). Shared subexpressions (structurally equal) are computed
  /// once. Throws InternalError for a symbol not in `symbols`.
  static ShapeProgram compile(std::span<const Expr> exprs, std::span<const std::string> symbols);

  /// Failures of run(), as bits of its result.
  static constexpr unsigned kDivisionByZero = 1;
  static constexpr unsigned kOverflow = 2;

  /// Evaluates every expression: `symbols` holds num_symbols() values,
  /// `results` receives num_results() values. Returns 0 when every value
  /// was computed exactly, else the OR of kDivisionByZero (a quotient by
  /// zero, taken as 0) and kOverflow (a value that does not fit in int64,
  /// Note [Integer semantics] in expr.cpp; it is left wrapped). The results
  /// are then unreliable, and the caller raises (or re-evaluates to say
  /// which one failed). Allocation-free and thread-safe.
  [[nodiscard]] unsigned run(const int64_t* symbols, int64_t* results) const noexcept;

  int num_symbols() const noexcept { return num_symbols_; }
  int num_results() const noexcept { return int(result_regs_.size()); }
  const std::vector<Instr>& instructions() const noexcept { return code_; }
  /// The register each result is read from, in result order (for code that
  /// runs the program elsewhere: an exported library).
  const std::vector<int32_t>& result_registers() const noexcept { return result_regs_; }
  int num_registers() const noexcept { return num_registers_; }

 private:
  int num_symbols_ = 0;
  int num_registers_ = 0;
  std::vector<Instr> code_;
  std::vector<int32_t> result_regs_;
};

}  // namespace tilejit::ir

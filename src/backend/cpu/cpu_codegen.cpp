// Source generation for the CPU backend: the prelude (cpu_prelude.h), then an
// entry point that gives the body its parameters as typed views, the dynamic
// symbols by name, and the block index, and runs the body once per block.
//
// For kernel `k(A: float32[n, 64], alpha: float32)` with symbol n, a body sees
//
//   const int64_t n;                               // each dynamic symbol
//   tilejit::View<float, -1, 64> A;                // A(i, j), A.shape(0), A.data()
//   const float alpha;                             // each scalar
//   const tilejit::Dim3 grid_dim, block_idx;       // .x .y .z, x fastest
//   const int64_t bx, by, bz;                      // block_idx.x, .y, .z
//
// and runs inside a lambda, so `return;` ends the current block only, as it
// would in a CUDA kernel. All of these are [[maybe_unused]]: a body that
// ignores some of them compiles without warnings.
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend_internal.h"
#include "backend/cpu/cpu_prelude.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::cpu {
namespace {

using ir::Expr;
using ir::ExprKind;

const char* ctype_of(DataType t, const ir::PrimFunc& f, const ir::Param& p) {
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
  TILEJIT_THROW(kTypeError) << f.name << ": parameter '" << p.name << "' has dtype " << t.name()
                            << ", which the CPU backend does not support";
}

// Binding strength of what print_expr() emits, so that parentheses appear
// exactly where the tree needs them.
enum Prec : int { kAdditive = 1, kMultiplicative = 2, kAtom = 3 };

void print_expr(const Expr& e, int min_prec, std::string& out);

void print_call(const char* fn, const Expr& e, std::string& out) {
  out += "tilejit::";
  out += fn;
  out += '(';
  print_expr(e.a(), 0, out);
  out += ", ";
  print_expr(e.b(), 0, out);
  out += ')';
}

void print_binary(const char* op, int prec, const Expr& e, int min_prec, std::string& out) {
  // Left-associative: the right operand needs a tighter binding than the
  // operator, so a - (b + c) keeps its parentheses.
  const bool paren = prec < min_prec;
  if (paren) out += '(';
  print_expr(e.a(), prec, out);
  out += op;
  print_expr(e.b(), prec + 1, out);
  if (paren) out += ')';
}

// C++ over the symbols' names: + - * as operators, the rest as calls into
// the prelude's int64 helpers (floor semantics, as Expr defines them).
void print_expr(const Expr& e, int min_prec, std::string& out) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const int64_t v = e.int_value();
      if (v >= 0) {
        out += std::to_string(v);
      } else if (v == INT64_MIN) {
        out += "(-9223372036854775807 - 1)";  // the literal 9223372036854775808 does not exist
      } else {
        out += "(" + std::to_string(v) + ")";
      }
      return;
    }
    case ExprKind::kVar: out += e.var_name(); return;
    case ExprKind::kAdd: print_binary(" + ", kAdditive, e, min_prec, out); return;
    case ExprKind::kSub: print_binary(" - ", kAdditive, e, min_prec, out); return;
    case ExprKind::kMul: print_binary(" * ", kMultiplicative, e, min_prec, out); return;
    case ExprKind::kFloorDiv: print_call("floordiv", e, out); return;
    case ExprKind::kFloorMod: print_call("floormod", e, out); return;
    case ExprKind::kCeilDiv: print_call("ceildiv", e, out); return;
    case ExprKind::kMin: print_call("min", e, out); return;
    case ExprKind::kMax: print_call("max", e, out); return;
  }
  TILEJIT_THROW(kInternalError) << "cpu codegen: unknown expression kind " << int(e.kind());
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out.empty() ? "none" : out;
}

const std::string& cpu_body(const ir::PrimFunc& f) {
  auto it = f.bodies.find("cpu");
  if (TILEJIT_UNLIKELY(it == f.bodies.end())) {
    std::vector<std::string> given;
    for (const auto& [target, _] : f.bodies) given.push_back(target);
    TILEJIT_THROW(kValueError) << f.name << ": no body for target 'cpu' (bodies given: "
                               << join(given) << ")";
  }
  return it->second;
}

// A dimension printed over a symbol the entry does not declare would fail
// in the C++ compiler with a message about generated code; say it here.
void check_symbols(const ir::PrimFunc& f, const ir::Param& p, const std::set<std::string>& known,
                   const std::vector<std::string>& symbols) {
  std::vector<std::string> used;
  for (const Expr& d : p.tensor.shape) ir::collect_vars(d, &used);
  for (const std::string& s : used) {
    TILEJIT_CHECK(known.count(s) != 0, kValueError)
        << f.name << ": symbol '" << s << "' in the shape of parameter '" << p.name
        << "' is not among the request's symbols (" << join(symbols) << ")";
  }
}

void emit_tensor(const ir::PrimFunc& f, const ir::Param& p, size_t k, std::ostringstream& os) {
  const char* ctype = ctype_of(p.tensor.dtype, f, p);
  std::string dims, dynamic;
  for (const Expr& d : p.tensor.shape) {
    dims += ", ";
    if (d.is_const()) {
      dims += std::to_string(d.int_value());
    } else {
      dims += "-1";
      if (!dynamic.empty()) dynamic += ", ";
      print_expr(d, 0, dynamic);
    }
  }
  os << "  [[maybe_unused]] tilejit::View<" << ctype << dims << "> " << p.name
     << "(static_cast<" << ctype << "*>(tilejit_args[" << k << "]), {" << dynamic << "});\n";
}

}  // namespace

std::string body_file_name(const std::string& kernel_name) { return kernel_name + "_body"; }

std::string generate_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  const ir::PrimFunc& f = *request.func;
  const std::string& body = cpu_body(f);
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());
  const std::set<std::string> known(symbols.begin(), symbols.end());

  std::ostringstream os;
  os << "// Generated by tilejit's CPU backend for kernel '" << f.name << "'.\n";
  os << kPrelude << "\n";
  os << "extern \"C\" int tilejit_abi_version() { return " << kAbiVersion << "; }\n\n";
  os << "extern \"C\" void tilejit_entry([[maybe_unused]] void* const* tilejit_args,\n"
        "                              [[maybe_unused]] const int64_t* tilejit_syms,\n"
        "                              const int64_t* tilejit_grid, int64_t tilejit_begin,\n"
        "                              int64_t tilejit_end) {\n";
  for (size_t i = 0; i < symbols.size(); ++i) {
    os << "  [[maybe_unused]] const int64_t " << symbols[i] << " = tilejit_syms[" << i << "];\n";
  }
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ir::Param& p = f.params[k];
    if (!p.is_scalar) {
      check_symbols(f, p, known, symbols);
      emit_tensor(f, p, k, os);
    } else if (known.count(p.name)) {
      // A scalar that binds a symbol of the same name: the symbol, declared
      // above from the same value, already is that name.
      os << "  // " << p.name << ": the symbol declared above\n";
    } else {
      const char* ctype = ctype_of(p.scalar, f, p);
      os << "  [[maybe_unused]] const " << ctype << " " << p.name << " = *static_cast<const "
         << ctype << "*>(tilejit_args[" << k << "]);\n";
    }
  }
  // Blocks [begin, end) in x-fastest order. The index is divided out once and
  // then stepped, which keeps integer division out of the per-block path.
  os << "  [[maybe_unused]] const tilejit::Dim3 grid_dim{tilejit_grid[0], tilejit_grid[1], "
        "tilejit_grid[2]};\n"
        "  int64_t tilejit_x = tilejit_begin % grid_dim.x;\n"
        "  int64_t tilejit_y = tilejit_begin / grid_dim.x % grid_dim.y;\n"
        "  int64_t tilejit_z = tilejit_begin / grid_dim.x / grid_dim.y;\n"
        "  for (int64_t tilejit_b = tilejit_begin; tilejit_b < tilejit_end; ++tilejit_b) {\n"
        "    [[maybe_unused]] const tilejit::Dim3 block_idx{tilejit_x, tilejit_y, tilejit_z};\n"
        "    [[maybe_unused]] const int64_t bx = tilejit_x, by = tilejit_y, bz = tilejit_z;\n"
        "    // A lambda, so that `return;` in the body ends this block only.\n"
        "    [&]() {\n";
  os << "#line 1 \"" << body_file_name(f.name) << "\"\n";
  os << body;
  if (body.empty() || body.back() != '\n') os << "\n";
  os << "    }();\n"
        "    if (++tilejit_x == grid_dim.x) {\n"
        "      tilejit_x = 0;\n"
        "      if (++tilejit_y == grid_dim.y) {\n"
        "        tilejit_y = 0;\n"
        "        ++tilejit_z;\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n";
  return os.str();
}

}  // namespace tilejit::cpu

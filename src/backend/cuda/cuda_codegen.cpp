// Source generation for the CUDA backend: the prelude (cuda_prelude.h), the
// argument struct (Note [Kernel argument ABI] in cuda_backend_internal.h),
// then one __global__ entry that gives the body its parameters as typed
// views, the dynamic symbols by name, and the block index, exactly as the
// CPU backend's entry does. For kernel `k(A: float32[n, 64], alpha: float32)`
// with symbol n, launched with 128 threads, a body sees
//
//   const int64_t n;                               // each dynamic symbol
//   tilejit::View<float, -1, 64> A;                // A(i, j), A.shape(0), A.data()
//   const float alpha;                             // each scalar
//   const tilejit::Dim3 grid_dim, block_idx;       // .x .y .z (int64), x fastest
//   const int64_t bx, by, bz;                      // block_idx.x, .y, .z
//
// plus CUDA's own threadIdx, blockDim, __shared__, __syncthreads(). The body
// is the kernel's body: `return;` ends the calling thread, which on the CPU
// (one thread per block) is the block.
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_prelude.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::cuda {
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
                            << ", which the CUDA backend does not support";
}

// Binding strength of what print_expr() emits, so that parentheses appear
// exactly where the tree needs them.
enum Prec : int { kAdditive = 1, kMultiplicative = 2 };

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
  // Left-associative: the right operand binds tighter, so a - (b + c) keeps
  // its parentheses.
  const bool paren = prec < min_prec;
  if (paren) out += '(';
  print_expr(e.a(), prec, out);
  out += op;
  print_expr(e.b(), prec + 1, out);
  if (paren) out += ')';
}

// C++ over the symbols' names (all int64_t): + - * as operators, the rest as
// calls of the prelude's helpers with Expr's floor semantics.
void print_expr(const Expr& e, int min_prec, std::string& out) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const int64_t v = e.int_value();
      // Beyond int32, "LL": a constant alone in an expression is then 64-bit
      // too (inside one, the int64_t symbols would widen it anyway).
      const char* suffix = (v > INT32_MAX || v < INT32_MIN) ? "LL" : "";
      if (v >= 0) {
        out += std::to_string(v) + suffix;
      } else if (v == INT64_MIN) {
        out += "(-9223372036854775807LL - 1)";
      } else {
        out += '(';  // appended piecewise: GCC 12 misreports "(" + string (-Wrestrict)
        out += std::to_string(v);
        out += suffix;
        out += ')';
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
  TILEJIT_THROW(kInternalError) << "cuda codegen: unknown expression kind " << int(e.kind());
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out.empty() ? "none" : out;
}

const std::string& cuda_body(const ir::PrimFunc& f) {
  auto it = f.bodies.find("cuda");
  if (TILEJIT_UNLIKELY(it == f.bodies.end())) {
    std::vector<std::string> given;
    for (const auto& [target, _] : f.bodies) given.push_back(target);
    TILEJIT_THROW(kValueError) << f.name << ": no body for target 'cuda' (bodies given: "
                               << join(given) << ")";
  }
  return it->second;
}

// A dimension over a symbol the entry does not declare would fail in NVRTC
// with a message about generated code; say it here.
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
  os << "  [[maybe_unused]] tilejit::View<" << ctype << dims << "> " << p.name << "(static_cast<"
     << ctype << "*>(tilejit_args.ptrs[" << k << "]), {" << dynamic << "});\n";
}

}  // namespace

std::string body_file_name(const std::string& kernel_name) { return kernel_name + "_body"; }

std::string generate_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  const ir::PrimFunc& f = *request.func;
  const std::string& body = cuda_body(f);
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());
  const std::set<std::string> known(symbols.begin(), symbols.end());
  const size_t num_params = f.params.size();
  TILEJIT_CHECK(num_params + symbols.size() <= size_t(kMaxArgSlots), kValueError)
      << f.name << ": " << num_params << " parameters and " << symbols.size()
      << " dynamic symbols exceed the CUDA backend's " << kMaxArgSlots << " argument slots";
  TILEJIT_CHECK(f.launch.threads >= 1 && f.launch.threads <= 1024, kValueError)
      << f.name << ": " << f.launch.threads << " threads per block; CUDA allows 1 to 1024";

  ArgLayout layout;
  layout.num_symbols = int(symbols.size());
  for (const ir::Param& p : f.params) {
    layout.scalar_bytes.push_back(p.is_scalar ? int(p.scalar.bytes()) : 0);
  }

  std::ostringstream os;
  os << "// Generated by tilejit's CUDA backend for kernel '" << f.name << "'.\n";
  os << kAbiMarker << layout.to_string() << "\n";
  os << kPrelude << "\n";
  // Note [Kernel argument ABI].
  os << "namespace tilejit {\nstruct Args {\n";
  if (num_params > 0) os << "  void* ptrs[" << num_params << "];\n";
  if (!symbols.empty()) os << "  int64_t syms[" << symbols.size() << "];\n";
  if (num_params == 0 && symbols.empty()) os << "  int64_t unused;\n";
  os << "};\n}  // namespace tilejit\n\n";

  // __launch_bounds__: the block size is fixed by the PrimFunc, so the
  // compiler may budget registers for exactly that many threads.
  // __grid_constant__: the struct stays in the parameter space even where a
  // scalar's slot has its address taken.
  os << "extern \"C\" __global__ void __launch_bounds__(" << f.launch.threads << ") " << kEntryName
     << "(const __grid_constant__ tilejit::Args tilejit_args) {\n";
  for (size_t i = 0; i < symbols.size(); ++i) {
    os << "  [[maybe_unused]] const int64_t " << symbols[i] << " = tilejit_args.syms[" << i << "];\n";
  }
  for (size_t k = 0; k < num_params; ++k) {
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
      os << "  [[maybe_unused]] const " << ctype << " " << p.name << " = tilejit::scalar_arg<"
         << ctype << ">(tilejit_args.ptrs[" << k << "]);\n";
    }
  }
  os << "  [[maybe_unused]] const tilejit::Dim3 grid_dim{gridDim.x, gridDim.y, gridDim.z};\n"
        "  [[maybe_unused]] const tilejit::Dim3 block_idx{blockIdx.x, blockIdx.y, blockIdx.z};\n"
        "  [[maybe_unused]] const int64_t bx = block_idx.x, by = block_idx.y, bz = block_idx.z;\n";
  os << "#line 1 \"" << body_file_name(f.name) << "\"\n";
  os << body;
  if (body.empty() || body.back() != '\n') os << "\n";
  os << "}\n";
  return os.str();
}

std::string ArgLayout::to_string() const {
  std::string out = std::to_string(kAbiVersion) + " syms=" + std::to_string(num_symbols) + " args=";
  for (size_t i = 0; i < scalar_bytes.size(); ++i) {
    if (i) out += ',';
    if (scalar_bytes[i] == 0) {
      out += 'p';
    } else {
      out += 's';
      out += std::to_string(scalar_bytes[i]);
    }
  }
  return out;
}

bool ArgLayout::parse(const std::string& text, ArgLayout* out) {
  std::istringstream in(text);
  std::string version, syms, args, extra;
  if (!(in >> version >> syms) || version != std::to_string(kAbiVersion)) return false;
  in >> args;  // empty when the kernel has no parameters ("args=")
  if (in >> extra) return false;
  if (syms.rfind("syms=", 0) != 0 || args.rfind("args=", 0) != 0) return false;
  const std::string n = syms.substr(5);
  if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  ArgLayout layout;
  layout.num_symbols = std::stoi(n);
  std::istringstream list(args.substr(5));
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == "p") {
      layout.scalar_bytes.push_back(0);
    } else if (item == "s1" || item == "s2" || item == "s4" || item == "s8") {
      layout.scalar_bytes.push_back(item[1] - '0');
    } else {
      return false;
    }
  }
  if (int(layout.scalar_bytes.size()) + layout.num_symbols > kMaxArgSlots) return false;
  *out = std::move(layout);
  return true;
}

}  // namespace tilejit::cuda

#include "tilejit/ir/prim_func.h"

#include <set>

#include "tilejit/core/error.h"
#include "tilejit/core/tensor.h"

namespace tilejit::ir {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Names a parameter or symbol may not have, by why: the generated wrapper
// declares them, they are C++ keywords, or they are type names a body
// relies on.
const std::set<std::string>& wrapper_names() {
  static const std::set<std::string> names = {"block_idx", "grid_dim", "bx", "by", "bz",
                                              "tilejit", "tilejit_args", "tilejit_syms",
                                              "tilejit_kernel", "threads", "std"};
  return names;
}

const std::set<std::string>& cpp_keywords() {
  // Keywords and alternative tokens.
  static const std::set<std::string> names = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return names;
}

const std::set<std::string>& type_names() {
  // Fixed-width integer types the generated code spells.
  static const std::set<std::string> names = {"int8_t",   "int16_t",  "int32_t",  "int64_t",
                                              "uint8_t",  "uint16_t", "uint32_t", "uint64_t",
                                              "size_t"};
  return names;
}

// Why `name` is reserved ("a C++ keyword"), or null when it is not.
const char* reserved_because(const std::string& name) {
  if (cpp_keywords().count(name)) return "a C++ keyword";
  if (type_names().count(name)) return "a type name the generated code uses";
  if (wrapper_names().count(name) || name.rfind("tilejit_", 0) == 0) {
    return "a name the generated wrapper declares";
  }
  return nullptr;
}

}  // namespace

const SourceBodies& PrimFunc::sources() const noexcept {
  static const SourceBodies kNone;
  const SourceBodies* s = std::get_if<SourceBodies>(&body);
  return s ? *s : kNone;
}

SourceBodies& PrimFunc::mutable_sources() {
  if (!std::holds_alternative<SourceBodies>(body)) body = SourceBodies{};
  return std::get<SourceBodies>(body);
}

int PrimFunc::param_index(const std::string& param_name) const {
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name == param_name) return int(i);
  }
  return -1;
}

PrimFuncBuilder::PrimFuncBuilder(std::string name) { func_.name = std::move(name); }

PrimFuncBuilder& PrimFuncBuilder::tensor(std::string name, std::vector<Expr> shape,
                                         DataType dtype) {
  Param p;
  p.name = std::move(name);
  p.tensor = TensorType{std::move(shape), dtype};
  func_.params.push_back(std::move(p));
  return *this;
}

PrimFuncBuilder& PrimFuncBuilder::scalar(std::string name, DataType dtype) {
  Param p;
  p.name = std::move(name);
  p.is_scalar = true;
  p.scalar = dtype;
  func_.params.push_back(std::move(p));
  return *this;
}

PrimFuncBuilder& PrimFuncBuilder::grid(std::vector<Expr> extents) {
  func_.launch.grid = std::move(extents);
  return *this;
}

PrimFuncBuilder& PrimFuncBuilder::threads(int threads) {
  func_.launch.threads = threads;
  return *this;
}

PrimFuncBuilder& PrimFuncBuilder::dynamic_smem(Expr bytes) {
  func_.launch.dynamic_smem_bytes = std::move(bytes);
  return *this;
}

PrimFuncBuilder& PrimFuncBuilder::body(std::string target, std::string source) {
  func_.mutable_sources()[std::move(target)] = std::move(source);
  return *this;
}

PrimFunc PrimFuncBuilder::build() const {
  validate(func_);
  return func_;
}

void validate(const PrimFunc& f) {
  TILEJIT_CHECK(is_identifier(f.name), kValueError)
      << "prim_func name '" << f.name << "' is not an identifier";
  std::set<std::string> seen;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    TILEJIT_CHECK(is_identifier(p.name), kValueError)
        << f.name << ": parameter #" << i << " name '" << p.name << "' is not an identifier";
    if (const char* why = reserved_because(p.name)) {
      TILEJIT_THROW(kValueError) << f.name << ": parameter #" << i << " name '" << p.name
                                 << "' is reserved (" << why << ")";
    }
    TILEJIT_CHECK(seen.insert(p.name).second, kValueError)
        << f.name << ": parameter #" << i << " '" << p.name << "' duplicates an earlier name";
    if (p.is_scalar) {
      TILEJIT_CHECK(p.scalar == DataType::int32() || p.scalar == DataType::int64() ||
                        p.scalar == DataType::float32(),
                    kTypeError)
          << f.name << ": scalar parameter #" << i << " '" << p.name << "' has dtype "
          << p.scalar.name() << "; scalars are int32, int64 or float32";
      continue;
    }
    TILEJIT_CHECK(is_supported(p.tensor.dtype), kTypeError)
        << f.name << ": parameter #" << i << " '" << p.name << "' has unsupported dtype "
        << p.tensor.dtype.name();
    TILEJIT_CHECK(p.tensor.shape.size() <= size_t(kMaxRank), kValueError)
        << f.name << ": parameter #" << i << " '" << p.name << "' has rank "
        << p.tensor.shape.size() << "; the maximum is " << kMaxRank;
    for (size_t d = 0; d < p.tensor.shape.size(); ++d) {
      const Expr& e = p.tensor.shape[d];
      TILEJIT_CHECK(e.defined(), kValueError)
          << f.name << ": parameter #" << i << " '" << p.name << "' dimension " << d
          << " is undefined";
      TILEJIT_CHECK(e.dtype().is_int(), kTypeError)
          << f.name << ": parameter #" << i << " '" << p.name << "' dimension " << d << " ("
          << to_string(e) << ") has dtype " << e.dtype().name() << "; dimensions are integers";
      TILEJIT_CHECK(!e.is_const() || e.int_value() >= 0, kValueError)
          << f.name << ": parameter #" << i << " '" << p.name << "' dimension " << d
          << " is negative (" << e.int_value() << ")";
    }
  }
  const auto& grid = f.launch.grid;
  TILEJIT_CHECK(!grid.empty() && grid.size() <= 3, kValueError)
      << f.name << ": the grid has " << grid.size() << " extents; expected 1 to 3";
  for (size_t d = 0; d < grid.size(); ++d) {
    TILEJIT_CHECK(grid[d].defined(), kValueError)
        << f.name << ": grid extent " << d << " is undefined";
    TILEJIT_CHECK(grid[d].dtype().is_int(), kTypeError)
        << f.name << ": grid extent " << d << " (" << to_string(grid[d]) << ") has dtype "
        << grid[d].dtype().name() << "; extents are integers";
    TILEJIT_CHECK(!grid[d].is_const() || grid[d].int_value() > 0, kValueError)
        << f.name << ": grid extent " << d << " is " << grid[d].int_value()
        << "; extents must be positive";
  }
  // The upper bound is a target's (Backend::validate(): CUDA's is 1024).
  TILEJIT_CHECK(f.launch.threads > 0, kValueError)
      << f.name << ": threads = " << f.launch.threads << "; expected 1 or more";
  for (const auto& [target, _] : f.sources()) {
    TILEJIT_CHECK(!target.empty(), kValueError) << f.name << ": a body has an empty target name";
  }
  std::vector<std::string> symbols;
  for (const Param& p : f.params) {
    if (!p.is_scalar) {
      for (const Expr& e : p.tensor.shape) collect_vars(e, &symbols);
    }
  }
  for (const Expr& e : grid) collect_vars(e, &symbols);
  for (const std::string& s : symbols) {
    if (const char* why = reserved_because(s)) {
      TILEJIT_THROW(kValueError) << f.name << ": symbol name '" << s << "' is reserved (" << why
                                 << ")";
    }
    int idx = f.param_index(s);
    TILEJIT_CHECK(idx < 0 || f.params[idx].is_scalar, kValueError)
        << f.name << ": symbol '" << s << "' has the name of tensor parameter #" << idx;
    TILEJIT_CHECK(idx < 0 || f.params[idx].scalar.is_int(), kTypeError)
        << f.name << ": symbol '" << s << "' is bound by scalar parameter #" << idx
        << " of dtype " << f.params[idx].scalar.name() << "; it must be int32 or int64";
  }
}

}  // namespace tilejit::ir

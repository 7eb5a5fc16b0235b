#include "backend/common/cxx_source.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "tilejit/core/data_type.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::backend {

const char* element_type(DataType t) noexcept {
  if (t == DataType::float64()) return "double";
  if (t == DataType::float32()) return "float";
  if (t == DataType::float16()) return "tilejit::float16";
  if (t == DataType::bfloat16()) return "tilejit::bfloat16";
  if (t == DataType::int8()) return "int8_t";
  if (t == DataType::int16()) return "int16_t";
  if (t == DataType::int32()) return "int32_t";
  if (t == DataType::int64()) return "int64_t";
  if (t == DataType::uint8()) return "uint8_t";
  if (t == DataType::uint16()) return "uint16_t";
  if (t == DataType::uint32()) return "uint32_t";
  if (t == DataType::uint64()) return "uint64_t";
  if (t == DataType::boolean()) return "bool";
  return nullptr;
}
namespace {

using ir::Expr;
using ir::ExprKind;

// The most of a compiler log an error message carries; template errors can
// run to megabytes, and the first error is what the reader needs.
constexpr size_t kMaxLogChars = 32 * 1024;
// Lines of source shown on each side of the first error.
constexpr int kContextLines = 3;

// Binding strength of what ExprPrinter emits, so that parentheses appear
// exactly where the tree needs them.
enum Prec : int { kAdditive = 1, kMultiplicative = 2 };

// C++ over the symbols' names (all int64_t): + - * as operators, the rest as
// calls of the preludes' helpers with Expr's floor semantics.
class ExprPrinter : public ir::ExprFunctor<void> {
 public:
  ExprPrinter(const CxxEntry& entry, std::string& out) : entry_(entry), out_(out) {}

  void print(const Expr& e, int min_prec) {
    const int saved = min_prec_;
    min_prec_ = min_prec;
    visit_expr(e);
    min_prec_ = saved;
  }

 private:
  const char* walk_name() const override { return entry_.display; }

  void visit_int_imm(const ir::IntImmNode* op, const Expr&) override { print_int(op->value); }
  void visit_var(const ir::VarNode* op, const Expr&) override { out_ += op->name; }
  void visit_binary(const ir::BinaryNode* op, const Expr& e) override {
    switch (op->kind) {
      case ExprKind::kAdd: print_binary(" + ", kAdditive, e, min_prec_); return;
      case ExprKind::kSub: print_binary(" - ", kAdditive, e, min_prec_); return;
      case ExprKind::kMul: print_binary(" * ", kMultiplicative, e, min_prec_); return;
      case ExprKind::kFloorDiv: print_call("floordiv", e); return;
      case ExprKind::kFloorMod: print_call("floormod", e); return;
      case ExprKind::kCeilDiv: print_call("ceildiv", e); return;
      case ExprKind::kMin: print_call("min", e); return;
      case ExprKind::kMax: print_call("max", e); return;
      default: break;
    }
    TILEJIT_THROW(kInternalError) << entry_.target << " codegen: " << ir::expr_kind_name(op->kind)
                                  << " is not a shape operator";
  }

  void print_int(int64_t v) {
    // Beyond int32, "LL": a constant alone in an expression is then 64-bit
    // too (inside one, the int64_t symbols would widen it anyway).
    const char* suffix = (v > INT32_MAX || v < INT32_MIN) ? "LL" : "";
    // Appended piecewise: GCC 12 misreports "(" + string as overlapping
    // (-Wrestrict).
    if (v >= 0) {
      out_ += std::to_string(v);
      out_ += suffix;
    } else if (v == INT64_MIN) {
      out_ += "(-9223372036854775807LL - 1)";  // the literal 9223372036854775808 does not exist
    } else {
      out_ += '(';
      out_ += std::to_string(v);
      out_ += suffix;
      out_ += ')';
    }
  }

  void print_call(const char* fn, const Expr& e) {
    out_ += "tilejit::";
    out_ += fn;
    out_ += '(';
    print(e.a(), 0);
    out_ += ", ";
    print(e.b(), 0);
    out_ += ')';
  }

  void print_binary(const char* op, int prec, const Expr& e, int min_prec) {
    // Left-associative: the right operand needs a tighter binding than the
    // operator, so a - (b + c) keeps its parentheses.
    const bool paren = prec < min_prec;
    if (paren) out_ += '(';
    print(e.a(), prec);
    out_ += op;
    print(e.b(), prec + 1);
    if (paren) out_ += ')';
  }

  const CxxEntry& entry_;
  std::string& out_;
  int min_prec_ = 0;
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out.empty() ? "none" : out;
}

// The C++ type of `t` in the preludes.
const char* cxx_type(DataType t, const ir::PrimFunc& f, const ir::Param& p,
                     const CxxEntry& entry) {
  if (const char* type = element_type(t)) return type;
  TILEJIT_THROW(kTypeError) << f.name << ": parameter '" << p.name << "' has dtype " << t.name()
                            << ", which the " << entry.display << " backend does not support";
}

// A dimension over a symbol the entry does not declare would fail in the
// compiler with a message about generated code; say it here.
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

void emit_view(std::ostream& os, const ir::PrimFunc& f, const ir::Param& p,
               const std::string& slot, const CxxEntry& entry) {
  const char* ctype = cxx_type(p.tensor.dtype, f, p, entry);
  std::string dims, dynamic;
  ExprPrinter printer(entry, dynamic);
  for (const Expr& d : p.tensor.shape) {
    dims += ", ";
    if (d.is_const()) {
      dims += std::to_string(d.int_value());
    } else {
      dims += "-1";
      if (!dynamic.empty()) dynamic += ", ";
      printer.print(d, 0);
    }
  }
  os << "  [[maybe_unused]] tilejit::View<" << ctype << dims << "> " << p.name << "(static_cast<"
     << ctype << "*>(" << slot << "), {" << dynamic << "});\n";
}

// "<array>[<k>]", built piecewise for the reason in ExprPrinter::print_int.
std::string element(const char* array, size_t k) {
  std::string out = array;
  out += '[';
  out += std::to_string(k);
  out += ']';
  return out;
}

// "   L-3 | text" ... ">  L | text" ... for lines around `error_line`, where
// lines[offset + n - 1] is line n of what is shown. Lines past `numbered`
// are the wrapper's, generated after the body: shown without a number.
void append_excerpt(std::ostream& os, const std::vector<std::string>& lines, int offset,
                    int error_line, const std::string& what, int numbered = INT32_MAX) {
  const int count = int(lines.size()) - offset;
  if (error_line < 1 || error_line > count) return;
  const int first = std::max(1, error_line - kContextLines);
  const int last = std::min(count, error_line + kContextLines);
  const int width = int(std::to_string(std::max(1, std::min(last, numbered))).size());
  os << "\nsource around line " << error_line << " of " << what;
  if (error_line > numbered) {
    os << ", in the code generated after the body's " << numbered
       << (numbered == 1 ? " line" : " lines");
  }
  os << ":";
  for (int n = first; n <= last; ++n) {
    const std::string num = n > numbered ? std::string() : std::to_string(n);
    os << "\n" << (n == error_line ? ">  " : "   ") << std::string(width - num.size(), ' ') << num
       << " | " << lines[size_t(offset + n - 1)];
  }
}

std::string line_directive(const std::string& body_name) {
  return "#line 1 \"" + body_name + "\"";
}

// emit_body()'s directive after a body of `body_lines` lines.
std::string end_directive(const std::string& body_name, size_t body_lines) {
  return "#line " + std::to_string(body_lines + 1) + " \"" + body_name + "\"";
}

}  // namespace

const std::string& body_for_target(const ir::PrimFunc& f, const CxxEntry& entry) {
  const ir::SourceBodies& bodies = f.sources();
  auto it = bodies.find(entry.target);
  if (TILEJIT_UNLIKELY(it == bodies.end())) {
    TILEJIT_CHECK(!f.is_tile(), kValueError)
        << f.name << ": the " << entry.display
        << " backend does not compile tile-IR bodies yet";
    std::vector<std::string> given;
    for (const auto& [target, _] : bodies) given.push_back(target);
    TILEJIT_THROW(kValueError) << f.name << ": no body for target '" << entry.target
                               << "' (bodies given: " << join(given) << ")";
  }
  return it->second;
}

void emit_arguments(std::ostream& os, const ir::PrimFunc& f,
                    const std::vector<std::string>& symbols, const CxxEntry& entry) {
  for (size_t i = 0; i < symbols.size(); ++i) {
    os << "  [[maybe_unused]] const int64_t " << symbols[i] << " = " << element(entry.syms, i)
       << ";\n";
  }
  const std::set<std::string> known(symbols.begin(), symbols.end());
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ir::Param& p = f.params[k];
    if (!p.is_scalar) {
      check_symbols(f, p, known, symbols);
      emit_view(os, f, p, element(entry.ptrs, k), entry);
    } else if (known.count(p.name)) {
      // A scalar that binds a symbol of the same name: the symbol, declared
      // above from the same value, already is that name.
      os << "  // " << p.name << ": the symbol declared above\n";
    } else {
      const char* ctype = cxx_type(p.scalar, f, p, entry);
      os << "  [[maybe_unused]] const " << ctype << " " << p.name << " = "
         << entry.read_scalar(ctype, element(entry.ptrs, k)) << ";\n";
    }
  }
}

void emit_body(std::ostream& os, const std::string& body, const std::string& body_name) {
  os << line_directive(body_name) << "\n";
  os << body;
  if (body.empty() || body.back() != '\n') os << "\n";
  const size_t lines = size_t(std::count(body.begin(), body.end(), '\n')) +
                       (body.empty() || body.back() != '\n' ? 1 : 0);
  os << end_directive(body_name, lines) << "\n";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string clip_log(std::string log) {
  if (log.size() > kMaxLogChars) {
    const size_t dropped = log.size() - kMaxLogChars;
    log.resize(kMaxLogChars);
    log += "\n... (" + std::to_string(dropped) + " more bytes of log)";
  }
  while (!log.empty() && log.back() == '\n') log.pop_back();
  return log;
}

void append_source_excerpt(std::ostream& os, const std::string& source, int error_line,
                           bool in_body, const std::string& file_name,
                           const std::string& body_name) {
  std::vector<std::string> lines = split_lines(source);
  if (!in_body) {
    append_excerpt(os, lines, 0, error_line, file_name);
    return;
  }
  // Body line 1 is the line after emit_body()'s directive; the directive
  // after the body says how many lines it has. It is dropped from what is
  // shown: the line after it is numbered on from the body's last line.
  const std::string marker = line_directive(body_name);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != marker) continue;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const size_t body_lines = j - i - 1;
      if (lines[j] == end_directive(body_name, body_lines)) {
        lines.erase(lines.begin() + std::ptrdiff_t(j));
        append_excerpt(os, lines, int(i) + 1, error_line, body_name, int(body_lines));
        return;
      }
    }
    append_excerpt(os, lines, int(i) + 1, error_line, body_name);  // not from emit_body()
    return;
  }
}

bool keep_failed_source() {
  const char* v = std::getenv("TILEJIT_KEEP_FAILED");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

std::string write_kept_source(const std::string& source, const std::string& file_name,
                              const char* target) {
  const char* base = std::getenv("TMPDIR");
  std::string dir = std::string(base && *base ? base : "/tmp") + "/tilejit-" + target + "-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return "";
  const std::string path = dir + "/" + file_name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << source;
  out.close();
  return out.good() ? path : "";
}

}  // namespace tilejit::backend

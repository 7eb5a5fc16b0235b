// The failure messages of a call, out of line and cold, so that the hot path
// in kernel.cpp is a sequence of compares (STYLE.md: "Build the message only
// on failure"). Every message starts with the kernel's name and, where an
// argument is at fault, its position among the inputs and its name.
#include <algorithm>
#include <cstdint>
#include <span>
#include <sstream>

#include "jit/kernel_impl.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/simplify.h"

namespace tilejit {
namespace {

const ir::Param& input_param(const Kernel::Impl& k, int input) {
  return k.func.params[k.plan.inputs[input].param];
}

// "sparse_attention_fwd: argument #2 'Indices': "
std::string arg_prefix(const Kernel::Impl& k, int input) {
  return call_text::input_prefix(k.func, k.plan, size_t(input));
}

std::string expected_shape(const ir::Param& p) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < p.tensor.shape.size(); ++d) os << (d ? ", " : "") << p.tensor.shape[d];
  os << "]";
  return os.str();
}

// "an int32", "a float32".
std::string with_article(const std::string& word) { return call_text::with_article(word); }

// "" for the one launch of most kernels, else "launch #1's " (a tile body
// with several T.Kernels).
std::string launch_name(const Kernel::Impl& k, size_t launch) {
  if (k.plan.launches.size() == 1) return "";
  return "launch #" + std::to_string(launch) + "'s ";
}

std::string describe(const Arg& arg) {
  switch (arg.kind()) {
    case Arg::Kind::kNone: return "None";
    case Arg::Kind::kInt: return "an integer (" + std::to_string(arg.int_value()) + ")";
    case Arg::Kind::kFloat: {
      std::ostringstream os;
      os << "a float (" << arg.float_value() << ")";
      return os.str();
    }
    case Arg::Kind::kTensor:
      if (!arg.tensor().defined()) return "an undefined tensor";
      return with_article(arg.tensor().dtype().name()) + " tensor of shape " +
             arg.tensor().shape_str();
  }
  return "?";
}

// Where a symbol's value came from: "Q.shape[0]" or "scalar #0 'n'".
std::string source_of(const Kernel::Impl& k, const SymbolBinding& b) {
  const ir::Param& p = input_param(k, b.input);
  if (b.dim < 0) return "scalar #" + std::to_string(b.input) + " '" + p.name + "'";
  return p.name + ".shape[" + std::to_string(b.dim) + "]";
}

const SymbolBinding* binding_of(const Kernel::Impl& k, int slot) {
  for (const SymbolBinding& b : k.plan.bindings) {
    if (b.symbol == slot) return &b;
  }
  return nullptr;
}

// "(m = 0 from A.shape[0])" for the symbols in `exprs`, or "" when they have
// none.
std::string symbol_values(const Kernel::Impl& k, std::span<const ir::Expr> exprs,
                          const BoundCall& call) {
  std::vector<std::string> vars;
  for (const ir::Expr& e : exprs) ir::collect_vars(e, &vars);
  std::ostringstream os;
  int shown = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    auto it = std::find(k.plan.symbols.begin(), k.plan.symbols.end(), vars[i]);
    if (it == k.plan.symbols.end()) continue;  // simplified away
    const int slot = int(it - k.plan.symbols.begin());
    os << (shown++ ? ", " : " (") << vars[i] << " = " << call.symbols[slot];
    if (const SymbolBinding* b = binding_of(k, slot)) os << " from " << source_of(k, *b);
  }
  if (shown) os << ")";
  return os.str();
}

std::string symbol_values(const Kernel::Impl& k, const ir::Expr& e, const BoundCall& call) {
  return symbol_values(k, std::span<const ir::Expr>(&e, 1), call);
}

// "[n, 64] = [1024, 64] of float32" for a buffer at the bound shape.
std::string bound_shape(const Kernel::Impl& k, const BufferSpec& b, const BoundCall& call) {
  std::ostringstream os;
  os << expected_shape(k.func.params[b.param]) << " = [";
  for (int d = 0; d < b.rank; ++d) os << (d ? ", " : "") << call.results[b.first_result + d];
  os << "] of " << b.dtype.name();
  return os.str();
}

// A 128-bit integer in decimal (a solution of an affine binding past int64).
std::string int128_str(__int128 v) {
  const bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : v;
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(u % 10)));
    u /= 10;
  } while (u != 0);
  return negative ? "-" + digits : digits;
}

// One result of the shape program, evaluated exactly: the form the program
// runs (simplified), and, when that fails, the declared form `e`, which may
// not have the failing step (Note [Canonical polynomial form] expands
// products). The declared form may name a symbol that simplification
// removed (m * 0); the plan has no value for it, and only the simplified
// form is evaluated then.
ir::EvalStatus evaluate_result(const Kernel::Impl& k, const BoundCall& call, const ir::Expr& e,
                               int64_t* value) {
  const std::vector<std::string>& symbols = k.plan.symbols;
  auto lookup = [&](const std::string& name) {
    auto it = std::find(symbols.begin(), symbols.end(), name);
    TILEJIT_ICHECK(it != symbols.end()) << "symbol '" << name << "' is not in the plan";
    return call.symbols[it - symbols.begin()];
  };
  const ir::EvalStatus simplified = ir::try_evaluate(ir::simplify(e), lookup, value);
  if (simplified == ir::EvalStatus::kOk) return simplified;
  std::vector<std::string> vars;
  ir::collect_vars(e, &vars);
  for (const std::string& v : vars) {
    if (std::find(symbols.begin(), symbols.end(), v) == symbols.end()) return simplified;
  }
  return ir::try_evaluate(e, lookup, value);
}

// "X, Yin, alpha": the inputs' names in call order.
std::string input_list(const Kernel::Impl& k) { return call_text::input_list(k.func, k.plan); }

std::string not_contiguous_text(const Tensor& t) { return call_text::not_contiguous(t); }

}  // namespace

namespace call_errors {

void arity(const Kernel::Impl& k, size_t got, std::span<const int> missing) {
  throw Error(ErrorKind::kTypeError, call_text::arity(k.func, k.plan, got, missing));
}

void out_count(const Kernel::Impl& k, size_t got) {
  throw Error(ErrorKind::kValueError, call_text::out_count(k.plan, got));
}

void unknown_input_name(const Kernel::Impl& k, std::string_view name, std::string_view options) {
  const std::string inputs = input_list(k);
  TILEJIT_THROW(kTypeError) << k.func.name << ": unexpected keyword argument '" << name
                            << "' (inputs: " << (inputs.empty() ? "none" : inputs)
                            << (options.empty() ? "" : "; options: ") << options << ")";
}

void input_given_twice(const Kernel::Impl& k, int input) {
  TILEJIT_THROW(kTypeError) << k.func.name << ": got multiple values for input #" << input
                            << " '" << input_param(k, input).name << "'";
}

void bad_shape_arg(const Kernel::Impl& k, int input, const ShapeArg& a) {
  const std::string shape = shape_str(a.shape());
  if (a.shape().size() > size_t(kMaxRank)) {
    TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "shape " << shape << " has "
                               << a.shape().size() << " dimensions; tilejit supports at most "
                               << kMaxRank;
  }
  const auto& dims = a.shape();
  if (std::any_of(dims.begin(), dims.end(), [](int64_t e) { return e < 0; })) {
    TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "shape " << shape
                               << " has a negative extent";
  }
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "shape " << shape
                             << " has more elements than int64 can count";
}

void not_a_tensor(const Kernel::Impl& k, int input, const Arg& arg) {
  const std::string dtype = input_param(k, input).tensor.dtype.name();
  TILEJIT_THROW(kTypeError) << arg_prefix(k, input) << "expected " << with_article(dtype)
                            << " tensor, got " << describe(arg);
}

void not_a_scalar(const Kernel::Impl& k, int input, const Arg& arg) {
  const ir::Param& p = input_param(k, input);
  TILEJIT_THROW(kTypeError) << arg_prefix(k, input) << "expected " << p.scalar.name()
                            << " scalar, got " << describe(arg);
}

void scalar_value(const Kernel::Impl& k, int input, const Arg& arg) {
  std::ostringstream value;
  if (arg.kind() == Arg::Kind::kFloat) {
    value << arg.float_value();
  } else {
    value << arg.int_value();
  }
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "value " << value.str()
                             << " does not fit in " << input_param(k, input).scalar.name();
}

void dtype(const Kernel::Impl& k, int input, const Tensor& t) {
  TILEJIT_THROW(kTypeError) << arg_prefix(k, input) << "expected "
                            << input_param(k, input).tensor.dtype.name() << ", got "
                            << t.dtype().name();
}

void rank(const Kernel::Impl& k, int input, const Tensor& t) {
  const ir::Param& p = input_param(k, input);
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "expected " << p.tensor.shape.size()
                             << " dimensions " << expected_shape(p) << ", got " << t.ndim()
                             << " " << t.shape_str();
}

void static_dim(const Kernel::Impl& k, int input, int dim, const Tensor& t) {
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "dimension " << dim << " must be "
                             << k.plan.inputs[input].static_dims[dim] << ", got "
                             << t.shape(dim) << " (shape " << t.shape_str() << ")";
}

void device(const Kernel::Impl& k, int input, const Tensor& t, const BoundCall& call,
            int first_tensor_input) {
  if (first_tensor_input < 0) {
    TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "expected a tensor on "
                               << device_type_name(k.backend->device_type()) << " (target '"
                               << k.backend->target() << "'), got one on " << t.device().str();
  }
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << "is on " << t.device().str()
                             << " but argument #" << first_tensor_input << " '"
                             << input_param(k, first_tensor_input).name << "' is on "
                             << call.device.str() << "; all tensors must be on one device";
}

void not_contiguous(const Kernel::Impl& k, int input, const Tensor& t) {
  TILEJIT_THROW(kValueError) << arg_prefix(k, input) << not_contiguous_text(t);
}

void affine(const Kernel::Impl& k, const SymbolBinding& b, int64_t extent) {
  const ir::Param& p = input_param(k, b.input);
  TILEJIT_THROW(kValueError) << arg_prefix(k, b.input) << "dimension " << b.dim << " is "
                             << extent << ", which is not " << p.tensor.shape[b.dim]
                             << " for any integer " << k.plan.symbols[b.symbol];
}

void negative_symbol(const Kernel::Impl& k, const SymbolBinding& b, int64_t value) {
  TILEJIT_THROW(kValueError) << k.func.name << ": symbol '" << k.plan.symbols[b.symbol]
                             << "' = " << value << " from " << source_of(k, b)
                             << " is negative; shapes must be non-negative";
}

void division_by_zero(const Kernel::Impl& k, const BoundCall& call) {
  std::ostringstream os;
  for (size_t s = 0; s < k.plan.symbols.size(); ++s) {
    os << (s ? ", " : "") << k.plan.symbols[s] << " = " << call.symbols[s];
  }
  TILEJIT_THROW(kValueError) << k.func.name << ": division by zero evaluating the shapes ("
                             << os.str() << ")";
}

void mismatch(const Kernel::Impl& k, const DimCheck& c, std::span<const Arg> inputs,
              const BoundCall& call) {
  const ir::Param& p = input_param(k, c.input);
  const ir::Expr& e = p.tensor.shape[c.dim];
  const int64_t got = inputs[c.input].tensor().shape(c.dim);
  if (e.is_var()) {
    int slot = 0;
    while (k.plan.symbols[slot] != e.var_name()) ++slot;
    const SymbolBinding* b = binding_of(k, slot);
    TILEJIT_THROW(kValueError) << k.func.name << ": symbol '" << e.var_name() << "': "
                               << source_of(k, *b) << " = " << call.symbols[slot] << " but "
                               << p.name << ".shape[" << c.dim << "] = " << got;
  }
  TILEJIT_THROW(kValueError) << arg_prefix(k, c.input) << "dimension " << c.dim << " must be "
                             << e << " = " << call.results[c.result]
                             << symbol_values(k, e, call) << ", got " << got;
}

void bad_grid(const Kernel::Impl& k, const BoundCall& call) {
  size_t launch = 0;
  int dim = 0;
  while (call.results[k.plan.launches[launch].results.grid[dim]] > 0) {
    if (++dim == 3) {
      dim = 0;
      ++launch;
      TILEJIT_ICHECK(launch < k.plan.launches.size())
          << k.func.name << ": bad_grid() without a bad grid extent";
    }
  }
  const LaunchSpec& l = k.plan.launches[launch];
  const ir::Expr& e = l.grid[dim];
  TILEJIT_THROW(kValueError) << k.func.name << ": " << launch_name(k, launch) << "grid extent "
                             << dim << " = " << e << " evaluates to "
                             << call.results[l.results.grid[dim]] << symbol_values(k, e, call)
                             << "; every grid extent must be positive";
}

void bad_buffer_dim(const Kernel::Impl& k, const BufferSpec& b, int dim, const BoundCall& call) {
  const ir::Param& p = k.func.params[b.param];
  const ir::Expr& e = p.tensor.shape[dim];
  const char* role = k.plan.roles[b.param] == ParamRole::kOutput ? "output" : "workspace";
  TILEJIT_THROW(kValueError) << k.func.name << ": " << role << " '" << p.name << "' dimension "
                             << dim << " = " << e << " evaluates to "
                             << call.results[b.first_result + dim] << symbol_values(k, e, call)
                             << "; extents must be non-negative";
}

void negative_buffer_dim(const Kernel::Impl& k, const BoundCall& call) {
  for (const auto* list : {&k.plan.outputs, &k.plan.workspaces}) {
    for (const BufferSpec& b : *list) {
      for (int d = 0; d < b.rank; ++d) {
        if (call.results[b.first_result + d] < 0) bad_buffer_dim(k, b, d, call);
      }
    }
  }
  TILEJIT_THROW(kInternalError) << k.func.name << ": a buffer extent was negative, then none was";
}

void bad_out(const Kernel::Impl& k, size_t index, const Tensor& t, const BoundCall& call,
             const std::string& problem) {
  const BufferSpec& b = k.plan.outputs[index];
  const ir::Param& p = k.func.params[b.param];
  std::ostringstream os;
  os << k.func.name << ": out[" << index << "] '" << p.name << "': ";
  if (problem == "dtype") {
    os << "expected " << b.dtype.name() << ", got " << t.dtype().name();
  } else if (problem == "shape") {
    os << "expected shape [";
    for (int d = 0; d < b.rank; ++d) os << (d ? ", " : "") << call.results[b.first_result + d];
    os << "], got " << t.shape_str();
  } else if (problem == "device") {
    os << "expected a tensor on " << call.device.str() << ", got one on " << t.device().str();
  } else {
    os << not_contiguous_text(t);
  }
  throw Error(problem == "dtype" ? ErrorKind::kTypeError : ErrorKind::kValueError, os.str());
}

void bad_workspace(const Kernel::Impl& k, const Tensor& t, size_t needed, const BoundCall& call,
                   const std::string& problem) {
  std::ostringstream os;
  os << k.func.name << ": workspace=: ";
  if (problem == "size") {
    os << "needs " << needed << " bytes, got a tensor of " << t.nbytes() << " bytes";
  } else if (problem == "device") {
    os << "expected a tensor on " << call.device.str() << ", got one on " << t.device().str();
  } else if (problem == "alignment") {
    os << "the data pointer is not 256-byte aligned (address % 256 = "
       << reinterpret_cast<uintptr_t>(t.data()) % 256
       << "); kernel.empty_workspace() with the call's inputs makes an arena of the right size "
          "and alignment";
  } else {
    os << not_contiguous_text(t);
  }
  throw Error(ErrorKind::kValueError, os.str());
}

int64_t solve_wide(const Kernel::Impl& k, const SymbolBinding& b, int64_t extent) {
  const __int128 num = __int128{extent} - b.offset;
  if (num % b.coeff != 0) affine(k, b, extent);
  const __int128 value = num / b.coeff;
  if (value >= INT64_MIN && value <= INT64_MAX) return int64_t(value);
  const ir::Param& p = input_param(k, b.input);
  TILEJIT_THROW(kValueError) << arg_prefix(k, b.input) << "dimension " << b.dim << " is "
                             << extent << ", which is " << p.tensor.shape[b.dim] << " only for "
                             << k.plan.symbols[b.symbol] << " = " << int128_str(value)
                             << ", which overflows int64";
}

void shapes_failed(const Kernel::Impl& k, BoundCall* call) {
  const CallPlan& plan = k.plan;
  const std::string& name = k.func.name;
  // Evaluates result `r` (declared as `e`); throws for a failure, the
  // message of an overflow being `where` followed by the symbol values.
  auto check = [&](int r, const ir::Expr& e, const std::string& where) {
    int64_t value = 0;
    switch (evaluate_result(k, *call, e, &value)) {
      case ir::EvalStatus::kOk: call->results[r] = value; return;
      case ir::EvalStatus::kDivisionByZero: division_by_zero(k, *call);
      case ir::EvalStatus::kOverflow:
        TILEJIT_THROW(kValueError) << where << " = " << e << " overflows int64"
                                   << symbol_values(k, e, *call);
    }
  };
  for (const DimCheck& c : plan.checks) {
    check(c.result, input_param(k, c.input).tensor.shape[c.dim],
          arg_prefix(k, c.input) + "dimension " + std::to_string(c.dim));
  }
  for (const auto* list : {&plan.outputs, &plan.workspaces}) {
    for (const BufferSpec& b : *list) {
      const ir::Param& p = k.func.params[b.param];
      const char* role = list == &plan.outputs ? "output" : "workspace";
      for (int d = 0; d < b.rank; ++d) {
        check(b.first_result + d, p.tensor.shape[d],
              name + ": " + role + " '" + p.name + "' dimension " + std::to_string(d));
      }
    }
  }
  for (size_t l = 0; l < plan.launches.size(); ++l) {
    const LaunchSpec& spec = plan.launches[l];
    const std::string which = name + ": " + launch_name(k, l);
    for (int d = 0; d < 3; ++d) {
      check(spec.results.grid[d], spec.grid[d], which + "grid extent " + std::to_string(d));
    }
    check(spec.results.smem, spec.smem,
          which + (plan.launches.size() == 1 ? "the " : "") + "dynamic shared memory size");
  }
  // Every result is exact now: the program's failure was in a step of its
  // simplified form alone.
}

void large_extents(const Kernel::Impl& k, const BoundCall& call) {
  for (int r = k.plan.first_buffer_result; r < k.plan.first_launch_result; ++r) {
    if (call.results[r] < 0) negative_buffer_dim(k, call);
  }
  for (const BufferSpec& b : k.plan.outputs) {
    int64_t bytes;
    if (!buffer_bytes(b, call.results, &bytes)) output_too_large(k, call);
  }
}

void output_too_large(const Kernel::Impl& k, const BoundCall& call) {
  for (size_t o = 0; o < k.plan.outputs.size(); ++o) {
    const BufferSpec& b = k.plan.outputs[o];
    int64_t bytes;
    if (buffer_bytes(b, call.results, &bytes)) continue;
    const ir::Param& p = k.func.params[b.param];
    TILEJIT_THROW(kValueError) << k.func.name << ": output #" << o << " '" << p.name
                               << "': shape " << bound_shape(k, b, call)
                               << " has more bytes than int64 can count"
                               << symbol_values(k, p.tensor.shape, call);
  }
  TILEJIT_THROW(kInternalError) << k.func.name << ": an output was too large, then none was";
}

void arena_too_large(const Kernel::Impl& k, const BoundCall& call) {
  for (const BufferSpec& b : k.plan.workspaces) {
    int64_t bytes;
    if (buffer_bytes(b, call.results, &bytes)) continue;
    const ir::Param& p = k.func.params[b.param];
    TILEJIT_THROW(kValueError) << k.func.name << ": workspace '" << p.name << "': shape "
                               << bound_shape(k, b, call)
                               << " has more bytes than int64 can count"
                               << symbol_values(k, p.tensor.shape, call);
  }
  // Each fits; their sum, aligned, does not. Name the one that ends past it.
  __int128 end = 0;
  for (const BufferSpec& b : k.plan.workspaces) {
    int64_t bytes;
    buffer_bytes(b, call.results, &bytes);
    const __int128 offset = (end + 255) / 256 * 256;
    end = offset + bytes;
    if (end + 255 <= INT64_MAX) continue;
    const ir::Param& p = k.func.params[b.param];
    TILEJIT_THROW(kValueError) << k.func.name << ": the workspace arena has more bytes than int64 "
                               << "can count: workspace '" << p.name << "' of " << bytes
                               << " bytes (shape " << bound_shape(k, b, call)
                               << ") starts at byte " << int128_str(offset)
                               << symbol_values(k, p.tensor.shape, call);
  }
  TILEJIT_THROW(kInternalError) << k.func.name << ": the workspace arena was too large, then "
                                << "it was not";
}

void allocation(const Kernel::Impl& k, size_t index, const Error& e) {
  const ir::Param& p = k.func.params[k.plan.outputs[index].param];
  throw Error(e.kind(), k.func.name + ": output #" + std::to_string(index) + " '" + p.name +
                            "': " + e.message());
}

}  // namespace call_errors
}  // namespace tilejit

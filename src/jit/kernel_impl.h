// Kernel::Impl and the call path's private pieces, shared by kernel.cpp (the
// hot path and jit()) and call_errors.cpp (the cold failure messages).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/workspace_pool.h"

namespace tilejit {

struct Kernel::Impl {
  ir::PrimFunc func;
  JitOptions options;
  CallPlan plan;
  runtime::Backend* backend = nullptr;
  std::string source;
  /// What the compiled kernel takes; its launches' grids and shared memory
  /// are indices into the plan's results (Note [Kernel ABI]).
  runtime::KernelAbi abi;
  std::vector<runtime::Diagnostic> diagnostics;  // generate()'s
  runtime::LoweringReport report;                 // generate()'s
  Device primary_device;
  std::shared_ptr<runtime::Module> primary_module;
  runtime::WorkspacePool* primary_pool = nullptr;  // the pool of primary_device
  // Modules for devices other than the primary one, loaded on first use.
  mutable std::mutex modules_mutex;
  mutable std::vector<std::pair<Device, std::shared_ptr<runtime::Module>>> other_modules;

  runtime::Module* module_for(Device device) const;
  runtime::WorkspacePool& pool_for(Device device) const;
};

/// Scalar argument storage in the declared dtype (the kernel reads it
/// through a pointer).
union ScalarValue {
  int32_t i32;
  int64_t i64;
  float f32;
};

/// What binding and checking one call produces.
struct BoundCall {
  Device device;
  bool has_device = false;
  int64_t symbols[kMaxSymbols];
  int64_t results[kMaxResults];
  ScalarValue scalars[kMaxParams];
};

/// Checks every input, binds the symbols and evaluates the program;
/// throws the errors of Note [Call plan]. Used by calls and by
/// workspace_bytes().
void bind_inputs(const Kernel::Impl& k, std::span<const Arg> inputs, BoundCall* out);

/// Workspace offsets for a bound call; returns the arena's size in bytes.
size_t layout_workspaces(const Kernel::Impl& k, const BoundCall& call, size_t* offsets,
                         size_t* sizes);

/// The bytes of a buffer at the bound shape; false when they do not fit in
/// int64 (Note [Integer semantics] in expr.cpp). Extents are non-negative.
inline bool buffer_bytes(const BufferSpec& b, const int64_t* results, int64_t* bytes) {
  int64_t n = b.dtype.bytes();
  bool overflowed = false;
  for (int d = 0; d < b.rank; ++d) {
    overflowed |= __builtin_mul_overflow(n, results[b.first_result + d], &n);
  }
  *bytes = n;
  return !overflowed;
}

// The texts behind call_messages.h, over a plan (call_messages.cpp).
namespace call_text {
std::string input_prefix(const ir::PrimFunc& f, const CallPlan& plan, size_t input);
std::string with_article(std::string_view word);
std::string input_list(const ir::PrimFunc& f, const CallPlan& plan);
std::string arity(const ir::PrimFunc& f, const CallPlan& plan, size_t got,
                  std::span<const int> missing);
std::string out_count(const CallPlan& plan, size_t got);
std::string not_contiguous(const Tensor& t);
}  // namespace call_text

// Cold failure paths (call_errors.cpp). Each throws, except where it says.
namespace call_errors {
/// out= with `got` tensors for another number of outputs (ValueError).
[[noreturn]] void out_count(const Kernel::Impl& k, size_t got);
/// `got` arguments for the inputs; when too few, `missing` lists the inputs
/// not given (empty: the last ones, as in a positional call).
[[noreturn]] void arity(const Kernel::Impl& k, size_t got, std::span<const int> missing = {});
[[noreturn]] void unknown_input_name(const Kernel::Impl& k, std::string_view name,
                                    std::string_view options);
[[noreturn]] void input_given_twice(const Kernel::Impl& k, int input);
[[noreturn]] void bad_shape_arg(const Kernel::Impl& k, int input, const ShapeArg& a);
[[noreturn]] void not_a_tensor(const Kernel::Impl& k, int input, const Arg& arg);
[[noreturn]] void not_a_scalar(const Kernel::Impl& k, int input, const Arg& arg);
/// A scalar that does not fit the declared dtype (int32, or float32 for a
/// finite value that rounds to infinity).
[[noreturn]] void scalar_value(const Kernel::Impl& k, int input, const Arg& arg);
[[noreturn]] void dtype(const Kernel::Impl& k, int input, const Tensor& t);
[[noreturn]] void rank(const Kernel::Impl& k, int input, const Tensor& t);
[[noreturn]] void static_dim(const Kernel::Impl& k, int input, int dim, const Tensor& t);
[[noreturn]] void device(const Kernel::Impl& k, int input, const Tensor& t,
                         const BoundCall& call, int first_tensor_input);
[[noreturn]] void not_contiguous(const Kernel::Impl& k, int input, const Tensor& t);
[[noreturn]] void affine(const Kernel::Impl& k, const SymbolBinding& b, int64_t extent);
[[noreturn]] void negative_symbol(const Kernel::Impl& k, const SymbolBinding& b, int64_t value);
[[noreturn]] void division_by_zero(const Kernel::Impl& k, const BoundCall& call);
[[noreturn]] void mismatch(const Kernel::Impl& k, const DimCheck& c, std::span<const Arg> inputs,
                           const BoundCall& call);
/// The first grid extent of any launch that is not positive.
[[noreturn]] void bad_grid(const Kernel::Impl& k, const BoundCall& call);
[[noreturn]] void bad_buffer_dim(const Kernel::Impl& k, const BufferSpec& b, int dim,
                                 const BoundCall& call);
/// The first output or workspace extent that is negative: bad_buffer_dim.
[[noreturn]] void negative_buffer_dim(const Kernel::Impl& k, const BoundCall& call);
/// A binding whose `extent - offset` does not fit in int64 (or whose
/// quotient is INT64_MIN / -1): solves it in 128 bits and returns the
/// symbol's value, or throws when there is none in int64 (the one function
/// here that may return).
int64_t solve_wide(const Kernel::Impl& k, const SymbolBinding& b, int64_t extent);
/// ShapeProgram::run reported a failure: re-evaluates every result exactly,
/// in result order, and throws for the first that divides by zero or
/// overflows int64, naming the shape as declared. When none does (the
/// simplified form overflowed in a step that the declared form does not
/// have), stores the exact values in call->results and returns.
void shapes_failed(const Kernel::Impl& k, BoundCall* call);
/// Some buffer extent is negative or at least plan.small_extents: throws
/// negative_buffer_dim, or output_too_large for an output whose bytes do
/// not fit in int64; returns when neither is the case.
void large_extents(const Kernel::Impl& k, const BoundCall& call);
/// An output whose bytes do not fit in int64: names the first one.
[[noreturn]] void output_too_large(const Kernel::Impl& k, const BoundCall& call);
/// The workspaces' bytes, or the arena holding them, do not fit in int64.
[[noreturn]] void arena_too_large(const Kernel::Impl& k, const BoundCall& call);
/// The TensorAllocator failed for output `index`: the same error, its
/// message prefixed with the kernel and the output.
[[noreturn]] void allocation(const Kernel::Impl& k, size_t index, const Error& e);
[[noreturn]] void bad_out(const Kernel::Impl& k, size_t index, const Tensor& t,
                          const BoundCall& call, const std::string& problem);
[[noreturn]] void bad_workspace(const Kernel::Impl& k, const Tensor& t, size_t needed,
                                const BoundCall& call, const std::string& problem);
}  // namespace call_errors

}  // namespace tilejit

// Kernel: the callable that jit() returns.
//
// A call binds the inputs, checks them, solves the symbols, allocates the
// outputs and one workspace arena, launches, releases the arena
// stream-ordered, and returns the outputs (Note [Call plan] in call_plan.h).
// Kernels are cheap to copy (shared, immutable state) and safe to call from
// many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilejit/core/small_array.h"
#include "tilejit/core/tensor.h"
#include "tilejit/jit/call_plan.h"
#include "tilejit/jit/jit_options.h"
#include "tilejit/runtime/allocator.h"
#include "tilejit/runtime/diagnostic.h"
#include "tilejit/runtime/kernel_abi.h"

namespace tilejit {

/// One argument of a call: a tensor (borrowed for the duration of the call),
/// an integer or a float scalar, or nothing (a Python None).
class Arg {
 public:
  enum class Kind : uint8_t { kNone, kTensor, kInt, kFloat };

  Arg() = default;
  Arg(const Tensor& t) : kind_(Kind::kTensor), tensor_(&t) {}  // NOLINT
  Arg(int v) : kind_(Kind::kInt), int_(v) {}                   // NOLINT
  Arg(long v) : kind_(Kind::kInt), int_(v) {}                  // NOLINT
  Arg(long long v) : kind_(Kind::kInt), int_(v) {}             // NOLINT
  Arg(double v) : kind_(Kind::kFloat), float_(v) {}            // NOLINT
  Arg(float v) : kind_(Kind::kFloat), float_(v) {}             // NOLINT
  Arg(Tensor&&) = delete;  // a temporary would dangle: bind it to a name first

  Kind kind() const noexcept { return kind_; }
  const Tensor& tensor() const noexcept { return *tensor_; }
  int64_t int_value() const noexcept { return int_; }
  double float_value() const noexcept { return float_; }

 private:
  Kind kind_ = Kind::kNone;
  const Tensor* tensor_ = nullptr;
  int64_t int_ = 0;
  double float_ = 0;
};

/// One input of a shape-only query (Kernel::workspace_bytes_for_shapes), for a
/// caller that has no tensors yet: a tensor input's shape, or a scalar
/// input's value. `{2, 64}` is a shape (so `{3}` is the shape [3]); `3` and
/// `2.0` are scalars.
class ShapeArg {
 public:
  ShapeArg(std::initializer_list<int64_t> shape) : is_shape_(true), shape_(shape) {}
  ShapeArg(std::vector<int64_t> shape) : is_shape_(true), shape_(std::move(shape)) {}  // NOLINT
  ShapeArg(int v) : scalar_(v) {}        // NOLINT
  ShapeArg(long v) : scalar_(v) {}       // NOLINT
  ShapeArg(long long v) : scalar_(v) {}  // NOLINT
  ShapeArg(double v) : scalar_(v) {}     // NOLINT
  ShapeArg(float v) : scalar_(v) {}      // NOLINT

  bool is_shape() const noexcept { return is_shape_; }
  const std::vector<int64_t>& shape() const noexcept { return shape_; }
  /// The scalar (an int or float Arg); meaningful when !is_shape().
  const Arg& scalar() const noexcept { return scalar_; }

 private:
  bool is_shape_ = false;
  std::vector<int64_t> shape_;
  Arg scalar_;
};

/// The outputs of a call, in out_idx order. Converts to a Tensor when there
/// is exactly one. Held inline (a kernel has at most kMaxParams outputs): the
/// list itself costs no allocation.
class Outputs {
 public:
  Outputs() = default;
  size_t size() const noexcept { return tensors_.size(); }
  bool empty() const noexcept { return tensors_.empty(); }
  /// The i-th output; ValueError when i >= size().
  const Tensor& operator[](size_t i) const;
  const Tensor* begin() const noexcept { return tensors_.begin(); }
  const Tensor* end() const noexcept { return tensors_.end(); }
  /// The only output; TypeError when there are none or several.
  operator Tensor() const;  // NOLINT(google-explicit-constructor)

  /// Appends (the call path builds the list with it); InternalError past
  /// kMaxParams.
  void push_back(Tensor t);
  Tensor* data() noexcept { return tensors_.data(); }
  const Tensor* data() const noexcept { return tensors_.data(); }

 private:
  SmallArray<Tensor, kMaxParams> tensors_;
};

struct CallOptions {
  /// Launch on this stream instead of the backend's current stream.
  bool has_stream = false;
  runtime::Stream stream = nullptr;
  /// Caller-supplied outputs, in out_idx order; an undefined entry (or an
  /// empty span) is allocated as usual. Each supplied one is checked for
  /// dtype, shape, device and contiguity.
  std::span<const Tensor> out;
  /// A caller-supplied arena for all workspaces (any dtype, contiguous, on
  /// the call's device, 256-byte aligned, at least workspace_bytes()). Its
  /// `zero` and `zero_once` workspaces are zeroed on every call: tilejit
  /// cannot know what the caller did with the memory in between.
  Tensor workspace;
  /// Makes the outputs; default: the backend's TensorAllocator.
  runtime::TensorAllocator* allocator = nullptr;
};

/// A workspace's place in the arena of one call.
struct WorkspaceSlice {
  std::string name;
  size_t offset = 0;  // bytes from the arena's start; a multiple of 256
  size_t bytes = 0;
  std::vector<int64_t> shape;
  DataType dtype;
  WorkspaceInit init = WorkspaceInit::kEmpty;
};

class Kernel {
 public:
  Kernel() = default;

  /// Calls with inputs only (tensors and scalars in signature order).
  template <typename... Args>
  Outputs operator()(const Args&... args) const {
    const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
    return call(packed);
  }
  Outputs call(std::span<const Arg> inputs, const CallOptions& options = {}) const;

  /// The arena size a call with these inputs leases, in bytes, without
  /// launching (the inputs are checked as by a call).
  size_t workspace_bytes(std::span<const Arg> inputs) const;
  template <typename... Args>
  size_t workspace_bytes_of(const Args&... args) const {
    const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
    return workspace_bytes(packed);
  }
  /// Where each workspace lies in the arena for these inputs.
  std::vector<WorkspaceSlice> workspace_layout(std::span<const Arg> inputs) const;
  /// workspace_bytes() and workspace_layout() from shapes alone: one ShapeArg
  /// per input in call order, a shape for each tensor input and a value for
  /// each scalar input. Checked as a call with tensors of those shapes (and
  /// the declared dtypes, on the kernel's device) would be; a shape with a
  /// negative extent or more than kMaxRank dimensions is a ValueError.
  /// (Named apart from the Arg overloads so that `workspace_bytes({})`
  /// stays unambiguous.)
  size_t workspace_bytes_for_shapes(std::span<const ShapeArg> inputs) const;
  std::vector<WorkspaceSlice> workspace_layout_for_shapes(std::span<const ShapeArg> inputs) const;
  /// An arena for CallOptions::workspace: a uint8 tensor of workspace_bytes()
  /// bytes, 256-byte aligned, on the inputs' device (the kernel's device when
  /// no input is a tensor), from the backend's TensorAllocator. The inputs
  /// are checked as by a call.
  Tensor empty_workspace(std::span<const Arg> inputs) const;

  /// For bindings that take inputs by name (Python's keywords): a call gives
  /// `num_positional` arguments in input order, then one argument per entry
  /// of `names`. Sets order[i], for each input i (order has one slot per
  /// input), to the index of its argument in that concatenation. TypeError,
  /// naming the kernel and the input, for too many positional arguments, a
  /// name that is no input, an input given twice, or a missing input.
  /// `options` names the caller's other keywords for the unknown-name error
  /// ("stream=, out=, workspace=").
  void match_inputs(size_t num_positional, std::span<const std::string_view> names, int* order,
                    std::string_view options = {}) const;

  bool defined() const noexcept { return impl_ != nullptr; }
  const std::string& name() const;
  const std::string& target() const;
  /// Where a call runs when no tensor argument says: the target backend's
  /// Backend::default_device() (the CPU, CUDA device 0).
  Device default_device() const;
  /// The generated translation unit.
  const std::string& source() const;
  /// What the target's lowering reported about the program when the source
  /// was generated, in program order (runtime/diagnostic.h): e.g. a copy in
  /// a T.Pipelined loop that could not be prefetched. Empty for most kernels.
  const std::vector<runtime::Diagnostic>& diagnostics() const;
  /// Where the target's lowering placed each buffer and which path each tile
  /// op took, and why not a faster one (runtime/lowering_report.h); empty for
  /// a source body.
  const runtime::LoweringReport& lowering_report() const;
  const ir::PrimFunc& prim_func() const;
  const CallPlan& plan() const;
  /// What the compiled kernel takes and how it launches (Note [Kernel ABI]).
  const runtime::KernelAbi& abi() const;
  /// The compile options it was compiled with (JitOptions::compile).
  const runtime::CompileOptions& compile_options() const;
  /// Names of the input parameters, in call order.
  std::vector<std::string> input_names() const;

  struct Impl;

 private:
  friend Kernel jit(const ir::PrimFunc& func, const JitOptions& options);
  std::shared_ptr<const Impl> impl_;
};

/// Builds a Kernel: legalises the indices, builds the plan, generates the
/// target's source and compiles it (through the disk cache), once.
Kernel jit(const ir::PrimFunc& func, const JitOptions& options = {});

}  // namespace tilejit

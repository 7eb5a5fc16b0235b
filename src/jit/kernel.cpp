#include "tilejit/jit/kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "jit/kernel_impl.h"
#include "tilejit/core/error.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"
#include "tilejit/runtime/compile_cache.h"
#include "tilejit/runtime/source_postproc.h"
#include "tilejit/runtime/workspace_pool.h"

namespace tilejit {
namespace {

constexpr size_t kWorkspaceAlign = 256;

// The data of one tensor input, or the storage of one scalar, as the kernel
// receives it.
inline void* input_arg(const Kernel::Impl& k, int input, const Arg& arg, BoundCall* call) {
  if (!k.plan.inputs[input].scalar) return arg.tensor().data();
  return &call->scalars[input];
}

}  // namespace

void bind_inputs(const Kernel::Impl& k, std::span<const Arg> inputs, BoundCall* call) {
  const CallPlan& plan = k.plan;
  if (TILEJIT_UNLIKELY(inputs.size() != plan.inputs.size())) call_errors::arity(k, inputs.size());
  int first_tensor = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = plan.inputs[i];
    const Arg& arg = inputs[i];
    if (spec.scalar) {
      ScalarValue& v = call->scalars[i];
      if (spec.dtype == DataType::float32()) {
        if (arg.kind() == Arg::Kind::kFloat) {
          v.f32 = float(arg.float_value());
          // 1e40 rounds to inf: an error, not a silent infinity (inf and
          // nan themselves pass, as the caller asked for them).
          if (TILEJIT_UNLIKELY(std::isinf(v.f32)) && !std::isinf(arg.float_value())) {
            call_errors::scalar_value(k, int(i), arg);
          }
        } else if (arg.kind() == Arg::Kind::kInt) {
          v.f32 = float(arg.int_value());
        } else {
          call_errors::not_a_scalar(k, int(i), arg);
        }
      } else {
        if (arg.kind() != Arg::Kind::kInt) call_errors::not_a_scalar(k, int(i), arg);
        const int64_t x = arg.int_value();
        if (spec.dtype == DataType::int32()) {
          if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
            call_errors::scalar_value(k, int(i), arg);
          }
          v.i32 = int32_t(x);
        } else {
          v.i64 = x;
        }
      }
      continue;
    }
    if (TILEJIT_UNLIKELY(arg.kind() != Arg::Kind::kTensor || !arg.tensor().defined())) {
      call_errors::not_a_tensor(k, int(i), arg);
    }
    const Tensor& t = arg.tensor();
    if (TILEJIT_UNLIKELY(t.dtype() != spec.dtype)) call_errors::dtype(k, int(i), t);
    if (TILEJIT_UNLIKELY(t.ndim() != spec.rank)) call_errors::rank(k, int(i), t);
    for (int d = 0; d < spec.rank; ++d) {
      if (TILEJIT_UNLIKELY(spec.static_dims[d] >= 0 && t.shape(d) != spec.static_dims[d])) {
        call_errors::static_dim(k, int(i), d, t);
      }
    }
    if (first_tensor < 0) {
      first_tensor = int(i);
      call->device = t.device();
      call->has_device = true;
      if (TILEJIT_UNLIKELY(t.device().type != k.backend->device_type())) {
        call_errors::device(k, int(i), t, *call, -1);
      }
    } else if (TILEJIT_UNLIKELY(t.device() != call->device)) {
      call_errors::device(k, int(i), t, *call, first_tensor);
    }
    if (TILEJIT_UNLIKELY(!t.is_contiguous())) call_errors::not_contiguous(k, int(i), t);
  }
  if (!call->has_device) call->device = k.primary_device;

  for (const SymbolBinding& b : plan.bindings) {
    const Arg& arg = inputs[b.input];
    int64_t value;
    if (b.dim < 0) {
      value = arg.int_value();
    } else {
      const int64_t extent = arg.tensor().shape(b.dim);
      int64_t num;
      if (TILEJIT_UNLIKELY(__builtin_sub_overflow(extent, b.offset, &num) ||
                           (b.coeff == -1 && num == INT64_MIN))) {
        value = call_errors::solve_wide(k, b, extent);  // (num / coeff may still fit)
      } else {
        if (TILEJIT_UNLIKELY(num % b.coeff != 0)) call_errors::affine(k, b, extent);
        value = num / b.coeff;
      }
    }
    if (TILEJIT_UNLIKELY(value < 0)) call_errors::negative_symbol(k, b, value);
    call->symbols[b.symbol] = value;
  }
  if (TILEJIT_UNLIKELY(plan.program.run(call->symbols, call->results) != 0)) {
    call_errors::shapes_failed(k, call);
  }
  for (const DimCheck& c : plan.checks) {
    if (TILEJIT_UNLIKELY(inputs[c.input].tensor().shape(c.dim) != call->results[c.result])) {
      call_errors::mismatch(k, c, inputs, *call);
    }
  }
  const int64_t* results = call->results;
  // The grid extents that are not positive constants (Note [Call plan]).
  for (int r : plan.grid_checks) {
    if (TILEJIT_UNLIKELY(results[r] <= 0)) call_errors::bad_grid(k, *call);
  }
  // Every buffer extent at once: a negative one sets the sign bit of the
  // OR, and one past plan.small_extents a higher bit; then the exact checks
  // (negative extents, and each output's size in bytes, so that no
  // allocator is asked for a size that wrapped; the workspaces' are
  // counted by layout_workspaces).
  int64_t any = 0;
  for (int r = plan.first_buffer_result; r < plan.first_launch_result; ++r) any |= results[r];
  if (TILEJIT_UNLIKELY(uint64_t(any) >= plan.small_extents)) call_errors::large_extents(k, *call);
}

size_t layout_workspaces(const Kernel::Impl& k, const BoundCall& call, size_t* offsets,
                         size_t* sizes) {
  // Offsets and sizes in int64, as a Tensor counts bytes; each overflow
  // check is one branch to the cold path, which finds what overflowed.
  constexpr int64_t kMask = int64_t(kWorkspaceAlign) - 1;
  int64_t end = 0;
  for (size_t w = 0; w < k.plan.workspaces.size(); ++w) {
    const BufferSpec& b = k.plan.workspaces[w];
    int64_t bytes = b.dtype.bytes();
    for (int d = 0; d < b.rank; ++d) {
      if (TILEJIT_UNLIKELY(__builtin_mul_overflow(bytes, call.results[b.first_result + d], &bytes))) {
        call_errors::arena_too_large(k, call);
      }
    }
    int64_t offset;
    if (TILEJIT_UNLIKELY(__builtin_add_overflow(end, kMask, &offset))) {
      call_errors::arena_too_large(k, call);
    }
    offset &= ~kMask;
    if (TILEJIT_UNLIKELY(__builtin_add_overflow(offset, bytes, &end))) {
      call_errors::arena_too_large(k, call);
    }
    offsets[w] = size_t(offset);
    sizes[w] = size_t(bytes);
  }
  int64_t total;
  if (TILEJIT_UNLIKELY(__builtin_add_overflow(end, kMask, &total))) {
    call_errors::arena_too_large(k, call);
  }
  return size_t(total & ~kMask);
}

runtime::Module* Kernel::Impl::module_for(Device device) const {
  if (TILEJIT_LIKELY(device == primary_device)) return primary_module.get();
  std::lock_guard<std::mutex> lock(modules_mutex);
  for (auto& [d, m] : other_modules) {
    if (d == device) return m.get();
  }
  auto module = runtime::CompileCache::global().get(*backend, source, abi, func.name,
                                                    options.compile, device, options.disk_cache);
  other_modules.emplace_back(device, module);
  return module.get();
}

runtime::WorkspacePool& Kernel::Impl::pool_for(Device device) const {
  if (TILEJIT_LIKELY(device == primary_device)) return *primary_pool;
  return runtime::WorkspacePool::get(*backend, device);
}

namespace {

// Where a call's workspaces lie in its arena.
struct ArenaLayout {
  size_t offsets[kMaxParams];
  size_t sizes[kMaxParams];
  size_t bytes = 0;  // the arena's size; 0 when there is nothing to lease
};

// Whether output `o` is the caller's (out=) rather than one to make.
inline bool supplied_out(const CallOptions& options, size_t o) {
  return !options.out.empty() && options.out[o].defined();
}

// The call's AllocContext: its device, its stream, and whether that stream
// captures a graph -- asked once, and only when the call allocates (an
// output to make or an arena to lease), for the pool and the output
// allocator alike.
inline runtime::AllocContext alloc_context(const Kernel::Impl& k, const BoundCall& call,
                                           const CallOptions& options, size_t arena_bytes) {
  const CallPlan& plan = k.plan;
  if (TILEJIT_UNLIKELY(!options.out.empty() && options.out.size() != plan.outputs.size())) {
    call_errors::out_count(k, options.out.size());
  }
  runtime::Backend& backend = *k.backend;
  runtime::AllocContext ctx;
  ctx.device = call.device;
  ctx.stream = options.has_stream ? options.stream : backend.current_stream(call.device);
  bool allocates = arena_bytes > 0 && !options.workspace.defined();
  for (size_t o = 0; o < plan.outputs.size(); ++o) allocates = allocates || !supplied_out(options, o);
  ctx.capturing = allocates && backend.is_capturing(call.device, ctx.stream);
  return ctx;
}

// Step 1: the outputs, each the caller's (checked) or made by the
// allocator; their data pointers go to `args`.
inline Outputs allocate_outputs(const Kernel::Impl& k, const BoundCall& call,
                                const CallOptions& options, const runtime::AllocContext& ctx,
                                void** args) {
  const CallPlan& plan = k.plan;
  Outputs outputs;
  runtime::TensorAllocator& allocator =
      options.allocator ? *options.allocator : k.backend->tensor_allocator();
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const BufferSpec& b = plan.outputs[o];
    std::span<const int64_t> shape(&call.results[b.first_result], size_t(b.rank));
    if (supplied_out(options, o)) {
      const Tensor& t = options.out[o];
      if (t.dtype() != b.dtype) call_errors::bad_out(k, o, t, call, "dtype");
      if (t.ndim() != b.rank || !std::equal(shape.begin(), shape.end(), t.shape().begin())) {
        call_errors::bad_out(k, o, t, call, "shape");
      }
      if (t.device() != call.device) call_errors::bad_out(k, o, t, call, "device");
      if (!t.is_contiguous()) call_errors::bad_out(k, o, t, call, "contiguity");
      outputs.push_back(t);
    } else {
      // A try block costs nothing until it throws; the handler is cold.
      try {
        outputs.push_back(allocator.empty(shape, b.dtype, ctx));
      } catch (const Error& e) {
        call_errors::allocation(k, o, e);
      }
    }
    args[b.param] = outputs.data()[o].data();
  }
  return outputs;
}

// Step 2a: the arena's lease from the pool, released when the guard goes
// (after the launch, on every path). Empty when nothing is leased: no
// workspace bytes, or the caller's workspace=.
inline runtime::LeaseGuard lease_arena(const Kernel::Impl& k, const CallOptions& options,
                                       const runtime::AllocContext& ctx, size_t arena_bytes) {
  if (arena_bytes == 0 || options.workspace.defined()) {
    return runtime::LeaseGuard(nullptr, {}, ctx.stream);
  }
  runtime::WorkspacePool& pool = k.pool_for(ctx.device);
  return runtime::LeaseGuard(&pool, pool.acquire(arena_bytes, ctx), ctx.stream);
}

// Mixes workspace offsets into a tag that identifies one arena layout of one
// plan (Note [zero_once]).
inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// Note [zero_once]
// A zero_once workspace is zeroed when its arena is first used for a layout
// and then trusted to stay zero: the kernel promises to leave it as it found
// it. The pool keeps, per block, the tag of the last layout that ran in it
// (a hash of the plan's id and every workspace's offset and size). A lease
// whose block carries another tag, including a new block's 0, zeroes its
// zero_once regions first; every lease then writes its own tag -- 0 for a
// layout without zero_once workspaces, which needs no hash -- so a block that
// another kernel (or another shape of this one) has scribbled on is zeroed
// again before it is trusted.

// Step 2b: the arena -- the lease's block, or the caller's workspace=
// (checked) -- carved into the workspaces, whose pointers go to `args`, and
// the zero and zero_once ones zeroed on the call's stream.
inline void prepare_arena(const Kernel::Impl& k, const BoundCall& call, const CallOptions& options,
                          const runtime::AllocContext& ctx, const ArenaLayout& layout,
                          const runtime::WorkspacePool::Lease& lease, void** args) {
  const CallPlan& plan = k.plan;
  char* arena = static_cast<char*>(lease.ptr);
  bool fresh_layout = false;
  if (options.workspace.defined()) {
    const Tensor& w = options.workspace;
    const size_t needed = layout.bytes;
    if (size_t(w.nbytes()) < needed) call_errors::bad_workspace(k, w, needed, call, "size");
    if (w.device() != call.device) call_errors::bad_workspace(k, w, needed, call, "device");
    if (!w.is_contiguous()) call_errors::bad_workspace(k, w, needed, call, "contiguity");
    if (reinterpret_cast<uintptr_t>(w.data()) % kWorkspaceAlign != 0) {
      call_errors::bad_workspace(k, w, needed, call, "alignment");
    }
    arena = static_cast<char*>(w.data());
    fresh_layout = true;  // nothing is known of the caller's memory
  }
  if (arena == nullptr) {
    for (const BufferSpec& b : plan.workspaces) args[b.param] = nullptr;
    return;
  }
  // Note [zero_once]: only a layout with zero_once workspaces has a tag; any
  // other marks the block 0, "zeroed for nobody".
  uint64_t tag = 0;
  if (lease && plan.has_zero_once) {
    tag = plan.id;
    for (size_t w = 0; w < plan.workspaces.size(); ++w) {
      tag = mix(mix(tag, layout.offsets[w]), layout.sizes[w]);
    }
    tag |= 1;  // never 0
    fresh_layout = *lease.tag != tag;
  }
  for (size_t w = 0; w < plan.workspaces.size(); ++w) {
    const BufferSpec& b = plan.workspaces[w];
    char* at = arena + layout.offsets[w];
    args[b.param] = at;
    const bool zero = b.init == WorkspaceInit::kZero ||
                      (b.init == WorkspaceInit::kZeroOnce && fresh_layout);
    if (zero && layout.sizes[w] > 0) {
      k.backend->memset_async(at, 0, layout.sizes[w], ctx.device, ctx.stream);
    }
  }
  if (lease) *lease.tag = tag;
}

// Step 3: the inputs' values into `args`, and the launch (the module packs
// the argument block and reads each launch's extents at the KernelAbi's
// result indices, Note [Kernel ABI]).
inline void pack_and_launch(const Kernel::Impl& k, std::span<const Arg> inputs,
                            const runtime::AllocContext& ctx, BoundCall* call, void** args) {
  const CallPlan& plan = k.plan;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    args[plan.inputs[i].param] = input_arg(k, int(i), inputs[i], call);
  }
  runtime::LaunchParams launch;
  launch.args = args;
  launch.num_args = int(k.func.params.size());
  launch.symbols = call->symbols;
  launch.num_symbols = int(plan.symbols.size());
  // Each launch's grid and shared memory are among the results, where the
  // KernelAbi says (Note [Kernel ABI]).
  launch.results = call->results;
  launch.num_results = int(plan.program.num_results());
  launch.device = ctx.device;
  launch.stream = ctx.stream;
  k.module_for(ctx.device)->launch(launch);
}

}  // namespace

Outputs Kernel::call(std::span<const Arg> inputs, const CallOptions& options) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "call of an undefined Kernel";
  const Impl& k = *impl_;
  BoundCall call;
  bind_inputs(k, inputs, &call);
  ArenaLayout layout;
  layout.bytes = layout_workspaces(k, call, layout.offsets, layout.sizes);
  const runtime::AllocContext ctx = alloc_context(k, call, options, layout.bytes);
  void* args[kMaxParams];
  Outputs outputs = allocate_outputs(k, call, options, ctx, args);
  const runtime::LeaseGuard arena = lease_arena(k, options, ctx, layout.bytes);
  prepare_arena(k, call, options, ctx, layout, arena.lease(), args);
  pack_and_launch(k, inputs, ctx, &call, args);
  return outputs;
}

size_t Kernel::workspace_bytes(std::span<const Arg> inputs) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "workspace_bytes of an undefined Kernel";
  BoundCall call;
  bind_inputs(*impl_, inputs, &call);
  size_t offsets[kMaxParams];
  size_t sizes[kMaxParams];
  return layout_workspaces(*impl_, call, offsets, sizes);
}

std::vector<WorkspaceSlice> Kernel::workspace_layout(std::span<const Arg> inputs) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "workspace_layout of an undefined Kernel";
  BoundCall call;
  bind_inputs(*impl_, inputs, &call);
  size_t offsets[kMaxParams];
  size_t sizes[kMaxParams];
  layout_workspaces(*impl_, call, offsets, sizes);
  std::vector<WorkspaceSlice> slices;
  for (size_t w = 0; w < impl_->plan.workspaces.size(); ++w) {
    const BufferSpec& b = impl_->plan.workspaces[w];
    WorkspaceSlice s;
    s.name = impl_->func.params[b.param].name;
    s.offset = offsets[w];
    s.bytes = sizes[w];
    s.shape.assign(&call.results[b.first_result], &call.results[b.first_result] + b.rank);
    s.dtype = b.dtype;
    s.init = b.init;
    slices.push_back(std::move(s));
  }
  return slices;
}

namespace {

// Stand-ins for a shape-only query: tensors without memory, of the declared
// dtype on the kernel's device, and the scalars as given. A ShapeArg on the
// wrong kind of input becomes the Arg bind_inputs rejects with the usual
// message.
struct ShapeInputs {
  SmallArray<Tensor, kMaxParams> tensors;
  SmallArray<Arg, kMaxParams> args;

  ShapeInputs(const Kernel::Impl& k, std::span<const ShapeArg> inputs) {
    // More than kMaxParams cannot be an input list: bind_inputs says so.
    if (inputs.size() > size_t(kMaxParams)) call_errors::arity(k, inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ShapeArg& a = inputs[i];
      if (!a.is_shape()) {
        args.emplace_back(a.scalar());
        continue;
      }
      const std::vector<int64_t>& shape = a.shape();
      // What Tensor::from_blob would refuse, refused naming the input.
      bool bad = shape.size() > size_t(kMaxRank);
      int64_t elements = 1;
      for (const int64_t e : shape) {
        bad = bad || e < 0 || (e != 0 && __builtin_mul_overflow(elements, e, &elements));
      }
      if (bad) call_errors::bad_shape_arg(k, int(i), a);
      const DataType dtype = i < k.plan.inputs.size() ? k.plan.inputs[i].dtype : DataType::uint8();
      args.emplace_back(tensors.emplace_back(
          Tensor::from_blob(nullptr, shape, dtype, k.primary_device)));
    }
  }
  std::span<const Arg> span() const { return {args.data(), args.size()}; }
};

// JitOptions::debug_bounds from the environment, read at each jit() so that a
// process can turn it on for the kernels it builds from then on.
bool debug_bounds_from_env() {
  const char* v = std::getenv("TILEJIT_DEBUG_BOUNDS");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

size_t Kernel::workspace_bytes_for_shapes(std::span<const ShapeArg> inputs) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "workspace_bytes of an undefined Kernel";
  const ShapeInputs stand_ins(*impl_, inputs);
  return workspace_bytes(stand_ins.span());
}

std::vector<WorkspaceSlice> Kernel::workspace_layout_for_shapes(
    std::span<const ShapeArg> inputs) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "workspace_layout of an undefined Kernel";
  const ShapeInputs stand_ins(*impl_, inputs);
  return workspace_layout(stand_ins.span());
}

Tensor Kernel::empty_workspace(std::span<const Arg> inputs) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "empty_workspace of an undefined Kernel";
  BoundCall call;
  bind_inputs(*impl_, inputs, &call);
  size_t offsets[kMaxParams];
  size_t sizes[kMaxParams];
  const int64_t bytes = int64_t(layout_workspaces(*impl_, call, offsets, sizes));
  runtime::Backend& backend = *impl_->backend;
  // Allocator::allocate promises 256-byte alignment, which is what
  // CallOptions::workspace needs.
  return backend.tensor_allocator().empty(std::span<const int64_t>(&bytes, 1), DataType::uint8(),
                                          call.device, backend.current_stream(call.device));
}

void Kernel::match_inputs(size_t num_positional, std::span<const std::string_view> names,
                          int* order, std::string_view options) const {
  TILEJIT_CHECK(impl_ != nullptr, kValueError) << "match_inputs of an undefined Kernel";
  const Impl& k = *impl_;
  const size_t n = k.plan.inputs.size();
  if (num_positional > n) call_errors::arity(k, num_positional + names.size());
  for (size_t i = 0; i < n; ++i) order[i] = i < num_positional ? int(i) : -1;
  for (size_t j = 0; j < names.size(); ++j) {
    size_t i = 0;
    while (i < n && k.func.params[k.plan.inputs[i].param].name != names[j]) ++i;
    if (i == n) call_errors::unknown_input_name(k, names[j], options);
    if (order[i] >= 0) call_errors::input_given_twice(k, int(i));
    order[i] = int(num_positional + j);
  }
  int missing[kMaxParams];
  size_t num_missing = 0;
  for (size_t i = 0; i < n; ++i) {
    if (order[i] < 0) missing[num_missing++] = int(i);
  }
  if (num_missing > 0) {
    call_errors::arity(k, num_positional + names.size(),
                       std::span<const int>(missing, num_missing));
  }
}

const Tensor& Outputs::operator[](size_t i) const {
  TILEJIT_CHECK(i < size(), kValueError)
      << "output index " << i << " is out of range: the call returned " << size() << " output"
      << (size() == 1 ? "" : "s");
  return tensors_[i];
}

void Outputs::push_back(Tensor t) {
  TILEJIT_CHECK(size() < tensors_.capacity(), kInternalError)
      << "Outputs holds at most " << tensors_.capacity() << " tensors";
  tensors_.emplace_back(std::move(t));
}

Outputs::operator Tensor() const {
  TILEJIT_CHECK(size() == 1, kTypeError)
      << "the call returned " << size()
      << " outputs; a single Tensor needs exactly one (index the Outputs instead)";
  return tensors_[0];
}

const std::string& Kernel::name() const { return impl_->func.name; }
const std::string& Kernel::target() const { return impl_->backend->target(); }
Device Kernel::default_device() const { return impl_->primary_device; }
const std::string& Kernel::source() const { return impl_->source; }
const std::vector<runtime::Diagnostic>& Kernel::diagnostics() const { return impl_->diagnostics; }
const runtime::LoweringReport& Kernel::lowering_report() const { return impl_->report; }
const ir::PrimFunc& Kernel::prim_func() const { return impl_->func; }
const CallPlan& Kernel::plan() const { return impl_->plan; }
const runtime::KernelAbi& Kernel::abi() const { return impl_->abi; }
const runtime::CompileOptions& Kernel::compile_options() const { return impl_->options.compile; }

std::vector<std::string> Kernel::input_names() const {
  std::vector<std::string> names;
  for (const InputSpec& in : impl_->plan.inputs) names.push_back(impl_->func.params[in.param].name);
  return names;
}

Kernel jit(const ir::PrimFunc& func, const JitOptions& options) {
  ir::validate(func);
  LegalizedIndices indices = legalize_indices(func, options.out_idx, options.workspace_idx);
  auto impl = std::make_shared<Kernel::Impl>();
  // A tile body is verified (regions normalised) and its T.alloc_global
  // buffers become hidden workspace parameters, after the indices were
  // legalised against the author's signature.
  impl->func = func.is_tile() ? transform::plan_workspaces(transform::verify(func)) : func;
  impl->options = options;
  impl->plan = build_call_plan(impl->func, indices, options);

  // Which target, and what it limits, is the backends' to say.
  impl->backend = options.target == "auto" ? &runtime::auto_backend(func)
                                           : &runtime::get_backend(options.target);
  impl->backend->validate(func);
  TILEJIT_CHECK(impl->backend->available(), kRuntimeError)
      << func.name << ": target '" << options.target << "' is not available on this machine";
  // The plan evaluates each launch's grid and shared memory; the KernelAbi
  // records where (Note [Kernel ABI]).
  std::vector<runtime::LaunchResults> results;
  for (const LaunchSpec& l : impl->plan.launches) results.push_back(l.results);
  runtime::SourceRequest request;
  request.func = &impl->func;
  request.symbols = impl->plan.symbols;
  request.launches = results;
  request.debug_bounds = options.debug_bounds || debug_bounds_from_env();
  request.tma = options.tma;
  request.warp_specialize = options.warp_specialize;
  request.cluster_multicast = options.cluster_multicast;
  request.coarse_k_steps = options.coarse_k_steps;
  request.staged_epilogue = options.staged_epilogue;
  request.arch = impl->backend->source_arch(options.compile, impl->backend->default_device());
  runtime::GeneratedSource generated = impl->backend->generate(request);
  impl->source = std::move(generated.source);
  // Note [Source post-processing]: a registered hook may rewrite the source;
  // the cache keys on what it returns.
  if (const runtime::SourcePostproc hook = runtime::source_postproc(impl->backend->target())) {
    impl->source = hook(impl->source, impl->backend->target());
  }
  impl->abi = std::move(generated.abi);
  impl->diagnostics = std::move(generated.diagnostics);
  impl->report = std::move(generated.report);
  TILEJIT_CHECK(impl->abi.launches.size() == impl->plan.launches.size(), kInternalError)
      << func.name << ": the " << impl->backend->target() << " backend's KernelAbi has "
      << impl->abi.launches.size() << " launches for a plan of " << impl->plan.launches.size();
  for (const runtime::AbiLaunch& l : impl->abi.launches) {
    // Every index must be one of the plan's results: the call reads there.
    for (int r : {l.grid[0], l.grid[1], l.grid[2], l.smem}) {
      TILEJIT_CHECK(r >= 0 && r < int(impl->plan.program.num_results()), kInternalError)
          << func.name << ": the " << impl->backend->target()
          << " backend's KernelAbi reads result " << r << " of a plan with "
          << impl->plan.program.num_results();
    }
  }
  TILEJIT_CHECK(impl->abi.problem().empty(), kInternalError)
      << func.name << ": the " << impl->backend->target()
      << " backend made a KernelAbi that is not well formed: " << impl->abi.problem();
  impl->primary_device = impl->backend->default_device();
  impl->primary_pool = &runtime::WorkspacePool::get(*impl->backend, impl->primary_device);
  impl->primary_module = runtime::CompileCache::global().get(
      *impl->backend, impl->source, impl->abi, func.name, options.compile, impl->primary_device,
      options.disk_cache);
  Kernel kernel;
  kernel.impl_ = std::move(impl);
  return kernel;
}

}  // namespace tilejit

// Backend: everything a target does, behind one interface, so that jit/
// never includes a backend and a new target touches nothing outside its
// directory (see DESIGN.md, "Layers").
//
// The stages are distinct (STYLE.md, after jitify2): generate() gives
// source text and the KernelAbi (Note [Kernel ABI] in kernel_abi.h),
// compile() gives binary bytes, load() gives a Module from the bytes and the
// KernelAbi, and Module::launch() runs it. The runtime caches binaries on disk and modules
// in memory (compile_cache.h); a backend does no caching of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/core/device.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/allocator.h"
#include "tilejit/runtime/diagnostic.h"
#include "tilejit/runtime/kernel_abi.h"
#include "tilejit/runtime/lowering_report.h"

namespace tilejit::runtime {

/// Where the call plan evaluates one launch's grid and dynamic shared
/// memory: indices into its shape-program results (AbiLaunch).
struct LaunchResults {
  int grid[3] = {-1, -1, -1};
  int smem = -1;
};

/// What a backend generates source from.
struct SourceRequest {
  const ir::PrimFunc* func = nullptr;
  /// Dynamic symbols in slot order: the kernel receives their values in
  /// this order and declares each by name for the body.
  std::span<const std::string> symbols;
  /// One per launch of the PrimFunc (phase 1: its one launch); copied into
  /// the KernelAbi's launches. Empty, for a request made by hand: launch l
  /// reads its grid at results 4l, 4l + 1, 4l + 2 and its shared memory at
  /// 4l + 3.
  std::span<const LaunchResults> launches;
  /// A tile body's scalar loads and stores of tile buffers check their
  /// indices at run time (JitOptions::debug_bounds).
  bool debug_bounds = false;
  /// The architecture the source will be compiled for, as the backend
  /// names it (Backend::source_arch; CUDA: "sm_90a", "compute_80"); "":
  /// the backend's default.
  std::string arch;
  /// The CUDA backend may read tiles through TMA where the target has it
  /// (JitOptions::tma).
  bool tma = true;
  /// The CUDA backend may give a TMA loop a producer warpgroup
  /// (JitOptions::warp_specialize).
  bool warp_specialize = true;
  /// The CUDA backend may launch a warp-specialised kernel in pairs of
  /// blocks that share their tiles (JitOptions::cluster_multicast).
  bool cluster_multicast = true;
  /// Note [Coarser K steps] in src/backend/cuda/coarse_k_steps.h
  /// (JitOptions::coarse_k_steps).
  bool coarse_k_steps = true;
  /// Note [Staged epilogues] in src/backend/cuda/staged_epilogue.h
  /// (JitOptions::staged_epilogue).
  bool staged_epilogue = true;
};

/// What generate() makes: the translation unit, what its kernel takes, and
/// what the lowering reports about the program (diagnostic.h and
/// lowering_report.h; none for a source body).
struct GeneratedSource {
  std::string source;
  KernelAbi abi;
  // `= {}`: a `return {source, abi};` may leave it out (-Wextra is quiet).
  std::vector<Diagnostic> diagnostics = {};
  LoweringReport report = {};
};

struct CompileOptions {
  /// Replace the backend's default flags (e.g. -O3 -march=native for the CPU
  /// backend) when non-empty.
  std::vector<std::string> flags;
  /// Appended after the default (or replaced) flags.
  std::vector<std::string> extra_flags;
};

/// What export_library() asks of a target (Note [Exported library] in
/// src/export/export_library.cpp): the kernel's translation unit as
/// generate() made it, its KernelAbi, the device and options it was compiled
/// for, and a target-neutral C++ unit (the library's C functions) that
/// reaches the target through hooks the target's launcher unit defines, all
/// extern "C" over
///   struct tilejit_export_call { int device_id; void* stream;
///                                void* target; void* saved; };
/// (the call's device and stream; `target` and `saved` are the launcher's):
///   int tilejit_export_begin(call, char* error, size_t error_size)
///     makes the target ready for the call's device (CUDA: the driver, the
///     context, the module), setting call->target;
///   void tilejit_export_end(call)       undoes what begin did to the thread;
///   int tilejit_export_launch(call, int launch, const void* block,
///                             const int64_t* grid, int64_t smem, error, size)
///     runs launch `launch` (an index into abi.launches) over the grid
///     (three extents, each >= 1) with the packed argument block and `smem`
///     bytes of dynamic shared memory, ordered on call->stream;
///   int tilejit_export_zero(call, void* ptr, size_t bytes, error, size)
///     zeroes device memory, ordered on call->stream;
///   int tilejit_export_capturing(call, int* capturing, error, size)
///     whether call->stream is capturing a graph;
///   void* tilejit_export_alloc(call, size_t bytes, int ordered)
///     `bytes` (a multiple of 256) of the device's memory, 256-byte aligned,
///     or NULL; `ordered`: usable from call->stream on (stream-ordered);
///   void tilejit_export_free(void* target, void* ptr, size_t bytes,
///                            void* stream, int ordered)
///     gives back what alloc returned (with the same `ordered`), after the
///     work queued on `stream` when ordered;
///   int tilejit_export_tensor_map(call, void* map, void* address,
///                                 int elem_bytes, int rank,
///                                 const uint64_t* dims, const uint32_t* box,
///                                 int swizzle, const char* name, error, size)
///     encodes the 128-byte TMA descriptor of a kTensorMap argument (Note
///     [Tensor maps]) at `map` inside the block, for the tensor argument
///     `name` at `address` (dims and box innermost first); only the CUDA
///     target has such arguments.
/// Those returning int return 0, or a nonzero status after writing a message
/// of at most error_size bytes (NUL included) to `error`.
struct ExportRequest {
  std::string kernel_name;
  const std::string* kernel_source = nullptr;
  const KernelAbi* abi = nullptr;
  std::string wrapper_source;
  /// What the Kernel was compiled with and for (its primary device): a
  /// device target compiles the kernel for that device's architecture.
  const CompileOptions* options = nullptr;
  Device device;
  /// The only symbols the library exports.
  std::vector<std::string> exported_symbols;
};

/// One call of a kernel: the values the KernelAbi's arguments are packed
/// from, and the call plan's shape-program results, where each launch's
/// grid and dynamic shared memory are (AbiLaunch's indices: the module reads
/// them itself, so a call builds nothing per launch). `args` has one entry
/// per parameter of the PrimFunc in signature order: a tensor's data
/// pointer, or a pointer to a scalar's value stored in its declared dtype
/// (or to a by-value struct's bytes).
struct LaunchParams {
  void* const* args = nullptr;
  int num_args = 0;
  const int64_t* symbols = nullptr;
  int num_symbols = 0;
  const int64_t* results = nullptr;
  int num_results = 0;
  Device device;
  Stream stream = nullptr;
};

/// A binary loaded for one device, ready to launch. Thread-safe.
class Module {
 public:
  virtual ~Module() = default;
  /// Packs the argument block (KernelAbi::pack) and runs every launch in
  /// order, each with the grid and shared memory at its indices into
  /// `params.results`. Throws InternalError when `params` has fewer values,
  /// symbols or results than the KernelAbi reads.
  virtual void launch(const LaunchParams& params) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu", "cuda".
  virtual const std::string& target() const = 0;
  virtual DeviceType device_type() const = 0;
  /// Whether the target can run here (a driver and a device exist). A backend
  /// that is not available still generates source and, where its compiler
  /// is present, compiles.
  virtual bool available() const = 0;

  // What the target knows of a PrimFunc, so that jit/ and ir/ know nothing
  // of any target (DESIGN.md, "Layers").

  /// The device a kernel of this target runs on when nothing in its call
  /// names one (no tensor argument): the CPU, CUDA device 0.
  virtual Device default_device() const = 0;
  /// Checks what this target alone limits in a PrimFunc that ir::validate()
  /// accepted (CUDA: 1 to 1024 threads per block). Throws ValueError naming
  /// the function; jit() calls it once the target is chosen.
  virtual void validate(const ir::PrimFunc& /*func*/) const {}
  /// How much target="auto" prefers this backend for `func`: below 0 when it
  /// cannot run it (no body for this target), otherwise higher is preferred.
  /// auto_backend() asks only available backends.
  virtual int auto_rank(const ir::PrimFunc& func) const = 0;

  /// The complete translation unit for `request` (the body of the target
  /// wrapped in the entry point) and the KernelAbi of its kernel. Throws
  /// ValueError when the PrimFunc has no body for this target.
  virtual GeneratedSource generate(const SourceRequest& request) const = 0;
  /// generate()'s source alone.
  std::string generate_source(const SourceRequest& request) const {
    return generate(request).source;
  }
  /// Everything besides the source that decides the binary: compiler
  /// identity and version, flags, architecture. Part of the disk-cache key.
  virtual std::string toolchain_key(const CompileOptions& options, Device device) = 0;
  /// The architecture a source compiled with `options` for `device` targets,
  /// for SourceRequest::arch ("": the target has one).
  virtual std::string source_arch(const CompileOptions&, Device) { return ""; }
  /// Compiles `source` (whose entry points generate() made for
  /// `kernel_name`) into binary bytes. Throws CompileError with the
  /// compiler's command, log and the numbered source lines around the first
  /// error.
  virtual std::string compile(const std::string& source, const std::string& kernel_name,
                              const CompileOptions& options, Device device) = 0;
  /// Loads compiled bytes for `device`; the module launches as `abi` says
  /// (its entries, its argument block). Throws RuntimeError for bytes that
  /// do not load (a corrupt binary is never executed) and for an `abi` the
  /// backend cannot launch.
  virtual std::unique_ptr<Module> load(const std::string& binary, const KernelAbi& abi,
                                       Device device) = 0;

  /// A standalone shared object for `request`, as bytes: the kernel and the
  /// wrapper compiled together, needing nothing at run time but the C
  /// runtime (and what the target loads itself). Throws ValueError naming
  /// the target when it cannot export (the default), CompileError as
  /// compile() does.
  virtual std::string export_library(const ExportRequest& request);

  /// Raw memory, used by the workspace pool.
  virtual Allocator& allocator() = 0;
  /// The default TensorAllocator for outputs.
  virtual TensorAllocator& tensor_allocator() = 0;
  /// Sets `bytes` bytes at `ptr` to `value`, ordered on `stream`.
  virtual void memset_async(void* ptr, int value, size_t bytes, Device device, Stream stream) = 0;
  /// Copies `bytes` bytes between host memory and memory of `device` (or
  /// within it), after the work queued on `stream`; returns when the copy is
  /// done. The default is memcpy, for host-memory backends.
  virtual void copy_sync(void* dst, const void* src, size_t bytes, Device /*device*/,
                         Stream /*stream*/);

  // Stream ordering, for the workspace pool (Note [Stream-ordered reuse] in
  // workspace_pool.h). The CPU backend is synchronous: its events are nullptr.
  virtual Stream current_stream(Device /*device*/) { return nullptr; }
  /// An event recorded on `stream` now, or nullptr when nothing can be
  /// pending. The pool destroys it with destroy_event().
  virtual Event record_event(Device /*device*/, Stream /*stream*/) { return nullptr; }
  virtual bool event_completed(Event /*event*/) { return true; }
  virtual void destroy_event(Event /*event*/) noexcept {}
  /// Whether `stream` is being captured into a CUDA graph.
  virtual bool is_capturing(Device /*device*/, Stream /*stream*/) { return false; }
  /// When `stream` is capturing a graph, arranges for `release(context)` to
  /// run once that graph is destroyed and returns true; returns false when
  /// the stream is not capturing. `release` must not call into the backend.
  virtual bool on_graph_destroyed(Device /*device*/, Stream /*stream*/,
                                  void (*/*release*/)(void*) noexcept, void* /*context*/) {
    return false;
  }
};

/// Copies the elements of `src` into `dst` (same dtype and number of
/// elements, both contiguous; either may be on the host or a device), after
/// the work queued on the device's current stream; returns when done. Throws
/// ValueError or TypeError naming the mismatch.
void copy(const Tensor& src, const Tensor& dst);

/// The backend for `target`; throws ValueError naming the registered targets.
Backend& get_backend(std::string_view target);
/// The backend target="auto" means for `func`: of the available backends,
/// the one of highest auto_rank(), the first registered among equals.
/// Throws ValueError naming the function when none ranks it at 0 or above.
Backend& auto_backend(const ir::PrimFunc& func);
/// The backend whose device type is `type`, or nullptr.
Backend* find_backend(DeviceType type);
/// Registered target names, in registration order.
std::vector<std::string> registered_targets();
/// Registers a backend; a second backend for the same target replaces
/// nothing and throws InternalError.
void register_backend(std::unique_ptr<Backend> backend);

/// Registers a backend from a static initializer in the backend's own source:
///   static BackendRegistration reg([] { return std::make_unique<CpuBackend>(); });
struct BackendRegistration {
  explicit BackendRegistration(std::unique_ptr<Backend> (*factory)());
};

}  // namespace tilejit::runtime

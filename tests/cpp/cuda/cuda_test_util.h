// Helpers shared by the CUDA backend tests: build a kernel through the
// backend's stages, launch it, move bytes to and from the device, and skip
// cleanly where there is no GPU or no NVRTC.
//
// The tests reach into src/backend/cuda/ (the driver and NVRTC tables) and so
// need the toolkit's include directory for cuda.h; they never link libcuda.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/nvrtc_loader.h"
#include "tilejit/backend/cuda.h"
#include "tilejit/core/error.h"
#include "common/test_util.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {

using tilejit::testing::error_message;
using tilejit::testing::ScopedEnv;
using tilejit::testing::TempDir;

inline runtime::Backend& cuda_backend() { return runtime::get_backend("cuda"); }

#define TILEJIT_SKIP_WITHOUT_GPU()                                                          \
  if (!::tilejit::cuda::testing::cuda_backend().available())                               \
  GTEST_SKIP() << "no CUDA device: " << ::tilejit::cuda::unavailable_reason()

#define TILEJIT_SKIP_WITHOUT_NVRTC()                            \
  if (::tilejit::cuda::nvrtc_or_null() == nullptr)              \
  GTEST_SKIP() << ::tilejit::cuda::nvrtc_unavailable_reason()


/// The symbols of `f` in order of first appearance in its parameters' shapes.
inline std::vector<std::string> symbols_of(const ir::PrimFunc& f) {
  std::vector<std::string> names;
  for (const ir::Param& p : f.params) {
    if (!p.is_scalar) {
      for (const ir::Expr& d : p.tensor.shape) ir::collect_vars(d, &names);
    }
  }
  return names;
}

inline std::string compile(const ir::PrimFunc& f, const std::vector<std::string>& symbols,
                           const runtime::CompileOptions& options = {},
                           Device device = Device::cuda(0)) {
  runtime::Backend& be = cuda_backend();
  runtime::SourceRequest request{&f, symbols};
  return be.compile(be.generate_source(request), f.name, options, device);
}

/// The CUDA unit generate() makes of `f` after verify and plan_workspaces
/// (as jit() hands it on), checked to compile with NVRTC for the default
/// architecture.
inline std::string compiled_unit(const ir::PrimFunc& f) {
  const ir::PrimFunc planned = transform::plan_workspaces(transform::verify(f));
  const std::vector<std::string> symbols = symbols_of(planned);
  runtime::SourceRequest request{&planned, symbols};
  const std::string source = cuda_backend().generate(request).source;
  runtime::CompileOptions options;
  EXPECT_FALSE(cuda_backend().compile(source, planned.name, options, Device::cuda(0)).empty())
      << planned.name;
  return source;
}

/// A tile program as generate() lowers it after verify and plan_workspaces
/// (as jit() hands it on): the function, its source and report.
struct Generated {
  ir::PrimFunc func;
  runtime::GeneratedSource generated;

  /// The nth report entry of the op `name` ("T.copy", "T.Pipelined"), or
  /// nullptr.
  const runtime::Diagnostic* op(const std::string& name, int nth = 0) const {
    for (const runtime::Diagnostic& r : generated.report.ops) {
      if (r.op == name && nth-- == 0) return &r;
    }
    return nullptr;
  }
  bool has(const std::string& text) const {
    return generated.source.find(text) != std::string::npos;
  }
  size_t count(const std::string& text) const {
    size_t n = 0;
    for (size_t at = generated.source.find(text); at != std::string::npos;
         at = generated.source.find(text, at + 1)) {
      ++n;
    }
    return n;
  }
  /// The source without its comments and #line directives (which name the
  /// program's own text): the code two programs compare on.
  std::string code() const {
    std::istringstream in(generated.source);
    std::string out, line;
    while (std::getline(in, line)) {
      const size_t first = line.find_first_not_of(' ');
      if (first != std::string::npos &&
          (line.compare(first, 2, "//") == 0 || line.compare(first, 5, "#line") == 0)) {
        continue;
      }
      out += line + "\n";
    }
    return out;
  }
  /// Whether NVRTC compiles the source for the default architecture.
  bool compiles() const {
    return !cuda_backend().compile(generated.source, func.name, {}, Device::cuda(0)).empty();
  }
};

/// `f` through generate(), `set` changing the request's options first.
inline Generated generate(const ir::PrimFunc& f,
                          const std::function<void(runtime::SourceRequest&)>& set = {}) {
  Generated out{transform::plan_workspaces(transform::verify(f)), {}};
  const std::vector<std::string> symbols = symbols_of(out.func);
  runtime::SourceRequest request{&out.func, symbols};
  if (set) set(request);
  out.generated = cuda_backend().generate(request);
  return out;
}

/// The KernelAbi generate() makes for `f`.
inline runtime::KernelAbi abi_of(const ir::PrimFunc& f, const std::vector<std::string>& symbols) {
  runtime::SourceRequest request{&f, symbols};
  return cuda_backend().generate(request).abi;
}

/// generate -> compile -> load, as the runtime's cache would. `threads`,
/// when not 0, replaces the launch's threads in the KernelAbi (to see what
/// the module and the driver refuse).
inline std::unique_ptr<runtime::Module> build(const ir::PrimFunc& f,
                                              const std::vector<std::string>& symbols,
                                              const runtime::CompileOptions& options = {},
                                              Device device = Device::cuda(0), int threads = 0) {
  runtime::KernelAbi abi = abi_of(f, symbols);
  if (threads != 0) abi.launches[0].threads[0] = threads;
  return cuda_backend().load(compile(f, symbols, options, device), abi, device);
}

struct Launch {
  std::vector<void*> args;
  std::vector<int64_t> symbols;
  std::array<int64_t, 3> grid{1, 1, 1};
  int64_t smem = 0;
  Device device = Device::cuda(0);
  runtime::Stream stream = nullptr;
};

inline void launch(runtime::Module& m, const Launch& l) {
  runtime::LaunchParams p;
  p.args = l.args.data();
  p.num_args = int(l.args.size());
  p.symbols = l.symbols.data();
  p.num_symbols = int(l.symbols.size());
  // Results 0-3 of a request made by hand (SourceRequest::launches); the
  // threads come from the KernelAbi.
  const int64_t results[4] = {l.grid[0], l.grid[1], l.grid[2], l.smem};
  p.results = results;
  p.num_results = 4;
  p.device = l.device;
  p.stream = l.stream;
  m.launch(p);
}

/// Device memory from the backend's allocator, freed at scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, Device device = Device::cuda(0))
      : bytes_(bytes), device_(device) {
    ptr_ = cuda_backend().allocator().allocate(bytes, device, nullptr);
    if (ptr_ == nullptr) throw Error(ErrorKind::kOutOfMemoryError, "test buffer");
  }
  ~DeviceBuffer() { cuda_backend().allocator().deallocate(ptr_, bytes_, device_, nullptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  void upload(const std::vector<T>& host) const {
    ContextGuard guard(device_.id);
    TILEJIT_CU(cuMemcpyHtoD, CUdeviceptr(ptr_), host.data(), host.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> download(size_t count) const {
    ContextGuard guard(device_.id);
    std::vector<T> host(count);
    TILEJIT_CU(cuCtxSynchronize);
    TILEJIT_CU(cuMemcpyDtoH, host.data(), CUdeviceptr(ptr_), count * sizeof(T));
    return host;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
  Device device_;
};

/// A non-blocking stream, destroyed at scope exit (after it drains).
class TestStream {
 public:
  explicit TestStream(int device = 0) : device_(device) {
    ContextGuard guard(device_);
    TILEJIT_CU(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
  }
  ~TestStream() {
    ContextGuard guard(device_);
    driver().cuStreamSynchronize(stream_);
    driver().cuStreamDestroy(stream_);
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;

  runtime::Stream get() const { return stream_; }
  void sync() const {
    ContextGuard guard(device_);
    TILEJIT_CU(cuStreamSynchronize, stream_);
  }

 private:
  int device_;
  CUstream stream_ = nullptr;
};

}  // namespace tilejit::cuda::testing

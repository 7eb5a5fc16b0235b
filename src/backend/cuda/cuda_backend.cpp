// CudaBackend: target "cuda". Generated CUDA C++ is compiled by NVRTC into a
// cubin for the device's architecture, loaded into the device's primary
// context, and launched with cuLaunchKernel on the caller's stream. Memory
// is stream-ordered (cuMemAllocAsync) and the workspace pool's events are
// CUDA events. The driver and NVRTC are reached through dlopen (Note [Driver
// through dlopen] in cuda_driver.h): registering the backend costs nothing,
// and it is available() only where a driver and a device exist.
#include <memory>
#include <string>

#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_export.h"
#include "backend/cuda/cuda_graph_hook.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {
namespace {

class CudaBackend final : public runtime::Backend {
 public:
  const std::string& target() const override { return target_; }
  DeviceType device_type() const override { return DeviceType::kCUDA; }
  // Loads the driver on first use (not at registration), so a process that
  // never asks pays nothing.
  bool available() const override { return driver_or_null() != nullptr; }

  Device default_device() const override { return Device::cuda(0); }
  void validate(const ir::PrimFunc& func) const override { validate_func(func); }
  // A GPU is preferred to the host for a function with a body for both,
  // and for a tile body (lowered for both) in TileLang's own dialect.
  int auto_rank(const ir::PrimFunc& func) const override {
    if (const ir::TileBody* tile = func.tile()) return tile->dialect.empty() ? 1 : -1;
    return func.sources().count(target_) ? 1 : -1;
  }

  runtime::GeneratedSource generate(const runtime::SourceRequest& request) const override {
    return cuda::generate_source(request);
  }
  std::string toolchain_key(const runtime::CompileOptions& options, Device device) override {
    return cuda::toolchain_key(options, device);
  }
  std::string source_arch(const runtime::CompileOptions& options, Device device) override {
    return cuda::source_arch(options, device);
  }
  std::string compile(const std::string& source, const std::string& kernel_name,
                      const runtime::CompileOptions& options, Device device) override {
    return compile_source(source, kernel_name, options, device);
  }
  std::unique_ptr<runtime::Module> load(const std::string& binary, const runtime::KernelAbi& abi,
                                        Device device) override {
    return load_module(binary, abi, device);
  }

  // Note [CUDA export] (src/export/export_library.cpp).
  std::string export_library(const runtime::ExportRequest& request) override {
    return cuda::export_library(request);
  }

  runtime::Allocator& allocator() override { return cuda::allocator(); }
  runtime::TensorAllocator& tensor_allocator() override { return cuda::tensor_allocator(*this); }
  void memset_async(void* ptr, int value, size_t bytes, Device device,
                    runtime::Stream stream) override {
    cuda::memset_async(ptr, value, bytes, device, stream);
  }

  void copy_sync(void* dst, const void* src, size_t bytes, Device device,
                 runtime::Stream stream) override {
    cuda::copy_sync(dst, src, bytes, device, stream);
  }
  runtime::Stream current_stream(Device device) override { return cuda::current_stream(device); }
  runtime::Event record_event(Device device, runtime::Stream stream) override {
    return cuda::record_event(device, stream);
  }
  bool event_completed(runtime::Event event) override { return cuda::event_completed(event); }
  void destroy_event(runtime::Event event) noexcept override { cuda::destroy_event(event); }
  bool is_capturing(Device device, runtime::Stream stream) override {
    return cuda::is_capturing(device, stream);
  }
  // Note [Graph lifetime through user objects] (cuda_graph_hook.h).
  bool on_graph_destroyed(Device device, runtime::Stream stream, void (*release)(void*) noexcept,
                          void* context) override {
    check_cuda_device(device, "on_graph_destroyed");
    CUgraph graph = nullptr;
    if (!capture_graph(device, stream, &graph)) return false;
    attach_to_graph(device, graph, release, context);
    return true;
  }

 private:
  const std::string target_ = "cuda";
};

const runtime::BackendRegistration kRegistration(
    []() -> std::unique_ptr<runtime::Backend> { return std::make_unique<CudaBackend>(); });

}  // namespace
}  // namespace tilejit::cuda

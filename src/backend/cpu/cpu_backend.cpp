// CpuBackend: target "cpu". Generated C++ is compiled by the host compiler
// into a shared object, loaded from memory, and run one block per call of the
// body with the grid's blocks spread over a thread pool. Memory is plain
// aligned host memory, large outputs from the host block cache (Note [Host
// block cache]); everything is synchronous, so streams and events are all
// nullptr (the Backend defaults).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend_internal.h"
#include "backend/cpu/host_block_cache.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu {
namespace {

// The alignment runtime::Allocator promises; also what a SIMD loop over a
// workspace wants.
constexpr size_t kAlignment = 256;

void check_cpu(Device device, const char* what) {
  TILEJIT_CHECK(device.type == DeviceType::kCPU, kValueError)
      << "cpu backend: " << what << " on device '" << device.str() << "', which is not a CPU";
}

class CpuAllocator final : public runtime::Allocator {
 public:
  void* allocate(size_t bytes, Device device, runtime::Stream) override {
    check_cpu(device, "allocate");
    // aligned_alloc wants a multiple of the alignment; zero bytes still get
    // a unique pointer, as from malloc.
    if (bytes > SIZE_MAX - kAlignment) return nullptr;
    const size_t rounded = ((bytes == 0 ? 1 : bytes) + kAlignment - 1) / kAlignment * kAlignment;
    return std::aligned_alloc(kAlignment, rounded);
  }
  void deallocate(void* ptr, size_t, Device, runtime::Stream) noexcept override {
    std::free(ptr);
  }
};

void free_tensor_memory(void* ptr) noexcept { std::free(ptr); }
void return_tensor_block(void* block) noexcept {
  HostBlockCache::global().give_back(static_cast<HostBlockCache::Block*>(block));
}

class CpuTensorAllocator final : public runtime::TensorAllocator {
 public:
  explicit CpuTensorAllocator(CpuAllocator& raw) : raw_(raw) {}

  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream stream) override {
    const int64_t bytes = runtime::tensor_bytes(shape, dtype);
    if (size_t(bytes) >= HostBlockCache::kMinBytes) return from_cache(shape, dtype, device, bytes);
    void* ptr = raw_.allocate(size_t(bytes), device, stream);
    TILEJIT_CHECK(ptr != nullptr, kOutOfMemoryError)
        << "empty: cannot allocate " << bytes << " bytes of host memory for a tensor of shape "
        << shape_str(shape) << " and dtype " << dtype.name();
    try {
      return Tensor::from_blob(ptr, shape, dtype, device, free_tensor_memory, ptr);
    } catch (...) {
      std::free(ptr);
      throw;
    }
  }

 private:
  Tensor from_cache(std::span<const int64_t> shape, DataType dtype, Device device, int64_t bytes) {
    check_cpu(device, "allocate");
    HostBlockCache::Block* block = HostBlockCache::global().take(size_t(bytes));
    TILEJIT_CHECK(block != nullptr, kOutOfMemoryError)
        << "empty: cannot allocate " << bytes << " bytes of host memory for a tensor of shape "
        << shape_str(shape) << " and dtype " << dtype.name();
    try {
      return Tensor::from_blob(block->ptr, shape, dtype, device, return_tensor_block, block);
    } catch (...) {
      HostBlockCache::global().give_back(block);
      throw;
    }
  }

  CpuAllocator& raw_;
};

class CpuBackend final : public runtime::Backend {
 public:
  const std::string& target() const override { return target_; }
  DeviceType device_type() const override { return DeviceType::kCPU; }
  bool available() const override { return true; }

  Device default_device() const override { return Device::cpu(); }
  // The host runs a tile body or a "cpu" source body, behind every other
  // target that can run the function (rank 0; CUDA's is 1). It limits
  // nothing beyond ir::validate(): a block runs on one thread whatever
  // `threads` is.
  int auto_rank(const ir::PrimFunc& func) const override {
    return func.is_tile() || func.sources().count(target_) ? 0 : -1;
  }

  runtime::GeneratedSource generate(const runtime::SourceRequest& request) const override {
    return cpu::generate_source(request);
  }
  std::string toolchain_key(const runtime::CompileOptions& options, Device) override {
    return cpu::toolchain_key(options);
  }
  std::string compile(const std::string& source, const std::string& kernel_name,
                      const runtime::CompileOptions& options, Device) override {
    return compile_source(source, kernel_name, options);
  }
  std::unique_ptr<runtime::Module> load(const std::string& binary, const runtime::KernelAbi& abi,
                                        Device device) override {
    check_cpu(device, "load");
    return load_module(binary, abi);
  }

  std::string export_library(const runtime::ExportRequest& request) override {
    return cpu::export_library(request);
  }

  runtime::Allocator& allocator() override { return allocator_; }
  runtime::TensorAllocator& tensor_allocator() override { return tensor_allocator_; }
  void memset_async(void* ptr, int value, size_t bytes, Device device,
                    runtime::Stream) override {
    check_cpu(device, "memset");
    if (bytes != 0) std::memset(ptr, value, bytes);
  }

 private:
  const std::string target_ = "cpu";
  CpuAllocator allocator_;
  CpuTensorAllocator tensor_allocator_{allocator_};
};

const runtime::BackendRegistration kRegistration(
    []() -> std::unique_ptr<runtime::Backend> { return std::make_unique<CpuBackend>(); });

}  // namespace

HostCacheStats host_cache_stats() { return HostBlockCache::global().stats(); }
void set_host_cache_limit(size_t bytes) { HostBlockCache::global().set_limit(bytes); }
size_t host_cache_limit() { return HostBlockCache::global().limit(); }
size_t empty_host_cache() { return HostBlockCache::global().empty(); }

}  // namespace tilejit::cpu

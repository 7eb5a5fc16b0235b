// The CUDA backend's memory, streams and events: the raw Allocator the
// workspace pool uses, the default TensorAllocator for outputs, memset,
// the per-thread current stream, and the events of Note [Stream-ordered
// reuse] (workspace_pool.h).
//
// Note [Allocating under capture]
// Memory comes from a stream-ordered pool (cuMemAllocFromPoolAsync /
// cuMemFreeAsync on the caller's stream; Note [Own memory pool] in
// cuda_driver.cpp) when the device supports it, else from cuMemAlloc /
// cuMemFree. A capturing stream would record an
// allocation or a free as a graph node instead of doing it, so:
//  - an allocation asked for on a capturing stream is made on the device's
//    private side stream (non-blocking, never captured) and waited for, in
//    relaxed capture mode; the memory is then ordinary memory any stream and
//    any graph may use;
//  - a free asked for on a capturing stream (or on the legacy stream while
//    some blocking stream captures) is queued and done on that stream by a
//    later allocation or free of this backend once the capture has ended.
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_graph_hook.h"
#include "tilejit/backend/cuda.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/workspace_pool.h"

namespace tilejit::cuda {
namespace {

constexpr uintptr_t kAlignment = 256;

thread_local void* tls_current_stream[kMaxDevices] = {};

CUstream as_stream(runtime::Stream s) { return static_cast<CUstream>(s); }

// Whether `stream` is capturing, for the memory paths: an error here (the
// legacy stream while a blocking stream captures) counts as capturing, so
// nothing touches the stream now.
bool capturing_for_memory(CUstream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = driver().cuStreamIsCapturing(stream, &status);
  return r != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

std::mutex side_stream_mutex;

// The device's private stream for allocations made outside a capture.
CUstream side_stream(DeviceState& s) {
  std::lock_guard<std::mutex> lock(side_stream_mutex);
  if (s.side_stream == nullptr) {
    RelaxedCaptureGuard relaxed;
    TILEJIT_CU(cuStreamCreate, &s.side_stream, CU_STREAM_NON_BLOCKING);
  }
  return s.side_stream;
}

// Frees queued while their stream was capturing (Note [Allocating under
// capture]).
struct DeferredFree {
  CUdeviceptr ptr;
  int device;
  CUstream stream;
};
std::mutex deferred_mutex;
std::vector<DeferredFree> deferred;
std::atomic<bool> has_deferred{false};

void free_now(CUdeviceptr ptr, const DeviceState& s, CUstream stream) noexcept {
  const DriverApi& api = driver();
  if (s.memory_pools) {
    api.cuMemFreeAsync(ptr, stream);
  } else {
    // cuMemFree does not wait for queued work that uses the block.
    RelaxedCaptureGuard relaxed;
    api.cuStreamSynchronize(stream);
    api.cuMemFree(ptr);
  }
}

// Frees, or queues when `stream` is capturing. The caller holds a
// ContextGuard for `device`.
void release(CUdeviceptr ptr, int device, const DeviceState& s, CUstream stream) noexcept {
  if (capturing_for_memory(stream)) {
    std::lock_guard<std::mutex> lock(deferred_mutex);
    deferred.push_back({ptr, device, stream});
    has_deferred.store(true, std::memory_order_release);
    return;
  }
  free_now(ptr, s, stream);
}

void drain_deferred(int device, const DeviceState& s) noexcept {
  if (!has_deferred.load(std::memory_order_acquire)) return;
  std::vector<DeferredFree> ready;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex);
    for (size_t i = 0; i < deferred.size();) {
      if (deferred[i].device == device && !capturing_for_memory(deferred[i].stream)) {
        ready.push_back(deferred[i]);
        deferred[i] = deferred.back();
        deferred.pop_back();
      } else {
        ++i;
      }
    }
    has_deferred.store(!deferred.empty(), std::memory_order_release);
  }
  for (const DeferredFree& f : ready) free_now(f.ptr, s, f.stream);
}

CUresult alloc_async(const DeviceState& s, CUdeviceptr* ptr, size_t bytes, CUstream stream) {
  const DriverApi& api = driver();
  return s.pool ? api.cuMemAllocFromPoolAsync(ptr, bytes, s.pool, stream)
                : api.cuMemAllocAsync(ptr, bytes, stream);
}

class CudaAllocator final : public runtime::Allocator {
 public:
  void* allocate(size_t bytes, Device device, runtime::Stream stream) override {
    check_cuda_device(device, "allocate");
    ContextGuard guard(device.id);
    DeviceState& s = guard.state();
    drain_deferred(device.id, s);
    const DriverApi& api = driver();
    CUdeviceptr ptr = 0;
    CUresult r;
    const char* what;
    if (bytes == 0) bytes = 1;  // a unique pointer, as from malloc
    if (s.memory_pools) {
      const bool capturing = capturing_for_memory(as_stream(stream));
      // Under capture: on the side stream, outside the capture, waited for.
      std::optional<RelaxedCaptureGuard> relaxed;
      if (capturing) relaxed.emplace();
      CUstream on = capturing ? side_stream(s) : as_stream(stream);
      what = s.pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync";
      r = alloc_async(s, &ptr, bytes, on);
      if (r == CUDA_ERROR_OUT_OF_MEMORY && s.pool && api.cuMemPoolTrimTo != nullptr) {
        // Note [Own memory pool]: give back what the pool holds unused, once.
        api.cuMemPoolTrimTo(s.pool, 0);
        r = alloc_async(s, &ptr, bytes, on);
      }
      if (r == CUDA_SUCCESS && capturing) {
        r = api.cuStreamSynchronize(on);
        what = "cuStreamSynchronize";
      }
    } else {
      what = "cuMemAlloc";
      RelaxedCaptureGuard relaxed;
      r = api.cuMemAlloc(&ptr, bytes);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) {
      throw_driver_error(r, what,
                         "cuda allocate of " + std::to_string(bytes) + " bytes on " + device.str());
    }
    TILEJIT_ICHECK(ptr % kAlignment == 0) << "the driver returned " << ptr << " for " << bytes
                                          << " bytes, not " << kAlignment << "-byte aligned";
    return reinterpret_cast<void*>(ptr);
  }

  void deallocate(void* ptr, size_t, Device device, runtime::Stream stream) noexcept override {
    if (ptr == nullptr) return;
    try {
      ContextGuard guard(device.id);
      release(reinterpret_cast<CUdeviceptr>(ptr), device.id, guard.state(), as_stream(stream));
    } catch (...) {
      // Only at exit, with the driver gone: the memory goes with the process.
    }
  }
};

CudaAllocator& raw_allocator() {
  static CudaAllocator* a = new CudaAllocator;  // never destroyed: see registry.cpp
  return *a;
}

// Note [Freeing output tensors]
// An output's memory goes back to the device's pool on the stream it was
// allocated on, which is the stream of the call that made it: the free is
// ordered after every kernel queued there, the producing one included, and
// costs the host nothing. This is the rule of PyTorch's caching allocator:
// a tensor belongs to its allocation stream. A caller that uses the tensor
// on another stream must order that stream's work before the tensor's last
// reference goes (synchronise, or wait on an event), and a stream must
// outlive the tensors allocated on it. (The legacy default stream would
// spare the latter rule but orders nothing with non-blocking streams, which
// is what torch's and most applications' streams are.)
struct TensorMemory {
  CUdeviceptr ptr;
  int device;
  CUstream stream;
};

void free_tensor_memory(void* context) noexcept {
  auto* m = static_cast<TensorMemory*>(context);
  try {
    ContextGuard guard(m->device);
    release(m->ptr, m->device, guard.state(), m->stream);
  } catch (...) {
    // Only at exit, with the driver gone.
  }
  delete m;
}

// Note [Cached outputs]
// Outputs made by tilejit (C++ callers; Python's torch outputs come from
// torch's allocator) are carved from a WorkspacePool of their own per device,
// so a call in steady state makes no driver allocation for its outputs
// either: the block goes back when the tensor's last reference goes, on the
// stream it was allocated on (Note [Freeing output tensors]), and the pool's
// stream-ordered reuse applies. The pool's block record is the tensor's
// deleter context (WorkspacePool::release_block is the deleter), so an
// output costs one allocation: the tensor's own.
// TILEJIT_CUDA_CACHE_OUTPUTS=0 turns it off (each output is then one
// cuMemAllocFromPoolAsync / cuMemFreeAsync pair).

bool cache_outputs() {
  static const bool on = [] {
    const char* env = std::getenv("TILEJIT_CUDA_CACHE_OUTPUTS");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

runtime::WorkspacePool& output_pool(runtime::Backend& backend, int device) {
  TILEJIT_CHECK(device >= 0 && device < kMaxDevices, kValueError)
      << "empty: device cuda:" << device << " is out of range";
  // Made once per device and never destroyed (see registry.cpp); the lock is
  // taken only to make one.
  static std::atomic<runtime::WorkspacePool*> pools[kMaxDevices] = {};
  runtime::WorkspacePool* pool = pools[device].load(std::memory_order_acquire);
  if (TILEJIT_LIKELY(pool != nullptr)) return *pool;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  pool = pools[device].load(std::memory_order_relaxed);
  if (pool == nullptr) {
    pool = new runtime::WorkspacePool(backend, Device::cuda(device));
    pools[device].store(pool, std::memory_order_release);
  }
  return *pool;
}

class CudaTensorAllocator final : public runtime::TensorAllocator {
 public:
  // The backend that owns this allocator; its output pools hold it.
  explicit CudaTensorAllocator(runtime::Backend& backend) : backend_(backend) {}

  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream stream) override {
    check_cuda_device(device, "empty");
    return make(shape, dtype, device, stream, cache_outputs() && cuda::is_capturing(device, stream));
  }

  Tensor empty(std::span<const int64_t> shape, DataType dtype,
               const runtime::AllocContext& ctx) override {
    check_cuda_device(ctx.device, "empty");
    return make(shape, dtype, ctx.device, ctx.stream, ctx.capturing);
  }

 private:
  // `device` is a CUDA device; `capturing` says whether `stream` captures.
  Tensor make(std::span<const int64_t> shape, DataType dtype, Device device,
              runtime::Stream stream, bool capturing) {
    const int64_t bytes = runtime::tensor_bytes(shape, dtype);
    // Under capture the pool makes the block the graph's too (Note
    // [Graph-owned arenas]).
    if (cache_outputs() && bytes > 0) {
      runtime::WorkspacePool::Lease lease = output_pool(backend_, device.id)
                                                .acquire(size_t(bytes), {device, stream, capturing});
      try {
        return Tensor::from_blob(lease.ptr, shape, dtype, device,
                                 &runtime::WorkspacePool::release_block, lease.block);
      } catch (...) {
        runtime::WorkspacePool::release_block(lease.block);
        throw;
      }
    }
    void* ptr = raw_allocator().allocate(size_t(bytes), device, stream);
    TILEJIT_CHECK(ptr != nullptr, kOutOfMemoryError)
        << "empty: cannot allocate " << bytes << " bytes on " << device.str()
        << " for a tensor of shape " << shape_str(shape) << " and dtype " << dtype.name()
        << " (the device is out of memory)";
    TensorMemory* context = nullptr;
    try {
      context = new TensorMemory{reinterpret_cast<CUdeviceptr>(ptr), device.id, as_stream(stream)};
      return Tensor::from_blob(ptr, shape, dtype, device, free_tensor_memory, context);
    } catch (...) {
      if (context != nullptr) {
        free_tensor_memory(context);
      } else {
        raw_allocator().deallocate(ptr, size_t(bytes), device, stream);
      }
      throw;
    }
  }

  runtime::Backend& backend_;
};

// Events: one free list per device (an event belongs to its context), so a
// release does not create an event each time.
struct EventRecord {
  CUevent event = nullptr;
  int device = 0;
};
std::mutex event_mutex;
std::vector<std::vector<EventRecord*>> free_events;  // by device id

}  // namespace

void throw_not_cuda_device(Device device, const char* what) {
  TILEJIT_THROW(kValueError) << "cuda backend: " << what << " on device '" << device.str()
                             << "', which is not a CUDA device";
}

runtime::Allocator& allocator() { return raw_allocator(); }

runtime::TensorAllocator& tensor_allocator(runtime::Backend& backend) {
  // One backend is registered for "cuda"; never destroyed (see registry.cpp).
  static CudaTensorAllocator* a = new CudaTensorAllocator(backend);
  return *a;
}

void memset_async(void* ptr, int value, size_t bytes, Device device, runtime::Stream stream) {
  check_cuda_device(device, "memset");
  if (bytes == 0) return;
  ContextGuard guard(device.id);
  TILEJIT_CU(cuMemsetD8Async, reinterpret_cast<CUdeviceptr>(ptr), static_cast<unsigned char>(value),
             bytes, as_stream(stream));
}

void copy_sync(void* dst, const void* src, size_t bytes, Device device, runtime::Stream stream) {
  check_cuda_device(device, "copy");
  if (bytes == 0) return;
  ContextGuard guard(device.id);
  // Unified addressing lets cuMemcpy tell host from device pointers; it is
  // ordered after the legacy stream, so wait for `stream` first.
  TILEJIT_CU(cuStreamSynchronize, as_stream(stream));
  TILEJIT_CHECK(driver().cuMemcpy != nullptr, kRuntimeError) << "copy: the driver lacks cuMemcpy";
  TILEJIT_CU(cuMemcpy, reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes);
}

runtime::Stream current_stream(Device device) {
  check_cuda_device(device, "current_stream");
  return cuda::current_stream(device.id);
}

runtime::Event record_event(Device device, runtime::Stream stream) {
  check_cuda_device(device, "record_event");
  ContextGuard guard(device.id);
  EventRecord* rec = nullptr;
  {
    std::lock_guard<std::mutex> lock(event_mutex);
    if (size_t(device.id) < free_events.size() && !free_events[size_t(device.id)].empty()) {
      rec = free_events[size_t(device.id)].back();
      free_events[size_t(device.id)].pop_back();
    }
  }
  if (rec == nullptr) {
    CUevent event = nullptr;
    TILEJIT_CU(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
    rec = new EventRecord{event, device.id};
  }
  const CUresult r = driver().cuEventRecord(rec->event, as_stream(stream));
  if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) {
    destroy_event(rec);
    throw_driver_error(r, "cuEventRecord", "cuda record_event on " + device.str());
  }
  return rec;
}

bool event_completed(runtime::Event event) {
  if (event == nullptr) return true;
  const auto* rec = static_cast<const EventRecord*>(event);
  ContextGuard guard(rec->device);
  const CUresult r = driver().cuEventQuery(rec->event);
  if (r == CUDA_SUCCESS) return true;
  if (r == CUDA_ERROR_NOT_READY) return false;
  throw_driver_error(r, "cuEventQuery", "cuda event_completed");
}

void destroy_event(runtime::Event event) noexcept {
  if (event == nullptr) return;
  auto* rec = static_cast<EventRecord*>(event);
  try {
    std::lock_guard<std::mutex> lock(event_mutex);
    if (free_events.size() <= size_t(rec->device)) free_events.resize(size_t(rec->device) + 1);
    free_events[size_t(rec->device)].push_back(rec);
  } catch (...) {
    // Out of host memory growing the list: the record is dropped, and the
    // event with it (still valid, never destroyed: harmless).
  }
}

bool is_capturing(Device device, runtime::Stream stream) {
  check_cuda_device(device, "is_capturing");
  return capture_graph(device, stream, nullptr);
}

// ---- public API (tilejit/backend/cuda.h) ----------------------------------

void set_current_stream(int device, void* stream) {
  TILEJIT_CHECK(device >= 0 && device < kMaxDevices, kValueError)
      << "set_current_stream: device " << device << " is not in [0, " << kMaxDevices << ")";
  tls_current_stream[device] = stream;
}

void* current_stream(int device) {
  TILEJIT_CHECK(device >= 0 && device < kMaxDevices, kValueError)
      << "current_stream: device " << device << " is not in [0, " << kMaxDevices << ")";
  return tls_current_stream[device];
}

int device_count() noexcept {
  const DriverApi* api = driver_or_null();
  return api ? api->device_count : 0;
}

std::string unavailable_reason() { return driver_unavailable_reason(); }

}  // namespace tilejit::cuda

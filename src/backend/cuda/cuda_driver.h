// The CUDA driver API, reached through dlopen("libcuda.so.1"): a table of
// function pointers, the error check that turns a CUresult into an Error,
// per-device state (primary context, compute capability, attributes), and the
// RAII guards every driver call runs under.
//
// Note [Driver through dlopen]
// libtilejit links neither libcuda nor libnvrtc: the library must load, and
// the CPU backend work, on machines without CUDA. cuda.h is used for its
// types and prototypes only. Each entry of the table is declared with the
// type of the prototype that cuda.h's macros select (cuMemAlloc is
// cuMemAlloc_v2, cuStreamGetCaptureInfo is cuStreamGetCaptureInfo_v3, ...),
// and is looked up by that same expanded name, so the table always calls
// the ABI version whose signature it was compiled against. A required entry
// that is missing makes the driver unavailable; an optional one (newer
// APIs, and what only the tests use) is nullptr and its users fall back.
#pragma once

#include <cuda.h>

#include <atomic>
#include <string>

#include "tilejit/core/error.h"

namespace tilejit::cuda {

// Entries without which the backend cannot run at all.
#define TILEJIT_CUDA_REQUIRED_API(X) \
  X(cuInit)                          \
  X(cuGetErrorName)                  \
  X(cuGetErrorString)                \
  X(cuDriverGetVersion)              \
  X(cuDeviceGet)                     \
  X(cuDeviceGetCount)                \
  X(cuDeviceGetAttribute)            \
  X(cuDeviceGetName)                 \
  X(cuDevicePrimaryCtxRetain)        \
  X(cuCtxGetCurrent)                 \
  X(cuCtxSetCurrent)                 \
  X(cuModuleLoadData)                \
  X(cuModuleUnload)                  \
  X(cuModuleGetFunction)             \
  X(cuFuncGetAttribute)              \
  X(cuFuncSetAttribute)              \
  X(cuLaunchKernel)                  \
  X(cuMemAlloc)                      \
  X(cuMemFree)                       \
  X(cuMemsetD8Async)                 \
  X(cuEventCreate)                   \
  X(cuEventRecord)                   \
  X(cuEventQuery)                    \
  X(cuEventDestroy)                  \
  X(cuStreamCreate)                  \
  X(cuStreamSynchronize)             \
  X(cuStreamIsCapturing)

// Entries the backend uses when present (stream-ordered allocation: 11.2;
// user objects: 11.3; capture info v3: 12.3; tensor maps: 12.0) and what the tests drive the
// device with.
#define TILEJIT_CUDA_OPTIONAL_API(X)   \
  X(cuMemAllocAsync)                   \
  X(cuMemFreeAsync)                    \
  X(cuMemPoolCreate)                   \
  X(cuMemPoolSetAttribute)             \
  X(cuMemPoolTrimTo)                   \
  X(cuMemAllocFromPoolAsync)           \
  X(cuThreadExchangeStreamCaptureMode) \
  X(cuStreamGetCaptureInfo)            \
  X(cuUserObjectCreate)                \
  X(cuUserObjectRelease)               \
  X(cuGraphRetainUserObject)           \
  X(cuMemcpy)                          \
  X(cuMemcpyHtoD)                      \
  X(cuMemcpyDtoH)                      \
  X(cuMemsetD8)                        \
  X(cuStreamDestroy)                   \
  X(cuStreamWaitEvent)                 \
  X(cuStreamBeginCapture)              \
  X(cuStreamEndCapture)                \
  X(cuGraphInstantiate)                \
  X(cuGraphLaunch)                     \
  X(cuGraphExecDestroy)                \
  X(cuGraphDestroy)                    \
  X(cuCtxSynchronize)                  \
  X(cuTensorMapEncodeTiled)

/// cuStreamGetCaptureInfo before CUDA 12.3 (no edge data); used when the
/// driver lacks the _v3 entry.
using StreamGetCaptureInfoV2 = CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*,
                                                  CUgraph*, const CUgraphNode**, size_t*);

struct DriverApi {
#define TILEJIT_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  TILEJIT_CUDA_REQUIRED_API(TILEJIT_CUDA_MEMBER)
  TILEJIT_CUDA_OPTIONAL_API(TILEJIT_CUDA_MEMBER)
#undef TILEJIT_CUDA_MEMBER
  StreamGetCaptureInfoV2 cuStreamGetCaptureInfo_v2_compat = nullptr;

  int driver_version = 0;  // cuDriverGetVersion: 12040 is CUDA 12.4
  int device_count = 0;
};

/// Device ids the backend keeps a slot for: a lock-free state pointer (Note
/// [Driver fast paths]; a higher id still works, on the slow path), a
/// per-thread current stream and an output pool (cuda_memory.cpp).
inline constexpr int kMaxDevices = 64;

struct DeviceState;

// Note [Driver fast paths]
// driver() and device_state() run several times in every call. Each is an
// acquire load of a pointer published once the driver (or the device) is
// ready; only the first use, and every use after a failure, takes the slow
// path that loads, initialises and reports errors. (std::call_once alone
// costs a pthread_once and two thread-local stores per use.)
namespace detail {
extern std::atomic<const DriverApi*> ready_driver;
extern std::atomic<DeviceState*> ready_states[kMaxDevices];
const DriverApi& driver_slow();
DeviceState& device_state_slow(int id);
}  // namespace detail

/// The driver table, or nullptr when libcuda cannot be loaded, cuInit fails,
/// or there is no device. Loaded once, thread-safe, never unloaded.
const DriverApi* driver_or_null() noexcept;
/// Why driver_or_null() is nullptr ("" when it is not).
const std::string& driver_unavailable_reason() noexcept;
/// The driver table; throws RuntimeError with the reason when unavailable.
inline const DriverApi& driver() {
  const DriverApi* api = detail::ready_driver.load(std::memory_order_acquire);
  if (TILEJIT_LIKELY(api != nullptr)) return *api;
  return detail::driver_slow();
}

/// "CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid".
std::string describe(CUresult result);

/// Throws the Error for a failed driver call: "<context>: <api> failed:
/// <NAME> (<code>): <description>" (no context prefix when `context` is
/// empty). kOutOfMemoryError for CUDA_ERROR_OUT_OF_MEMORY, else
/// kRuntimeError.
[[noreturn, gnu::cold, gnu::noinline]] void throw_driver_error(CUresult result, const char* api,
                                                               const std::string& context = "");

inline void check(CUresult result, const char* api) {
  if (TILEJIT_UNLIKELY(result != CUDA_SUCCESS)) throw_driver_error(result, api);
}

/// Calls a driver entry by its name in cuda.h and checks the result, naming
/// the API as the reader wrote it (`cuMemAlloc`, not `cuMemAlloc_v2`).
#define TILEJIT_CU(api, ...) ::tilejit::cuda::check(::tilejit::cuda::driver().api(__VA_ARGS__), #api)

/// What the backend knows about one device, filled on first use.
struct DeviceState {
  CUdevice device = 0;
  CUcontext context = nullptr;  // the retained primary context
  int cc_major = 0;
  int cc_minor = 0;
  bool memory_pools = false;     // cuMemAllocAsync usable
  /// tilejit's own stream-ordered pool on the device (Note [Own memory
  /// pool] in cuda_driver.cpp), or nullptr: then the device's default pool.
  CUmemoryPool pool = nullptr;
  int max_smem_optin = 0;        // dynamic + static shared memory per block
  int max_threads_per_block = 0;
  CUstream side_stream = nullptr;  // Note [Allocating under capture]; made on first use
};

/// The state of device `id`; throws ValueError for an id that does not
/// exist and RuntimeError when the driver is unavailable.
inline DeviceState& device_state(int id) {
  if (TILEJIT_LIKELY(unsigned(id) < unsigned(kMaxDevices))) {
    DeviceState* s = detail::ready_states[id].load(std::memory_order_acquire);
    if (TILEJIT_LIKELY(s != nullptr)) return *s;
  }
  return detail::device_state_slow(id);
}

/// Makes device `id`'s primary context current on this thread for the
/// guard's lifetime. A thread with no current context keeps ours afterwards
/// (the next call then costs one cuCtxGetCurrent); a thread whose current
/// context was another one gets it back, so a host application's own
/// context handling is undisturbed.
class ContextGuard {
 public:
  explicit ContextGuard(int device) : state_(device_state(device)) {
    CUcontext current = nullptr;
    check(driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (TILEJIT_UNLIKELY(current != state_.context)) make_current(current);
  }
  ~ContextGuard() {
    // Only a context someone else made current is restored; nothing can be
    // reported from a destructor, and a failure here leaves ours current,
    // which every later call of ours checks anyway.
    if (TILEJIT_UNLIKELY(previous_ != nullptr)) driver().cuCtxSetCurrent(previous_);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  DeviceState& state() const noexcept { return state_; }

 private:
  void make_current(CUcontext current);

  DeviceState& state_;
  CUcontext previous_ = nullptr;
};

/// Switches this thread's stream-capture mode to relaxed for the guard's
/// lifetime, so that a call the capture rules call "potentially unsafe"
/// (cuMemAlloc, a synchronisation of a stream that is not capturing) is
/// allowed while some stream is capturing in global mode. A no-op when the
/// driver lacks cuThreadExchangeStreamCaptureMode.
class RelaxedCaptureGuard {
 public:
  RelaxedCaptureGuard() noexcept;
  ~RelaxedCaptureGuard();
  RelaxedCaptureGuard(const RelaxedCaptureGuard&) = delete;
  RelaxedCaptureGuard& operator=(const RelaxedCaptureGuard&) = delete;

 private:
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool active_ = false;
};

}  // namespace tilejit::cuda

// Loading the CUDA driver (Note [Driver through dlopen] in cuda_driver.h),
// the driver error messages, and per-device state.
#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

#define TILEJIT_CUDA_STR2(x) #x
// Stringifies after macro expansion: the versioned name cuda.h selects.
#define TILEJIT_CUDA_STR(x) TILEJIT_CUDA_STR2(x)

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string reason;
  // One slot per device, each filled under its own once_flag: states are
  // never moved or freed, so references handed out stay valid.
  std::vector<std::unique_ptr<DeviceState>> states;
  std::vector<std::unique_ptr<std::once_flag>> state_once;
};

// Why a successful-looking load is still unusable, named like the driver's
// own errors so that the message reads the same as a failing call.
std::string call_failure(const DriverApi& api, CUresult r, const char* name) {
  const char* err_name = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &err_name) != CUDA_SUCCESS) {
    err_name = "unknown error";
  }
  return std::string(name) + " failed: " + err_name + " (" + std::to_string(int(r)) + ")";
}

Loaded* load_driver() {
  auto* l = new Loaded;  // never freed: other static objects may use the driver at exit
  // RTLD_NODELETE: the driver stays mapped even if something dlclose()s it.
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* e = dlerror();
    l->reason = std::string("cannot load libcuda.so.1: ") + (e ? e : "unknown dlerror");
    return l;
  }
  DriverApi& api = l->api;
  std::string missing;
#define TILEJIT_CUDA_LOAD_REQUIRED(name)                                                     \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, TILEJIT_CUDA_STR(name))); \
  if (api.name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + TILEJIT_CUDA_STR(name);
#define TILEJIT_CUDA_LOAD_OPTIONAL(name) \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, TILEJIT_CUDA_STR(name)));
  TILEJIT_CUDA_REQUIRED_API(TILEJIT_CUDA_LOAD_REQUIRED)
  TILEJIT_CUDA_OPTIONAL_API(TILEJIT_CUDA_LOAD_OPTIONAL)
#undef TILEJIT_CUDA_LOAD_REQUIRED
#undef TILEJIT_CUDA_LOAD_OPTIONAL
  api.cuStreamGetCaptureInfo_v2_compat =
      reinterpret_cast<StreamGetCaptureInfoV2>(dlsym(handle, "cuStreamGetCaptureInfo_v2"));
  if (!missing.empty()) {
    l->reason = "libcuda.so.1 lacks " + missing + " (the driver is too old for this tilejit)";
    return l;
  }
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    l->reason = call_failure(api, r, "cuInit");
    return l;
  }
  if (CUresult r = api.cuDriverGetVersion(&api.driver_version); r != CUDA_SUCCESS) {
    l->reason = call_failure(api, r, "cuDriverGetVersion");
    return l;
  }
  if (CUresult r = api.cuDeviceGetCount(&api.device_count); r != CUDA_SUCCESS) {
    l->reason = call_failure(api, r, "cuDeviceGetCount");
    return l;
  }
  if (api.device_count <= 0) {
    l->reason = "the CUDA driver reports no devices";
    return l;
  }
  for (int i = 0; i < api.device_count; ++i) {
    l->states.push_back(std::make_unique<DeviceState>());
    l->state_once.push_back(std::make_unique<std::once_flag>());
  }
  l->ok = true;
  return l;
}

Loaded& loaded() {
  static Loaded* l = load_driver();
  return *l;
}

int attribute(const DriverApi& api, CUdevice dev, CUdevice_attribute a, const std::string& what) {
  int value = 0;
  CUresult r = api.cuDeviceGetAttribute(&value, a, dev);
  if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) throw_driver_error(r, "cuDeviceGetAttribute", what);
  return value;
}

// Note [Own memory pool]
// Stream-ordered allocations come from a pool tilejit creates per device
// rather than the device's default pool, for two reasons. The default pool
// returns its memory to the system at every synchronisation (release
// threshold 0), so an output allocated and freed per call would map fresh
// memory each time after a sync; ours keeps what it has (threshold: no
// limit) and trims only when an allocation fails (cuda_memory.cpp). And its
// settings are ours to choose without changing the process-wide default pool
// that other libraries in the process may use. If the pool cannot be made,
// the default pool serves.
CUmemoryPool create_pool(const DriverApi& api, int id) {
  if (api.cuMemPoolCreate == nullptr || api.cuMemPoolSetAttribute == nullptr ||
      api.cuMemAllocFromPoolAsync == nullptr) {
    return nullptr;
  }
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = id;
  CUmemoryPool pool = nullptr;
  if (api.cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return nullptr;
  cuuint64_t keep_all = ~cuuint64_t{0};
  api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
  return pool;
}

void init_state(const DriverApi& api, int id, DeviceState& s) {
  const std::string where = "cuda:" + std::to_string(id);
  CUresult r = api.cuDeviceGet(&s.device, id);
  if (r != CUDA_SUCCESS) throw_driver_error(r, "cuDeviceGet", where);
  // Retained once, never released: modules, memory and events of the device
  // live in this context for the life of the process, as with the runtime
  // API (and torch, which uses the same primary context).
  r = api.cuDevicePrimaryCtxRetain(&s.context, s.device);
  if (r != CUDA_SUCCESS) throw_driver_error(r, "cuDevicePrimaryCtxRetain", where);
  s.cc_major = attribute(api, s.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, where);
  s.cc_minor = attribute(api, s.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, where);
  s.max_smem_optin =
      attribute(api, s.device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, where);
  s.max_threads_per_block =
      attribute(api, s.device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, where);
  s.memory_pools = api.cuMemAllocAsync != nullptr && api.cuMemFreeAsync != nullptr &&
                   attribute(api, s.device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, where) != 0;
  if (s.memory_pools) s.pool = create_pool(api, id);
}

}  // namespace

namespace detail {
std::atomic<const DriverApi*> ready_driver{nullptr};
std::atomic<DeviceState*> ready_states[kMaxDevices] = {};
}  // namespace detail

const DriverApi* driver_or_null() noexcept {
  Loaded& l = loaded();
  return l.ok ? &l.api : nullptr;
}

const std::string& driver_unavailable_reason() noexcept { return loaded().reason; }

const DriverApi& detail::driver_slow() {
  Loaded& l = loaded();
  TILEJIT_CHECK(l.ok, kRuntimeError) << "cuda backend: the CUDA driver is not available: " << l.reason;
  detail::ready_driver.store(&l.api, std::memory_order_release);
  return l.api;
}

std::string describe(CUresult result) {
  // The table may be partly filled when loading failed; each entry is
  // checked before use.
  const DriverApi* api = &loaded().api;
  const char* name = nullptr;
  const char* text = nullptr;
  if (api == nullptr || api->cuGetErrorName == nullptr ||
      api->cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "unknown CUDA error";
  }
  if (api == nullptr || api->cuGetErrorString == nullptr ||
      api->cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string out = std::string(name) + " (" + std::to_string(int(result)) + ")";
  if (text != nullptr && *text != '\0') out += std::string(": ") + text;
  return out;
}

void throw_driver_error(CUresult result, const char* api, const std::string& context) {
  const ErrorKind kind =
      result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorKind::kOutOfMemoryError : ErrorKind::kRuntimeError;
  std::ostringstream os;
  if (!context.empty()) os << context << ": ";
  os << api << " failed: " << describe(result);
  throw Error(kind, os.str());
}

DeviceState& detail::device_state_slow(int id) {
  const DriverApi& api = driver();
  Loaded& l = loaded();
  if (TILEJIT_UNLIKELY(id < 0 || id >= api.device_count)) {
    TILEJIT_THROW(kValueError) << "cuda backend: device cuda:" << id << " does not exist (the driver reports "
                               << api.device_count << " device" << (api.device_count == 1 ? "" : "s")
                               << ")";
  }
  DeviceState& s = *l.states[size_t(id)];
  // call_once: a failed init throws out of it and leaves the flag unset, so
  // the next use tries again and reports the error again.
  std::call_once(*l.state_once[size_t(id)], [&] { init_state(api, id, s); });
  if (id < kMaxDevices) detail::ready_states[id].store(&s, std::memory_order_release);
  return s;
}

void ContextGuard::make_current(CUcontext current) {
  check(driver().cuCtxSetCurrent(state_.context), "cuCtxSetCurrent");
  previous_ = current;
}

RelaxedCaptureGuard::RelaxedCaptureGuard() noexcept {
  const DriverApi* api = driver_or_null();
  if (api == nullptr || api->cuThreadExchangeStreamCaptureMode == nullptr) return;
  previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  active_ = api->cuThreadExchangeStreamCaptureMode(&previous_) == CUDA_SUCCESS;
}

RelaxedCaptureGuard::~RelaxedCaptureGuard() {
  if (active_) driver_or_null()->cuThreadExchangeStreamCaptureMode(&previous_);
}

}  // namespace tilejit::cuda

// The fixed part of a CUDA export's launcher unit (Note [CUDA export] in
// src/export/export_library.cpp); cuda_export.cpp writes the includes and
// the tables before it (launcher_tables.h stands in for them where this file
// compiles on its own, ctest export.runtime.cuda_launcher).
//
// It defines the wrapper's hooks (runtime::ExportRequest; declared in
// src/export/runtime/wrapper_types.h) over the driver API, opened with
// dlopen: the library needs no CUDA header to build and no libcuda to load.
// The driver's few types are declared here as cuda.h declares them (opaque
// handles, int enums, the values of the attributes used), and every entry
// but cuInit and cuGetErrorName/String is resolved through cuGetProcAddress
// at the ABI version of the signature declared (kApiVersion), as
// cuda_driver.h does by the versioned names.
#include "launcher_tables.h"
// ---- embedded from the next line on ----
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st* CUgraph;
typedef struct CUuserObject_st* CUuserObject;

struct tilejit_export_call {
  int device_id;
  void* stream;
  void* target;
  void* saved;
};
extern "C" void tilejit_export_end(tilejit_export_call* call);
extern "C" int tilejit_export_graph_alloc(tilejit_export_call* call, size_t bytes, void** ptr,
                                          void (*release)(void*), void* context, char* error,
                                          size_t size);

namespace {

constexpr CUresult kSuccess = 0;
constexpr int kAttrCcMajor = 75;        // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;        // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrSmemOptin = 97;      // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kAttrMemoryPools = 115;   // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
constexpr int kFuncStaticSmem = 1;      // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
constexpr int kFuncMaxDynamicSmem = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kApiVersion = 12000;      // the signatures below are CUDA 12.0's
constexpr int64_t kDefaultSmemLimit = 48 * 1024;
constexpr int kMaxContexts = 64;
enum : int { kOk = 0, kValueError = 2, kRuntimeError = 3, kOutOfMemory = 4 };

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuStreamIsCapturing)(CUstream, int*);
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream);  // optional (11.2)
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);            // optional (11.2)
  // Graph capture (optional, 11.3): the graph a stream captures into
  // (cuStreamGetCaptureInfo _v3 from 12.3, with edge data; _v2 before), the
  // capture mode, and user objects.
  CUresult (*cuStreamGetCaptureInfo3)(CUstream, int*, uint64_t*, CUgraph*, const void**,
                                      const void**, size_t*);
  CUresult (*cuStreamGetCaptureInfo2)(CUstream, int*, uint64_t*, CUgraph*, const void**, size_t*);
  CUresult (*cuThreadExchangeStreamCaptureMode)(int*);
  CUresult (*cuUserObjectCreate)(CUuserObject*, void*, void (*)(void*), unsigned, unsigned);
  CUresult (*cuGraphRetainUserObject)(CUgraph, CUuserObject, unsigned, unsigned);
  CUresult (*cuUserObjectRelease)(CUuserObject, unsigned);
  // TMA descriptors (optional, 12.0): CUtensorMap*, data type, rank,
  // address, dims, strides, box, element strides, interleave, swizzle, L2
  // promotion, out-of-bounds fill.
  CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*,
                                     const unsigned*, const unsigned*, int, int, int, int);
};

Driver g_driver;
bool g_driver_ok = false;
char g_driver_error[768];
pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

const char* error_name(CUresult r) {
  const char* name = nullptr;
  if (g_driver.cuGetErrorName == nullptr || g_driver.cuGetErrorName(r, &name) != kSuccess || !name) {
    name = "CUDA_ERROR_UNKNOWN";
  }
  return name;
}

const char* error_text(CUresult r) {
  const char* text = nullptr;
  if (g_driver.cuGetErrorString == nullptr || g_driver.cuGetErrorString(r, &text) != kSuccess ||
      !text) {
    text = "unknown error";
  }
  return text;
}

// Opens the driver once: a missing libcuda.so.1, a driver without
// cuGetProcAddress (before 11.3) or a failing cuInit leaves g_driver_ok
// false and the reason in g_driver_error, which every call then reports.
void load_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    snprintf(g_driver_error, sizeof g_driver_error, "cannot load the CUDA driver libcuda.so.1: %s",
             why != nullptr ? why : "unknown error");
    return;
  }
  typedef CUresult (*GetProc2)(const char*, void**, int, uint64_t, int*);
  typedef CUresult (*GetProc1)(const char*, void**, int, uint64_t);
  GetProc2 get2 = reinterpret_cast<GetProc2>(dlsym(h, "cuGetProcAddress_v2"));
  GetProc1 get1 = get2 != nullptr ? nullptr : reinterpret_cast<GetProc1>(dlsym(h, "cuGetProcAddress"));
  g_driver.cuInit = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(h, "cuInit"));
  g_driver.cuGetErrorName = reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(h, "cuGetErrorName"));
  g_driver.cuGetErrorString = reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(h, "cuGetErrorString"));
  if ((get1 == nullptr && get2 == nullptr) || g_driver.cuInit == nullptr) {
    snprintf(g_driver_error, sizeof g_driver_error,
             "the CUDA driver libcuda.so.1 lacks cuGetProcAddress (CUDA 11.3 or newer is needed)");
    return;
  }
  const CUresult init = g_driver.cuInit(0);
  if (init != kSuccess) {
    snprintf(g_driver_error, sizeof g_driver_error,
             "cannot initialise the CUDA driver libcuda.so.1: cuInit failed: %s (%d): %s",
             error_name(init), init, error_text(init));
    return;
  }
  const char* missing = nullptr;
  auto get_at = [&](const char* name, void* slot, bool required, int version) {
    void* fn = nullptr;
    int status = 0;
    // CU_GET_PROC_ADDRESS_LEGACY_STREAM: a NULL stream is the legacy default
    // stream, as the header says.
    const CUresult r = get2 != nullptr ? get2(name, &fn, version, 1, &status)
                                       : get1(name, &fn, version, 1);
    if (r != kSuccess) fn = nullptr;
    memcpy(slot, &fn, sizeof fn);
    if (fn == nullptr && required && missing == nullptr) missing = name;
  };
  auto get = [&](const char* name, void* slot, bool required) {
    get_at(name, slot, required, kApiVersion);
  };
#define TJ_GET(name, required) get(#name, &g_driver.name, required)
  TJ_GET(cuDeviceGet, true);
  TJ_GET(cuDeviceGetCount, true);
  TJ_GET(cuDeviceGetAttribute, true);
  TJ_GET(cuDevicePrimaryCtxRetain, true);
  TJ_GET(cuCtxGetCurrent, true);
  TJ_GET(cuCtxSetCurrent, true);
  TJ_GET(cuCtxGetDevice, true);
  TJ_GET(cuModuleLoadData, true);
  TJ_GET(cuModuleGetFunction, true);
  TJ_GET(cuFuncGetAttribute, true);
  TJ_GET(cuFuncSetAttribute, true);
  TJ_GET(cuLaunchKernel, true);
  TJ_GET(cuMemsetD8Async, true);
  TJ_GET(cuMemAlloc, true);
  TJ_GET(cuMemFree, true);
  TJ_GET(cuStreamIsCapturing, true);
  TJ_GET(cuMemAllocAsync, false);
  TJ_GET(cuMemFreeAsync, false);
  TJ_GET(cuThreadExchangeStreamCaptureMode, false);
  TJ_GET(cuUserObjectCreate, false);
  TJ_GET(cuGraphRetainUserObject, false);
  TJ_GET(cuUserObjectRelease, false);
  TJ_GET(cuTensorMapEncodeTiled, false);
#undef TJ_GET
  // The version decides the signature: ask for the one declared above.
  int version = 0;
  auto driver_version = reinterpret_cast<CUresult (*)(int*)>(dlsym(h, "cuDriverGetVersion"));
  if (driver_version != nullptr && driver_version(&version) == kSuccess && version >= 12030) {
    get_at("cuStreamGetCaptureInfo", &g_driver.cuStreamGetCaptureInfo3, false, 12030);
  } else {
    get_at("cuStreamGetCaptureInfo", &g_driver.cuStreamGetCaptureInfo2, false, 11030);
  }
  if (missing != nullptr) {
    snprintf(g_driver_error, sizeof g_driver_error,
             "the CUDA driver libcuda.so.1 has no %s (through cuGetProcAddress)", missing);
    return;
  }
  g_driver_ok = true;
}

// What a call needs of one context: the module loaded there, a function per
// launch and the dynamic shared memory each was opted in to. Made once per
// context, never freed (a context outlives the calls made in it).
struct Target {
  CUcontext context;
  int device;
  CUmodule module;
  CUfunction functions[kNumLaunches];
  int64_t smem_limit[kNumLaunches];  // under g_mutex; read relaxed
  int max_smem_optin;
  int cc_major, cc_minor;
  bool ordered_memory;  // cuMemAllocAsync usable on this device
};

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
Target* g_targets[kMaxContexts];  // published with release stores, read with acquire loads
int g_num_targets = 0;
CUcontext g_primary[kMaxContexts];  // retained primary contexts, by device id (under g_mutex)

__attribute__((cold, format(printf, 3, 4))) int report(char* error, size_t size, const char* fmt, ...) {
  int n = snprintf(error, size, "%s: ", kKernelName);
  if (n < 0 || size_t(n) >= size) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error + n, size - size_t(n), fmt, ap);
  va_end(ap);
  return kRuntimeError;
}

__attribute__((cold)) int driver_error(char* error, size_t size, CUresult r, const char* api,
                                       const char* what) {
  report(error, size, "%s%s%s failed: %s (%d): %s", what, what[0] ? ": " : "", api, error_name(r),
         int(r), error_text(r));
  return r == 2 ? kOutOfMemory : kRuntimeError;  // 2: CUDA_ERROR_OUT_OF_MEMORY
}

Target* find_target(CUcontext context) {
  const int n = __atomic_load_n(&g_num_targets, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i) {
    Target* t = __atomic_load_n(&g_targets[i], __ATOMIC_ACQUIRE);
    if (t->context == context) return t;
  }
  return nullptr;
}

// Loads the cubin, or the PTX when the cubin does not load on the device
// (another architecture), into the current context `context` of `device`.
__attribute__((cold)) int make_target(CUcontext context, int device, Target** out, char* error,
                                      size_t size) {
  pthread_mutex_lock(&g_mutex);
  if (Target* t = find_target(context)) {
    pthread_mutex_unlock(&g_mutex);
    *out = t;
    return kOk;
  }
  int st = kOk;
  Target* t = nullptr;
  if (g_num_targets == kMaxContexts) {
    st = report(error, size, "more than %d CUDA contexts called the library", kMaxContexts);
  } else {
    t = static_cast<Target*>(calloc(1, sizeof(Target)));
    if (t == nullptr) st = report(error, size, "cannot allocate the state of a CUDA context");
  }
  CUdevice dev = 0;
  CUresult r = kSuccess;
  if (st == kOk && (r = g_driver.cuDeviceGet(&dev, device)) != kSuccess) {
    st = driver_error(error, size, r, "cuDeviceGet", "");
  }
  int pools = 0;
  if (st == kOk) {
    t->context = context;
    t->device = device;
    g_driver.cuDeviceGetAttribute(&t->cc_major, kAttrCcMajor, dev);
    g_driver.cuDeviceGetAttribute(&t->cc_minor, kAttrCcMinor, dev);
    g_driver.cuDeviceGetAttribute(&t->max_smem_optin, kAttrSmemOptin, dev);
    g_driver.cuDeviceGetAttribute(&pools, kAttrMemoryPools, dev);
    t->ordered_memory = pools != 0 && g_driver.cuMemAllocAsync != nullptr &&
                        g_driver.cuMemFreeAsync != nullptr;
    CUresult cubin = -1;
    if (kCubinSize > 0) cubin = g_driver.cuModuleLoadData(&t->module, kCubin);
    if (cubin != kSuccess) {
      r = g_driver.cuModuleLoadData(&t->module, kPtx);
      if (r != kSuccess) {
        char why[256] = "none embedded";
        if (kCubinSize > 0) snprintf(why, sizeof why, "%s (%d)", error_name(cubin), int(cubin));
        st = report(error, size,
                    "cannot load the kernel on cuda:%d (compute capability %d.%d): the cubin (%s): "
                    "%s; the PTX (%s): %s (%d): %s",
                    device, t->cc_major, t->cc_minor, kCubinArch, why, kPtxArch, error_name(r),
                    int(r), error_text(r));
      }
    }
  }
  for (int l = 0; st == kOk && l < kNumLaunches; ++l) {
    if ((r = g_driver.cuModuleGetFunction(&t->functions[l], t->module, kEntries[l])) != kSuccess) {
      st = driver_error(error, size, r, "cuModuleGetFunction", "loading the kernel");
    } else {
      // Without opting in, static and dynamic shared memory share 48 KiB.
      int static_smem = 0;
      g_driver.cuFuncGetAttribute(&static_smem, kFuncStaticSmem, t->functions[l]);
      t->smem_limit[l] = kDefaultSmemLimit - static_smem;
    }
  }
  if (st != kOk) {
    free(t);  // a module that loaded stays with the context: a failure here is not retried often
    pthread_mutex_unlock(&g_mutex);
    return st;
  }
  __atomic_store_n(&g_targets[g_num_targets], t, __ATOMIC_RELEASE);
  __atomic_store_n(&g_num_targets, g_num_targets + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_mutex);
  *out = t;
  return kOk;
}

__attribute__((cold)) int primary_context(int device, CUcontext* out, char* error, size_t size) {
  int count = 0;
  CUresult r = g_driver.cuDeviceGetCount(&count);
  if (r != kSuccess) return driver_error(error, size, r, "cuDeviceGetCount", "");
  if (device < 0 || device >= count) {
    report(error, size, "the tensors are on cuda:%d, but there %s %d CUDA device%s", device,
           count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
    return kValueError;
  }
  if (device >= kMaxContexts) return report(error, size, "cuda:%d: device ids from %d on are not supported", device, kMaxContexts);
  pthread_mutex_lock(&g_mutex);
  if (g_primary[device] == nullptr) {
    CUdevice dev = 0;
    r = g_driver.cuDeviceGet(&dev, device);
    if (r == kSuccess) r = g_driver.cuDevicePrimaryCtxRetain(&g_primary[device], dev);
    if (r != kSuccess) {
      g_primary[device] = nullptr;
      pthread_mutex_unlock(&g_mutex);
      return driver_error(error, size, r, "cuDevicePrimaryCtxRetain", "");
    }
  }
  *out = g_primary[device];
  pthread_mutex_unlock(&g_mutex);
  return kOk;
}

__attribute__((cold)) int launch_limits(int64_t gx, int64_t gy, int64_t gz, int64_t smem, int l,
                                        char* error, size_t size) {
  report(error, size,
         "grid (%lld, %lld, %lld) with %u threads and %lld bytes of dynamic shared memory is "
         "outside what CUDA allows (grid x up to 2^31-1, y and z up to 65535, 1 to 1024 threads)",
         (long long)gx, (long long)gy, (long long)gz, kThreads[l][0] * kThreads[l][1] * kThreads[l][2],
         (long long)smem);
  return kValueError;
}

// Opts launch `l` in to `bytes` of dynamic shared memory (once per increase).
__attribute__((cold)) int raise_smem_limit(Target* t, int l, int64_t bytes, char* error, size_t size) {
  pthread_mutex_lock(&g_mutex);
  int st = kOk;
  if (bytes > t->smem_limit[l]) {
    int static_smem = 0;
    g_driver.cuFuncGetAttribute(&static_smem, kFuncStaticSmem, t->functions[l]);
    if (bytes + static_smem > t->max_smem_optin) {
      report(error, size,
             "%lld bytes of dynamic shared memory plus the kernel's %d bytes of static shared "
             "memory exceed the %d bytes per block that cuda:%d allows",
             (long long)bytes, static_smem, t->max_smem_optin, t->device);
      st = kValueError;
    } else if (CUresult r = g_driver.cuFuncSetAttribute(t->functions[l], kFuncMaxDynamicSmem, int(bytes))) {
      st = driver_error(error, size, r, "cuFuncSetAttribute", "raising the dynamic shared memory limit");
    } else {
      __atomic_store_n(&t->smem_limit[l], bytes, __ATOMIC_RELAXED);
    }
  }
  pthread_mutex_unlock(&g_mutex);
  return st;
}

// Makes `t`'s context current for a free that may run on any thread.
struct ContextScope {
  CUcontext previous = nullptr;
  bool swapped = false;
  explicit ContextScope(const Target* t) {
    if (g_driver.cuCtxGetCurrent(&previous) == kSuccess && previous != t->context) {
      swapped = g_driver.cuCtxSetCurrent(t->context) == kSuccess;
    }
  }
  ~ContextScope() {
    if (swapped) g_driver.cuCtxSetCurrent(previous);
  }
};

}  // namespace

// The call's context: the current one when it is on the tensors' device
// (an application's own context included), else that device's primary
// context, made current for the call and the previous one put back after.
extern "C" int tilejit_export_begin(tilejit_export_call* call, char* error, size_t size) {
  pthread_once(&g_driver_once, load_driver);
  if (__builtin_expect(!g_driver_ok, 0)) return report(error, size, "%s", g_driver_error);
  CUcontext current = nullptr;
  CUresult r = g_driver.cuCtxGetCurrent(&current);
  if (__builtin_expect(r != kSuccess, 0)) return driver_error(error, size, r, "cuCtxGetCurrent", "");
  Target* t = current != nullptr ? find_target(current) : nullptr;
  if (__builtin_expect(t != nullptr && t->device == call->device_id, 1)) {
    call->target = t;
    return kOk;
  }
  CUcontext context = current;
  CUdevice current_device = -1;
  if (current == nullptr || g_driver.cuCtxGetDevice(&current_device) != kSuccess ||
      current_device != call->device_id) {
    if (int st = primary_context(call->device_id, &context, error, size)) return st;
    if ((r = g_driver.cuCtxSetCurrent(context)) != kSuccess) {
      return driver_error(error, size, r, "cuCtxSetCurrent", "");
    }
    // A thread that had no context keeps this one, as the runtime API does.
    call->saved = current;
  }
  if (int st = make_target(context, call->device_id, &t, error, size)) {
    tilejit_export_end(call);
    return st;
  }
  call->target = t;
  return kOk;
}

extern "C" void tilejit_export_end(tilejit_export_call* call) {
  if (call->saved != nullptr) g_driver.cuCtxSetCurrent(static_cast<CUcontext>(call->saved));
  call->saved = nullptr;
}

extern "C" int tilejit_export_launch(tilejit_export_call* call, int l, const void* block,
                                     const int64_t* grid, int64_t smem, char* error, size_t size) {
  Target* t = static_cast<Target*>(call->target);
  const int64_t gx = grid[0], gy = grid[1], gz = grid[2];
  if (__builtin_expect(gx > 2147483647LL || gy > 65535 || gz > 65535 || smem < 0 || smem > 2147483647LL, 0)) {
    return launch_limits(gx, gy, gz, smem, l, error, size);
  }
  if (smem > __atomic_load_n(&t->smem_limit[l], __ATOMIC_RELAXED)) {
    if (int st = raise_smem_limit(t, l, smem, error, size)) return st;
  }
  // Note [Kernel argument ABI] (cuda_backend_internal.h): the kernel takes
  // the packed block as its one by-value parameter.
  void* params[] = {const_cast<void*>(block)};
  const CUresult r = g_driver.cuLaunchKernel(t->functions[l], unsigned(gx), unsigned(gy), unsigned(gz),
                                             kThreads[l][0], kThreads[l][1], kThreads[l][2],
                                             unsigned(smem), static_cast<CUstream>(call->stream),
                                             params, nullptr);
  if (__builtin_expect(r != kSuccess, 0)) {
    char what[64] = "";
    if (kNumLaunches > 1) snprintf(what, sizeof what, "launch #%d", l);
    return driver_error(error, size, r, "cuLaunchKernel", what);
  }
  return kOk;
}

extern "C" int tilejit_export_zero(tilejit_export_call* call, void* ptr, size_t bytes, char* error,
                                   size_t size) {
  const CUresult r = g_driver.cuMemsetD8Async(CUdeviceptr(uintptr_t(ptr)), 0, bytes,
                                              static_cast<CUstream>(call->stream));
  if (__builtin_expect(r != kSuccess, 0)) {
    return driver_error(error, size, r, "cuMemsetD8Async", "zeroing a workspace");
  }
  return kOk;
}

// Note [Tensor maps] (src/backend/cuda/tma_copies.h), as tensor_maps.cpp
// encodes them: the element's unsigned type of its width (TMA moves bits;
// zero bits are 0 in every float format), strides of a row-major tensor.
extern "C" int tilejit_export_tensor_map(tilejit_export_call*, void* map, void* address,
                                         int elem_bytes, int rank, const uint64_t* dims,
                                         const uint32_t* box, int swizzle, const char* name,
                                         char* error, size_t size) {
  uint64_t strides[5] = {0, 0, 0, 0, 0};
  const unsigned ones[5] = {1, 1, 1, 1, 1};
  uint64_t pitch = uint64_t(elem_bytes);
  for (int d = 0; d + 1 < rank; ++d) {
    pitch *= dims[d];
    strides[d] = pitch;  // a multiple of 16 bytes: the planner proved it
  }
  if (uintptr_t(address) % 16 != 0) {
    report(error, size,
           "argument '%s': the kernel reads it through TMA (cp.async.bulk.tensor), which needs "
           "its address 16-byte aligned", name);
    return kValueError;
  }
  if (g_driver.cuTensorMapEncodeTiled == nullptr) {
    report(error, size,
           "argument '%s': the kernel reads it through TMA, and this CUDA driver has no "
           "cuTensorMapEncodeTiled (CUDA 12.0 or later)", name);
    return kRuntimeError;
  }
  // CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32; swizzle NONE, 32B, 64B,
  // 128B = 0..3; L2 promotion 256B = 3; interleave and fill NONE = 0.
  const int type = elem_bytes == 1 ? 0 : elem_bytes == 2 ? 1 : 2;
  const int mode = swizzle == 32 ? 1 : swizzle == 64 ? 2 : swizzle == 128 ? 3 : 0;
  const CUresult r = g_driver.cuTensorMapEncodeTiled(map, type, unsigned(rank), address, dims,
                                                     strides, box, ones, 0, mode, 3, 0);
  if (__builtin_expect(r != kSuccess, 0)) {
    char what[160];
    snprintf(what, sizeof what, "argument '%s': encoding its TMA descriptor", name);
    return driver_error(error, size, r, "cuTensorMapEncodeTiled", what);
  }
  return kOk;
}

extern "C" int tilejit_export_capturing(tilejit_export_call* call, int* capturing, char* error,
                                        size_t size) {
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE; an invalidated capture counts as capturing
  const CUresult r = g_driver.cuStreamIsCapturing(static_cast<CUstream>(call->stream), &status);
  if (__builtin_expect(r != kSuccess, 0)) return driver_error(error, size, r, "cuStreamIsCapturing", "");
  *capturing = status != 0;
  return kOk;
}

// `ordered`: the outputs, cuMemAllocAsync on the call's stream where the
// device has memory pools; otherwise (the pool's arenas) cuMemAlloc.
extern "C" void* tilejit_export_alloc(tilejit_export_call* call, size_t bytes, int ordered) {
  const Target* t = static_cast<const Target*>(call->target);
  CUdeviceptr p = 0;
  const CUresult r = ordered && t->ordered_memory
      ? g_driver.cuMemAllocAsync(&p, bytes, static_cast<CUstream>(call->stream))
      : g_driver.cuMemAlloc(&p, bytes);
  if (r != kSuccess || p % 256 != 0) {
    if (r == kSuccess) g_driver.cuMemFree(p);
    return nullptr;
  }
  return reinterpret_cast<void*>(uintptr_t(p));
}

// What a user object's destructor runs: the wrapper's release, on a driver
// thread (it may not call CUDA).
struct GraphRelease {
  void (*release)(void*);
  void* context;
};

void graph_destroyed(void* p) {
  GraphRelease* g = static_cast<GraphRelease*>(p);
  g->release(g->context);
  free(g);
}

// Note [CUDA export] (export_library.cpp): memory a graph that call->stream
// is capturing into keeps. It is allocated outside the capture (cuMemAlloc,
// in relaxed capture mode, so that another thread's global-mode capture does
// not forbid it), and a user object the graph owns runs `release(context)`
// once the graph and every executable made from it are destroyed, after
// their launches (as cuda_graph_hook.cpp does for the jit path).
extern "C" int tilejit_export_graph_alloc(tilejit_export_call* call, size_t bytes, void** ptr,
                                          void (*release)(void*), void* context, char* error,
                                          size_t size) {
  CUstream stream = static_cast<CUstream>(call->stream);
  if ((g_driver.cuStreamGetCaptureInfo3 == nullptr && g_driver.cuStreamGetCaptureInfo2 == nullptr) ||
      g_driver.cuUserObjectCreate == nullptr || g_driver.cuGraphRetainUserObject == nullptr ||
      g_driver.cuUserObjectRelease == nullptr) {
    report(error, size, "workspace: the stream is capturing a CUDA graph, and the CUDA driver lacks "
           "the user objects (CUDA 11.3) that would keep the library's arena for it; pass a "
           "tilejit_allocator");
    return kValueError;
  }
  int status = 0;
  CUgraph graph = nullptr;
  CUresult r = g_driver.cuStreamGetCaptureInfo3 != nullptr
      ? g_driver.cuStreamGetCaptureInfo3(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr)
      : g_driver.cuStreamGetCaptureInfo2(stream, &status, nullptr, &graph, nullptr, nullptr);
  if (r != kSuccess) return driver_error(error, size, r, "cuStreamGetCaptureInfo", "workspace");
  if (status != 1 || graph == nullptr) {  // CU_STREAM_CAPTURE_STATUS_ACTIVE
    report(error, size, "workspace: the stream's graph capture has been invalidated");
    return kRuntimeError;
  }
  int mode = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED
  const bool exchanged = g_driver.cuThreadExchangeStreamCaptureMode != nullptr &&
                         g_driver.cuThreadExchangeStreamCaptureMode(&mode) == kSuccess;
  CUdeviceptr p = 0;
  r = g_driver.cuMemAlloc(&p, bytes);
  if (exchanged) g_driver.cuThreadExchangeStreamCaptureMode(&mode);
  if (r != kSuccess) return driver_error(error, size, r, "cuMemAlloc", "workspace for a captured graph");
  GraphRelease* g = static_cast<GraphRelease*>(malloc(sizeof(GraphRelease)));
  CUuserObject object = nullptr;
  if (g == nullptr) {
    g_driver.cuMemFree(p);
    return report(error, size, "workspace: cannot allocate the graph's release");
  }
  g->release = release;
  g->context = context;
  r = g_driver.cuUserObjectCreate(&object, g, graph_destroyed, 1, 1 /* NO_DESTRUCTOR_SYNC */);
  if (r != kSuccess) {
    free(g);
    g_driver.cuMemFree(p);
    return driver_error(error, size, r, "cuUserObjectCreate", "workspace for a captured graph");
  }
  // MOVE: our one reference becomes the graph's, handed on to its executables.
  r = g_driver.cuGraphRetainUserObject(graph, object, 1, 1 /* CU_GRAPH_USER_OBJECT_MOVE */);
  if (r != kSuccess) {
    // Dropping our reference runs the destructor: not the wrapper's release,
    // whose arena is freed here.
    g->release = [](void*) {};
    g_driver.cuUserObjectRelease(object, 1);
    g_driver.cuMemFree(p);
    return driver_error(error, size, r, "cuGraphRetainUserObject", "workspace for a captured graph");
  }
  *ptr = reinterpret_cast<void*>(uintptr_t(p));
  return kOk;
}

// At unload (stream NULL, not ordered) the driver may be torn down already:
// nothing can be reported, and the context's memory goes with it anyway.
extern "C" void tilejit_export_free(void* target, void* ptr, size_t, void* stream, int ordered) {
  const Target* t = static_cast<const Target*>(target);
  if (ptr == nullptr || t == nullptr || !g_driver_ok) return;
  ContextScope scope(t);
  if (ordered && t->ordered_memory) {
    g_driver.cuMemFreeAsync(CUdeviceptr(uintptr_t(ptr)), static_cast<CUstream>(stream));
  } else {
    g_driver.cuMemFree(CUdeviceptr(uintptr_t(ptr)));
  }
}

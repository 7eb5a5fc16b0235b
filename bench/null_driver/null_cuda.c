/* A null CUDA driver: libcuda.so.1 for measuring tilejit's own host work on
 * the CUDA call path on a machine without a GPU.
 *
 * Every entry the backend, bench_cuda_call and an exported library's
 * launcher (through cuGetProcAddress) use returns at once: "device
 * memory" is host memory from aligned_alloc, a launch does nothing, memsets
 * write host memory, events are always complete, and no stream is ever
 * capturing. With it, bench_cuda_call's bare launch costs the few
 * nanoseconds of a function call, and the difference between a tilejit call
 * and the bare launch is tilejit's own host work alone (the real driver's
 * calls are timed on a GPU machine). Kernels do not run, so nothing computed
 * through it means anything. Built only as a benchmark tool (bench/
 * CMakeLists.txt); see scripts/bench_host_overhead.sh.
 *
 * cuda.h is included so that its macros give each definition the versioned
 * symbol name (cuMemAlloc -> cuMemAlloc_v2) that tilejit looks up. */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NULL_DEVICE_COUNT 1

static CUcontext current_context = NULL;
/* Distinct non-null handles. */
static char context_object, module_object, function_object, pool_object;

CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_NULL_DRIVER";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_SUCCESS ? "no error" : "null driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = NULL_DEVICE_COUNT;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= NULL_DEVICE_COUNT) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice device) {
  (void)device;
  strncpy(name, "null CUDA device", (size_t)len);
  if (len > 0) name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  (void)device;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  (void)device;
  *context = (CUcontext)&context_object;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  current_context = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  (void)image;
  *module = (CUmodule)&module_object;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  (void)module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  (void)module;
  (void)name;
  *function = (CUfunction)&function_object;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction f) {
  (void)attribute;
  (void)f;
  *value = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  (void)f;
  (void)attribute;
  (void)value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int smem, CUstream stream, void** params, void** extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)stream;
  (void)params, (void)extra;
  return CUDA_SUCCESS;
}

static CUresult host_alloc(CUdeviceptr* ptr, size_t bytes) {
  void* p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t bytes) { return host_alloc(ptr, bytes); }

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  free((void*)(uintptr_t)ptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* ptr, size_t bytes, CUstream stream) {
  (void)stream;
  return host_alloc(ptr, bytes);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* ptr, size_t bytes, CUmemoryPool pool,
                                         CUstream stream) {
  (void)pool;
  (void)stream;
  return host_alloc(ptr, bytes);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  (void)stream;
  free((void*)(uintptr_t)ptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  (void)props;
  *pool = (CUmemoryPool)&pool_object;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  (void)pool;
  (void)attr;
  (void)value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  (void)pool;
  (void)keep;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr ptr, unsigned char value, size_t n, CUstream stream) {
  (void)stream;
  memset((void*)(uintptr_t)ptr, value, n);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  (void)flags;
  *event = (CUevent)malloc(1);
  return *event ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  (void)event;
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent event) {
  (void)event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  free(event);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int flags) {
  (void)flags;
  *stream = (CUstream)malloc(1);
  return *stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  (void)stream;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

/* NVRTC opens libcuda.so.1 itself and asks for the driver's internal tables;
 * there are none here. */
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  memcpy((void*)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, (const void*)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (current_context == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

/* What an exported library's launcher asks for by name: the names are
 * cuda.h's, the functions the versions the macros above select (cuMemAlloc
 * is cuMemAlloc_v2 here), which are the CUDA 12.0 ABI the launcher asks for. */
static const struct {
  const char* name;
  void* fn;
} proc_table[] = {
    {"cuInit", (void*)cuInit},
    {"cuGetErrorName", (void*)cuGetErrorName},
    {"cuGetErrorString", (void*)cuGetErrorString},
    {"cuDriverGetVersion", (void*)cuDriverGetVersion},
    {"cuDeviceGet", (void*)cuDeviceGet},
    {"cuDeviceGetCount", (void*)cuDeviceGetCount},
    {"cuDeviceGetName", (void*)cuDeviceGetName},
    {"cuDeviceGetAttribute", (void*)cuDeviceGetAttribute},
    {"cuDevicePrimaryCtxRetain", (void*)cuDevicePrimaryCtxRetain},
    {"cuCtxGetCurrent", (void*)cuCtxGetCurrent},
    {"cuCtxSetCurrent", (void*)cuCtxSetCurrent},
    {"cuCtxGetDevice", (void*)cuCtxGetDevice},
    {"cuModuleLoadData", (void*)cuModuleLoadData},
    {"cuModuleUnload", (void*)cuModuleUnload},
    {"cuModuleGetFunction", (void*)cuModuleGetFunction},
    {"cuFuncGetAttribute", (void*)cuFuncGetAttribute},
    {"cuFuncSetAttribute", (void*)cuFuncSetAttribute},
    {"cuLaunchKernel", (void*)cuLaunchKernel},
    {"cuMemsetD8Async", (void*)cuMemsetD8Async},
    {"cuMemAlloc", (void*)cuMemAlloc},
    {"cuMemFree", (void*)cuMemFree},
    {"cuMemAllocAsync", (void*)cuMemAllocAsync},
    {"cuMemFreeAsync", (void*)cuMemFreeAsync},
    {"cuStreamIsCapturing", (void*)cuStreamIsCapturing},
    {"cuStreamCreate", (void*)cuStreamCreate},
    {"cuStreamSynchronize", (void*)cuStreamSynchronize},
};

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  (void)version;
  (void)flags;
  for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; ++i) {
    if (strcmp(proc_table[i].name, symbol) == 0) {
      *pfn = proc_table[i].fn;
      if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = NULL;
  if (status != NULL) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

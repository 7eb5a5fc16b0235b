/* A null CUDA driver: libcuda.so.1 for measuring tilejit's own host work on
 * the CUDA call path on a machine without a GPU.
 *
 * Every entry the backend, bench_cuda_call and an exported library's
 * launcher (through cuGetProcAddress) use returns at once: "device
 * memory" is host memory from aligned_alloc, a launch does nothing, memsets
 * write host memory, events are always complete, and a stream captures only
 * between cuStreamBeginCapture and cuStreamEndCapture (a graph of user
 * objects, nothing else). With it, bench_cuda_call's bare launch costs the
 * few nanoseconds of a function call, and the difference between a tilejit
 * call and the bare launch is tilejit's own host work alone (the real
 * driver's calls are timed on a GPU machine). Kernels do not run, so nothing
 * computed through it means anything. Built as a benchmark tool (bench/
 * CMakeLists.txt; see scripts/bench_host_overhead.sh) and for the CUDA
 * export's tests (tests/c/CMakeLists.txt), which make CUDA kernels and run
 * their exported libraries' host paths over it.
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

/* Graph capture, for the host logic around it: one stream captures at a
 * time into a graph that records nothing but the user objects it owns; its
 * "executable" is itself and launches do nothing; destroying it runs the
 * user objects' destructors at once (the real driver runs them later, on a
 * thread of its own). */
#define NULL_MAX_OBJECTS 16
struct CUuserObject_st {
  void* ptr;
  CUhostFn destroy;
};
struct CUgraph_st {
  CUuserObject objects[NULL_MAX_OBJECTS];
  int count;
};
static CUstream capturing_stream = NULL;
static CUgraph capture = NULL;
static CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  *status = capture != NULL && stream == capturing_stream ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                          : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  (void)mode;
  if (capture != NULL) return CUDA_ERROR_ILLEGAL_STATE;
  capture = (CUgraph)calloc(1, sizeof(struct CUgraph_st));
  if (capture == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  capturing_stream = stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  if (capture == NULL || stream != capturing_stream) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = capture;
  capture = NULL;
  capturing_stream = NULL;
  return CUDA_SUCCESS;
}

#if CUDA_VERSION >= 12030
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                        cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                                        const CUgraphEdgeData** edges, size_t* count) {
  if (edges != NULL) *edges = NULL;
#else
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                        cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                                        size_t* count) {
#endif
  cuStreamIsCapturing(stream, status);
  if (id != NULL) *id = 1;
  if (graph != NULL) *graph = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? capture : NULL;
  if (deps != NULL) *deps = NULL;
  if (count != NULL) *count = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  const CUstreamCaptureMode previous = capture_mode;
  capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuUserObjectCreate(CUuserObject* object, void* ptr, CUhostFn destroy,
                                    unsigned int refs, unsigned int flags) {
  (void)refs;
  (void)flags;
  *object = (CUuserObject)malloc(sizeof(struct CUuserObject_st));
  if (*object == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  (*object)->ptr = ptr;
  (*object)->destroy = destroy;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuUserObjectRelease(CUuserObject object, unsigned int count) {
  (void)count;
  object->destroy(object->ptr);
  free(object);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                         unsigned int flags) {
  (void)count;
  (void)flags;
  if (graph->count == NULL_MAX_OBJECTS) return CUDA_ERROR_OUT_OF_MEMORY;
  graph->objects[graph->count++] = object;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  for (int i = 0; i < graph->count; ++i) cuUserObjectRelease(graph->objects[i], 1);
  free(graph);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                             unsigned long long flags) {
  (void)flags;
  *exec = (CUgraphExec)graph;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  (void)exec;
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  (void)exec;
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
    {"cuStreamGetCaptureInfo", (void*)cuStreamGetCaptureInfo},
    {"cuThreadExchangeStreamCaptureMode", (void*)cuThreadExchangeStreamCaptureMode},
    {"cuUserObjectCreate", (void*)cuUserObjectCreate},
    {"cuUserObjectRelease", (void*)cuUserObjectRelease},
    {"cuGraphRetainUserObject", (void*)cuGraphRetainUserObject},
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

/* TMA descriptors: the bytes are the driver's own format; zeros stand in. */
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                        void* address, const cuuint64_t* dims,
                                        const cuuint64_t* strides, const cuuint32_t* box,
                                        const cuuint32_t* element_strides,
                                        CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle,
                                        CUtensorMapL2promotion promotion,
                                        CUtensorMapFloatOOBfill fill) {
  (void)type; (void)rank; (void)address; (void)dims; (void)strides; (void)box;
  (void)element_strides; (void)interleave; (void)swizzle; (void)promotion; (void)fill;
  memset(map, 0, sizeof *map);
  return CUDA_SUCCESS;
}

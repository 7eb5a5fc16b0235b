// Graph capture queries and user objects: see Note [Graph lifetime through
// user objects] in cuda_graph_hook.h.
#include "backend/cuda/cuda_graph_hook.h"

#include <string>

#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

// Heap-allocated context for attach_to_graph's callers, so the CUhostFn
// signature stays an implementation detail.
struct Attached {
  void (*destroy)(void*) noexcept;
  void* context;
};

void CUDA_CB run_attached(void* p) {
  auto* a = static_cast<Attached*>(p);
  a->destroy(a->context);
  delete a;
}

}  // namespace

bool capture_graph(Device device, runtime::Stream stream, CUgraph* graph) {
  check_cuda_device(device, "capture_graph");
  ContextGuard guard(device.id);
  const DriverApi& api = driver();
  CUstream s = static_cast<CUstream>(stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph g = nullptr;
  CUresult r;
  const char* what;
  if (graph == nullptr) {
    what = "cuStreamIsCapturing";
    r = api.cuStreamIsCapturing(s, &status);
#if CUDA_VERSION >= 12030
    // cuda.h maps cuStreamGetCaptureInfo to _v3 (edge data) from 12.3 on.
  } else if (api.cuStreamGetCaptureInfo != nullptr) {
    what = "cuStreamGetCaptureInfo";
    r = api.cuStreamGetCaptureInfo(s, &status, nullptr, &g, nullptr, nullptr, nullptr);
#endif
  } else if (api.cuStreamGetCaptureInfo_v2_compat != nullptr) {
    what = "cuStreamGetCaptureInfo_v2";
    r = api.cuStreamGetCaptureInfo_v2_compat(s, &status, nullptr, &g, nullptr, nullptr);
  } else {
    TILEJIT_THROW(kRuntimeError) << "cuda backend: the driver (CUDA " << api.driver_version / 1000
                                 << "." << api.driver_version % 1000 / 10
                                 << ") lacks cuStreamGetCaptureInfo_v2; graph capture needs 11.3";
  }
  if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) {
    throw_driver_error(r, what, "cuda backend: asking whether a stream on " + device.str() +
                                    " is capturing");
  }
  // An invalidated capture still counts: the stream is inside a capture
  // sequence, and the pool must not treat it as an ordinary stream.
  if (status == CU_STREAM_CAPTURE_STATUS_NONE) return false;
  if (graph != nullptr) *graph = g;
  return true;
}

void attach_to_graph(Device device, CUgraph graph, void (*destroy)(void*) noexcept,
                     void* context) {
  check_cuda_device(device, "attach_to_graph");
  ContextGuard guard(device.id);
  const DriverApi& api = driver();
  if (api.cuUserObjectCreate == nullptr || api.cuGraphRetainUserObject == nullptr ||
      api.cuUserObjectRelease == nullptr) {
    TILEJIT_THROW(kRuntimeError) << "cuda backend: the driver (CUDA " << api.driver_version / 1000
                                 << "." << api.driver_version % 1000 / 10
                                 << ") lacks user objects; graph capture needs 11.3";
  }
  TILEJIT_CHECK(graph != nullptr, kValueError) << "attach_to_graph: no graph";
  auto* attached = new Attached{destroy, context};
  CUuserObject object = nullptr;
  CUresult r = api.cuUserObjectCreate(&object, attached, run_attached, 1,
                                      CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  if (r != CUDA_SUCCESS) {
    delete attached;
    throw_driver_error(r, "cuUserObjectCreate", "cuda backend: tying a release to a captured graph");
  }
  // MOVE: our one reference becomes the graph's; the graph hands references
  // on to the executables instantiated from it.
  r = api.cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (r != CUDA_SUCCESS) {
    // Dropping our reference runs the destructor (asynchronously), which
    // would call `destroy`; the contract says it is not called on failure.
    attached->destroy = [](void*) noexcept {};
    api.cuUserObjectRelease(object, 1);
    throw_driver_error(r, "cuGraphRetainUserObject", "cuda backend: tying a release to a captured graph");
  }
}

}  // namespace tilejit::cuda

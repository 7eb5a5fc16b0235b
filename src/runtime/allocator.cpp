// runtime::empty(): a tensor from the default TensorAllocator of the backend
// that serves the device's type.
#include "tilejit/runtime/allocator.h"

#include <cstring>
#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::runtime {

int64_t tensor_bytes(std::span<const int64_t> shape, DataType dtype) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    TILEJIT_CHECK(d >= 0, kValueError)
        << "empty: tensor dimension " << d << " is negative (shape " << shape_str(shape) << ")";
    TILEJIT_CHECK(!__builtin_mul_overflow(numel, d, &numel), kValueError)
        << "empty: shape " << shape_str(shape) << " has more elements than int64 can count";
  }
  int64_t bytes = 0;
  TILEJIT_CHECK(!__builtin_mul_overflow(numel, dtype.bytes(), &bytes), kValueError)
      << "empty: shape " << shape_str(shape) << " of " << dtype.name()
      << " has more bytes than int64 can count";
  return bytes;
}

Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device) {
  Backend* backend = find_backend(device.type);
  if (TILEJIT_UNLIKELY(backend == nullptr)) {
    std::string targets;
    for (const std::string& t : registered_targets()) {
      if (!targets.empty()) targets += ", ";
      targets += t;
    }
    TILEJIT_THROW(kValueError) << "empty: no backend serves device '" << device.str()
                               << "'; registered targets: "
                               << (targets.empty() ? "(none)" : targets);
  }
  // The backend's current stream, so that a CUDA output is ordered with the
  // work the caller is about to queue (the CPU backend ignores it).
  return backend->tensor_allocator().empty(shape, dtype, device, backend->current_stream(device));
}

}  // namespace tilejit::runtime

namespace tilejit::runtime {

void Backend::copy_sync(void* dst, const void* src, size_t bytes, Device, Stream) {
  if (bytes) std::memcpy(dst, src, bytes);
}

std::string Backend::export_library(const ExportRequest& request) {
  TILEJIT_THROW(kValueError) << request.kernel_name << ": cannot export a kernel of target '"
                             << target() << "': export_library supports the CPU and CUDA targets only";
}

void copy(const Tensor& src, const Tensor& dst) {
  TILEJIT_CHECK(src.defined() && dst.defined(), kValueError) << "copy: undefined tensor";
  TILEJIT_CHECK(src.dtype() == dst.dtype(), kTypeError)
      << "copy: source is " << src.dtype().name() << " but destination is " << dst.dtype().name();
  TILEJIT_CHECK(src.numel() == dst.numel(), kValueError)
      << "copy: source has " << src.numel() << " elements " << src.shape_str()
      << " but destination has " << dst.numel() << " " << dst.shape_str();
  TILEJIT_CHECK(src.is_contiguous() && dst.is_contiguous(), kValueError)
      << "copy: both tensors must be contiguous";
  const bool src_host = src.device().type == DeviceType::kCPU;
  const bool dst_host = dst.device().type == DeviceType::kCPU;
  TILEJIT_CHECK(src_host || dst_host || src.device() == dst.device(), kValueError)
      << "copy: from " << src.device().str() << " to " << dst.device().str()
      << " is not supported; copy through the host";
  const Device device = src_host ? dst.device() : src.device();
  Backend* backend = find_backend(device.type);
  TILEJIT_CHECK(backend != nullptr, kValueError)
      << "copy: no backend serves device '" << device.str() << "'";
  backend->copy_sync(dst.data(), src.data(), size_t(src.nbytes()), device,
                     backend->current_stream(device));
}

}  // namespace tilejit::runtime

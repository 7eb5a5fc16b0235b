// Allocator: raw device memory for one device type, and TensorAllocator:
// whole tensors (outputs) in some framework's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tilejit/core/data_type.h"
#include "tilejit/core/device.h"
#include "tilejit/core/tensor.h"

namespace tilejit::runtime {

/// An opaque stream handle: a CUstream on CUDA, nullptr on the CPU (and for
/// the legacy default stream).
using Stream = void*;
/// An opaque event handle; nullptr means "already complete".
using Event = void*;

/// Where one call allocates: its device and stream, and whether that stream
/// is capturing a CUDA graph. Computed once per call (Backend::is_capturing
/// is a driver call on CUDA) and handed to the workspace pool and to the
/// output allocator alike.
struct AllocContext {
  Device device;
  Stream stream = nullptr;
  bool capturing = false;
};

/// Raw memory of one device type. Implementations are thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns `bytes` of memory on `device`, aligned to at least 256 bytes,
  /// usable in the order of `stream`; nullptr when the device is out of
  /// memory (the caller decides what to free and whether to raise). Other
  /// failures throw.
  virtual void* allocate(size_t bytes, Device device, Stream stream) = 0;
  /// Returns memory from allocate(); `bytes` is the size asked for.
  virtual void deallocate(void* ptr, size_t bytes, Device device, Stream stream) noexcept = 0;
};

/// Makes the output tensors of a call. The default one per backend uses the
/// backend's Allocator; a framework binding (torch, numpy) supplies its own so
/// that outputs live in the framework's memory.
class TensorAllocator {
 public:
  virtual ~TensorAllocator() = default;
  /// A contiguous tensor; throws (OutOfMemoryError) when it cannot.
  virtual Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
                       Stream stream) = 0;
  /// empty() for a call, whose context says whether the stream captures a
  /// graph, so that an allocator that needs to know does not ask again. The
  /// default ignores `capturing`.
  virtual Tensor empty(std::span<const int64_t> shape, DataType dtype, const AllocContext& ctx) {
    return empty(shape, dtype, ctx.device, ctx.stream);
  }
};

/// The bytes of a contiguous tensor of `shape` and `dtype`, for
/// TensorAllocator implementations. Throws ValueError ("empty: ...") for a
/// negative extent or a size that int64 cannot count.
int64_t tensor_bytes(std::span<const int64_t> shape, DataType dtype);

/// A contiguous, uninitialised tensor from the default TensorAllocator of the
/// backend for `device`'s type.
Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device = Device::cpu());
inline Tensor empty(std::initializer_list<int64_t> shape, DataType dtype,
                    Device device = Device::cpu()) {
  return empty(std::span<const int64_t>(shape.begin(), shape.size()), dtype, device);
}

}  // namespace tilejit::runtime

// runtime::empty(): a tensor from the default TensorAllocator of the backend
// that serves the device's type.
#include "tilejit/runtime/allocator.h"

#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::runtime {

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

// The CUDA backend's public knobs. The backend itself registers as target
// "cuda" (DeviceType::kCUDA) from a static initializer and is reached through
// runtime::get_backend("cuda"); nothing here is needed to use it.
//
// It exists only in a libtilejit built with the CUDA toolkit's headers
// (TILEJIT_HAS_CUDA). The driver (libcuda.so.1) and NVRTC are opened at run
// time, so such a library still loads, and runs CPU kernels, on machines
// without them; the backend's available() is then false and these functions
// report no devices.
//
// Streams are CUstream values passed as void*, so that this header needs no
// CUDA header; nullptr is the legacy default stream.
#pragma once

#include <string>

namespace tilejit::cuda {

/// Sets the stream that kernel calls on device `device` use on the calling
/// thread when the call names no stream (the Backend's current_stream()).
/// Thread-local, like CUDA's own current device; nullptr (the initial value)
/// is the legacy default stream. Bindings pass their framework's current
/// stream explicitly per call instead. Throws ValueError for a device id
/// outside [0, 64).
void set_current_stream(int device, void* stream);

/// The stream set_current_stream() last set for `device` on this thread.
void* current_stream(int device);

/// Sets the current stream of `device` for a scope, restoring the previous
/// one at its end.
class StreamGuard {
 public:
  StreamGuard(int device, void* stream) : device_(device), previous_(current_stream(device)) {
    set_current_stream(device, stream);
  }
  ~StreamGuard() { set_current_stream(device_, previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  void* previous_;
};

/// CUDA devices the driver reports; 0 when the driver cannot be loaded or
/// initialised.
int device_count() noexcept;

/// Why the CUDA backend is not available ("" when it is): the library that
/// could not be loaded, or the driver call that failed, with its error.
std::string unavailable_reason();

}  // namespace tilejit::cuda

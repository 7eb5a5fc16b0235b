// The stages of the CUDA backend, one source file each, tied together by
// CudaBackend in cuda_backend.cpp:
//   generate_source  (cuda_codegen.cpp)   PrimFunc -> CUDA C++ translation unit
//   compile_source   (cuda_compiler.cpp)  CUDA C++ -> cubin or PTX, with NVRTC
//   load_module      (cuda_module.cpp)    binary -> CUmodule + CUfunction
// and the memory, stream and event side (cuda_memory.cpp).
//
// Note [Kernel argument ABI]
// The generated kernel takes ONE parameter, by value:
//   struct Args { void* ptrs[N]; int64_t syms[M]; };
// with N = the PrimFunc's parameters in signature order and M = the dynamic
// symbols in slot order (a member is left out when its count is 0). A tensor's
// slot holds its device pointer; a scalar's slot holds the scalar's bytes at
// its start (little-endian, the rest zero). A launch packs that struct on the
// host stack and passes kernelParams = {&struct}: one memcpy-sized argument,
// however many parameters the kernel has. The host needs to know which slots
// are scalars and how wide; generate_source() writes that into the source as
//   // tilejit-cuda-abi: 1 syms=M args=p,p,s4
// (p: pointer, sK: scalar of K bytes), compile_source() carries it into the
// binary's header, and load_module() reads it back. A binary whose header
// is missing or of another version does not load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {

inline constexpr int kAbiVersion = 1;
/// The entry point's name in every generated unit.
inline constexpr const char* kEntryName = "tilejit_kernel";
/// The device header every generated unit includes first (device/cuda/).
inline constexpr const char* kPreludeName = "tilejit/cuda/prelude.h";
/// The most slots (N + M) one kernel's argument struct may have: 4 KiB, the
/// kernel-parameter limit every driver and architecture accepts.
inline constexpr int kMaxArgSlots = 512;

/// Note [Kernel argument ABI]: what the host needs to pack the struct.
struct ArgLayout {
  int num_symbols = 0;
  /// One entry per parameter: 0 for a pointer, else the scalar's bytes.
  std::vector<int> scalar_bytes;

  /// "1 syms=2 args=p,p,s4"
  std::string to_string() const;
  /// Parses to_string()'s text; false on anything else.
  static bool parse(const std::string& text, ArgLayout* out);
};

/// The marker generate_source() writes before the layout.
inline constexpr const char* kAbiMarker = "// tilejit-cuda-abi: ";

/// What CUDA limits in a PrimFunc beyond ir::validate(): 1 to 1024 threads
/// per block. ValueError naming the function otherwise (cuda_codegen.cpp).
void validate_func(const ir::PrimFunc& func);

/// The translation unit for `request` (see cuda_codegen.cpp for its shape).
/// Throws ValueError when the PrimFunc has no "cuda" body, and as
/// validate_func() does.
std::string generate_source(const runtime::SourceRequest& request);

/// NVRTC version, target architecture for `device` and flags.
std::string toolchain_key(const runtime::CompileOptions& options, Device device);

/// Compiles with NVRTC for `device`'s architecture (sm_90a when the driver
/// or the device is absent). Returns the binary: a tag byte ('C' cubin, 'P'
/// PTX), the header line "<layout>\n", then the code. Throws CompileError
/// (see cuda_compiler.cpp for the message) and RuntimeError when NVRTC
/// cannot be loaded.
std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options, Device device);

/// Loads a binary of compile_source() into `device`'s primary context.
/// Throws RuntimeError for bytes that do not load.
std::unique_ptr<runtime::Module> load_module(const std::string& binary, Device device);

/// The backend's memory and stream side (cuda_memory.cpp).
runtime::Allocator& allocator();
runtime::TensorAllocator& tensor_allocator();
void memset_async(void* ptr, int value, size_t bytes, Device device, runtime::Stream stream);
void copy_sync(void* dst, const void* src, size_t bytes, Device device, runtime::Stream stream);
runtime::Stream current_stream(Device device);
runtime::Event record_event(Device device, runtime::Stream stream);
bool event_completed(runtime::Event event);
void destroy_event(runtime::Event event) noexcept;
bool is_capturing(Device device, runtime::Stream stream);

[[noreturn, gnu::cold]] void throw_not_cuda_device(Device device, const char* what);
/// Throws ValueError unless `device` is a CUDA device: "<what> on device
/// 'cpu', which is not a CUDA device".
inline void check_cuda_device(Device device, const char* what) {
  if (TILEJIT_UNLIKELY(device.type != DeviceType::kCUDA)) throw_not_cuda_device(device, what);
}

}  // namespace tilejit::cuda

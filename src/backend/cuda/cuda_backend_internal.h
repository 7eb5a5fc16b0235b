// The stages of the CUDA backend, one source file each, tied together by
// CudaBackend in cuda_backend.cpp:
//   generate_source  (cuda_codegen.cpp)   PrimFunc -> CUDA C++ translation unit
//   compile_source   (cuda_compiler.cpp)  CUDA C++ -> cubin or PTX, with NVRTC
//   load_module      (cuda_module.cpp)    binary -> CUmodule + CUfunction
// and the memory, stream and event side (cuda_memory.cpp).
//
// Note [Kernel argument ABI]
// The generated kernel takes ONE parameter, by value: the argument block of
// Note [Slot layout] (backend/common/slot_abi.h),
//   struct Args { void* ptrs[N]; int64_t syms[M]; };
// (a member is left out when its count is 0), printed from the KernelAbi
// (emit_args_struct) with static_asserts on its offsets. A launch packs that block on
// the host stack as the KernelAbi says (Note [Kernel ABI]) and passes
// kernelParams = {&block}: one memcpy-sized argument, however many
// parameters the kernel has. The KernelAbi comes from generate_source() and
// reaches load_module() through the runtime (stored beside the binary in
// the disk cache); neither the source nor the binary carries it.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {

inline constexpr int kAbiVersion = 1;
/// The entry point's name in every generated unit.
inline constexpr const char* kEntryName = "tilejit_kernel";
/// The device header every generated unit includes first (device/cuda/).
inline constexpr const char* kPreludeName = "tilejit/cuda/prelude.h";
/// The line of a unit generated with the debug checks (Note [Debug
/// bounds]), which the compile reads.
inline constexpr const char* kDebugChecksMarker = "#define TILEJIT_DEBUG_CHECKS 1";
/// The most slots (N + M) one kernel's argument struct may have: 4 KiB, the
/// kernel-parameter limit every driver and architecture accepts.
inline constexpr int kMaxArgSlots = 512;
static_assert(kMaxArgSlots * 8 == runtime::KernelAbi::kMaxBlockBytes);

/// What CUDA limits in a PrimFunc beyond ir::validate(): 1 to 1024 threads
/// per block. ValueError naming the function otherwise (cuda_codegen.cpp).
void validate_func(const ir::PrimFunc& func);

/// The translation unit for `request` (see cuda_codegen.cpp for its shape)
/// and its KernelAbi: a tile body is lowered (tile_codegen.h); a source body
/// needs a "cuda" body. Throws ValueError when there is neither, and as
/// validate_func() does.
runtime::GeneratedSource generate_source(const runtime::SourceRequest& request);

/// The entry as the C++ pieces shared with the CPU backend see it
/// (backend/common/cxx_source.h).
extern const backend::CxxEntry kCudaEntry;

/// ValueError where `f` and its symbols take more than kMaxArgSlots slots.
void check_arg_slots(const ir::PrimFunc& f, const std::vector<std::string>& symbols);

/// Writes the argument struct tilejit::Args of a unit's entries (Note
/// [Kernel argument ABI]) as `abi` lays the block out: its runs of pointer,
/// symbol and tensor-map slots (Note [Tensor maps]), each at the KernelAbi's
/// offset (an InternalError otherwise), and a static_assert that pins the
/// block's size to the KernelAbi's.
void emit_args_struct(std::ostream& os, const runtime::KernelAbi& abi);

/// NVRTC version, target architecture for `device` and flags.
std::string toolchain_key(const runtime::CompileOptions& options, Device device);
/// The architecture NVRTC compiles for with `options` on `device` ("sm_90a",
/// "compute_80"; Note [Choosing the architecture]).
std::string source_arch(const runtime::CompileOptions& options, Device device);

/// Compiles with NVRTC for `device`'s architecture (sm_90a when the driver
/// or the device is absent). Returns the binary: a tag byte ('C' cubin, 'P'
/// PTX), then the code. Throws CompileError
/// (see cuda_compiler.cpp for the message) and RuntimeError when NVRTC
/// cannot be loaded.
std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options, Device device);

/// The unit's name in NVRTC's messages: the kernel name kept plain, ".cu".
std::string program_name(const std::string& kernel_name);

/// The architecture compile_source() compiles for: "sm_90a" (a cubin),
/// "compute_120" (PTX), or what the flags name.
std::string target_arch(const runtime::CompileOptions& options, Device device);

/// Loads a binary of compile_source() into `device`'s primary context, with
/// one function per launch of `abi`. Throws RuntimeError for bytes that do
/// not load and for an `abi` CUDA cannot launch.
std::unique_ptr<runtime::Module> load_module(const std::string& binary,
                                             const runtime::KernelAbi& abi, Device device);

/// The backend's memory and stream side (cuda_memory.cpp).
runtime::Allocator& allocator();
/// The backend's output allocator; its pools hold `backend`.
runtime::TensorAllocator& tensor_allocator(runtime::Backend& backend);
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

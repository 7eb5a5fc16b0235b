// NVRTC, reached through dlopen (Note [Driver through dlopen] in
// cuda_driver.h), and the CUDA headers the generated source includes.
//
// The library is searched for, first hit wins:
//   1. $TILEJIT_NVRTC (a path to the library);
//   2. libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 by the dynamic linker's
//      search (LD_LIBRARY_PATH, ld.so.cache, and a copy already loaded into
//      the process, as torch loads its own);
//   3. the same names in $CUDA_HOME/lib64, $CUDA_PATH/lib64,
//      /usr/local/cuda/lib64;
//   4. pip's wheels: nvidia/cu13/lib and nvidia/cuda_nvrtc/lib under the
//      site-packages directories above libtilejit itself, of $VIRTUAL_ENV,
//      $CONDA_PREFIX, ~/.local, /usr/local and /usr.
// The include directory (where cuda_bf16.h is) comes from
// $TILEJIT_CUDA_INCLUDE, else next to the NVRTC that was loaded (so that the
// headers match the compiler), else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

namespace tilejit::cuda {

#define TILEJIT_NVRTC_API(X)  \
  X(nvrtcGetErrorString)      \
  X(nvrtcVersion)             \
  X(nvrtcGetNumSupportedArchs) \
  X(nvrtcGetSupportedArchs)   \
  X(nvrtcCreateProgram)       \
  X(nvrtcDestroyProgram)      \
  X(nvrtcCompileProgram)      \
  X(nvrtcGetPTXSize)          \
  X(nvrtcGetPTX)              \
  X(nvrtcGetCUBINSize)        \
  X(nvrtcGetCUBIN)            \
  X(nvrtcGetProgramLogSize)   \
  X(nvrtcGetProgramLog)

struct NvrtcApi {
#define TILEJIT_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  TILEJIT_NVRTC_API(TILEJIT_NVRTC_MEMBER)
#undef TILEJIT_NVRTC_MEMBER

  std::string path;                  // the library that was loaded
  int major = 0, minor = 0;          // nvrtcVersion
  std::vector<int> archs;            // nvrtcGetSupportedArchs, ascending: 75, 80, ...
  /// --include-path values for the generated source: the directory holding
  /// cuda_bf16.h, then its cccl/ subdirectory when present. Empty when no
  /// headers were found (compile() then says so).
  std::vector<std::string> include_dirs;
};

/// NVRTC, or nullptr when it cannot be loaded. Loaded once, thread-safe.
const NvrtcApi* nvrtc_or_null() noexcept;
/// Why nvrtc_or_null() is nullptr: every place tried and what failed.
const std::string& nvrtc_unavailable_reason() noexcept;
/// NVRTC; throws RuntimeError naming what was tried when it cannot be loaded.
const NvrtcApi& nvrtc();

}  // namespace tilejit::cuda

// The CUDA backend's part of export_library (cuda_export.cpp; Note [CUDA
// export] in src/export/export_library.cpp).
#pragma once

#include <string>

#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {

/// The standalone library of Backend::export_library: the kernel compiled by
/// NVRTC to a cubin for the request's device and to PTX, embedded in a
/// launcher unit, compiled with the wrapper by the host C++ compiler.
std::string export_library(const runtime::ExportRequest& request);

/// The fixed code of the launcher unit, after its tables
/// (cuda_export_launcher.cpp).
extern const char* const kLauncherCode;

}  // namespace tilejit::cuda

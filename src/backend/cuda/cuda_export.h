// The CUDA backend's part of export_library (cuda_export.cpp; Note [CUDA
// export] in src/export/export_library.cpp).
#pragma once

#include <span>
#include <string>

#include "core/embedded_file.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {

/// The standalone library of Backend::export_library: the kernel compiled by
/// NVRTC to a cubin for the request's device and to PTX, embedded in a
/// launcher unit, compiled with the wrapper by the host C++ compiler.
std::string export_library(const runtime::ExportRequest& request);

/// The fixed code of the launcher unit, after its tables, as embedded from
/// src/backend/cuda/export_runtime/ at build time: launcher.cpp.
std::span<const EmbeddedFile> launcher_files();

}  // namespace tilejit::cuda

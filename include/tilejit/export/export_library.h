// export_library: a compiled kernel as a standalone shared library with a C
// ABI, for programs that have no compiler, no Python and no libtilejit
// (README, "Shipping a kernel"; Note [Exported library] in
// src/export/export_library.cpp).
#pragma once

#include <string>

#include "tilejit/jit/kernel.h"

namespace tilejit {

/// Writes the shared library `path` (a .so) and beside it its C header (the
/// same stem, ".h"), whose functions are named after export_c_name(k.name()):
/// `<op>`, `<op>_auto`, `<op>_auto_outputs`, `<op>_workspace_bytes`,
/// `<op>_output_shapes`, `<op>_last_error`, `<op>_pool_bytes`. The library holds the kernel
/// compiled again from k.source() by the target's compiler (CPU: the host
/// C++ compiler; CUDA: NVRTC, a cubin for k's device and PTX, with a
/// launcher that opens libcuda.so.1 at run time), the KernelAbi's block
/// layout and the call plan's checks and shape program; it needs only the
/// C runtime. Both files appear at once or not at all
/// (each is written to a temporary name and renamed).
/// Throws ValueError for a kernel of a target that cannot be exported (the
/// message names the target) or an undefined kernel, CompileError when the
/// compiler fails, RuntimeError when a file cannot be written (naming it).
void export_library(const Kernel& k, const std::string& path);

/// The C identifier an exported kernel's functions start with: `name` with
/// every character that is not a letter, a digit or '_' replaced by '_',
/// and '_' put before a leading digit.
std::string export_c_name(const std::string& name);

}  // namespace tilejit

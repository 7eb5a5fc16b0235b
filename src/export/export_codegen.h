// The generated text of an exported library (Note [Exported library] in
// export_library.cpp): its C header and its wrapper unit.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/embedded_file.h"
#include "tilejit/jit/kernel.h"

namespace tilejit::exporter {

/// The C header `file_name` for `k`, whose functions start with `c_name`.
std::string c_header(const Kernel& k, const std::string& c_name, const std::string& file_name);

/// The wrapper unit: `header` (c_header()'s text), the tables of `k`'s plan
/// and KernelAbi, the shape program as straight-line code, the fixed code of
/// runtime/, and the C functions.
std::string wrapper_source(const Kernel& k, const std::string& c_name, const std::string& header);

/// The symbols the library exports.
std::vector<std::string> exported_symbols(const std::string& c_name);

/// The fixed parts of the header and the wrapper unit, as embedded from
/// src/export/runtime/ at build time: header_dlpack.h, header_common.h,
/// wrapper_types.h, wrapper_check.cpp, wrapper_call.cpp.
std::span<const EmbeddedFile> wrapper_files();
/// include/tilejit/runtime/abi_block.h, the argument block's packing that
/// the wrapper shares with the JIT's modules.
std::span<const EmbeddedFile> abi_files();

}  // namespace tilejit::exporter

// A file of the source tree embedded into libtilejit at build time by
// cmake/embed_files.cmake: the device headers the kernel compilers are handed
// (backend/common/device_files.h) and the fixed code of an exported library
// (export/runtime/, backend/cuda/export_runtime/; Note [Embedded from a
// marker] in that script). Each layer that embeds files declares the
// function that returns them.
#pragma once

#include <span>
#include <string_view>

#include "tilejit/core/error.h"

namespace tilejit {

struct EmbeddedFile {
  // Both views are NUL-terminated (NVRTC takes C strings).
  std::string_view name;  ///< the path under the embedded folder, "tilejit/cpu/prelude.h"
  std::string_view text;  ///< the file's bytes (from its marker line on, where it has one)
};

/// The text of `name` in `files`. The build embeds a fixed list, so a
/// missing name is an InternalError.
inline std::string_view embedded_text(std::span<const EmbeddedFile> files, std::string_view name) {
  for (const EmbeddedFile& f : files) {
    if (f.name == name) return f.text;
  }
  TILEJIT_THROW(kInternalError) << "no embedded file '" << name << "'";
}

}  // namespace tilejit

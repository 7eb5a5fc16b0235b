// The device headers (device/cpu/, device/cuda/ in the source tree), embedded
// into libtilejit at build time by cmake/embed_files.cmake, so that a
// kernel compiles against exactly the headers the library was built with,
// wherever the library is installed.
//
// The generated source includes them by name ("tilejit/cpu/prelude.h"): the
// CPU backend writes them into each compile's directory and passes it with
// -I; the CUDA backend hands them to NVRTC as named headers. Their text is
// not in the generated source, so each backend puts device_files_digest()
// into its toolchain key: a changed header is a different cache key.
#pragma once

#include <span>
#include <string>

#include "core/embedded_file.h"

namespace tilejit::backend {

/// A device header: its include name ("tilejit/cpu/prelude.h") and bytes.
using DeviceFile = EmbeddedFile;

/// The headers under device/cpu/, sorted by name.
std::span<const DeviceFile> cpu_device_files();
/// The headers under device/cuda/, sorted by name (built with the CUDA
/// backend only).
std::span<const DeviceFile> cuda_device_files();

/// A hash of the names and texts of `files`, as hex.
std::string device_files_digest(std::span<const DeviceFile> files);

/// Writes each of `files` to `<dir>/<name>`, making the directories. Throws
/// RuntimeError naming the file that cannot be written.
void write_device_files(std::span<const DeviceFile> files, const std::string& dir);

}  // namespace tilejit::backend

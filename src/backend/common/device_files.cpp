// See device_files.h. The arrays themselves are generated
// (<build>/embedded_device_{cpu,cuda}.cpp, by cmake/embed_files.cmake).
#include "backend/common/device_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tilejit/core/error.h"
#include "tilejit/runtime/disk_cache.h"

namespace tilejit::backend {

std::string device_files_digest(std::span<const DeviceFile> files) {
  // Each name and text with its length in front: no two lists of files
  // serialise to the same bytes.
  std::string all;
  for (const DeviceFile& f : files) {
    for (std::string_view part : {f.name, f.text}) {
      all += std::to_string(part.size());
      all += ':';
      all += part;
    }
  }
  return runtime::hash_hex(all);
}

void write_device_files(std::span<const DeviceFile> files, const std::string& dir) {
  for (const DeviceFile& f : files) {
    const std::filesystem::path path = std::filesystem::path(dir) / f.name;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(f.text.data(), std::streamsize(f.text.size()));
    out.close();
    if (TILEJIT_UNLIKELY(!out.good())) {
      const int err = errno;
      TILEJIT_THROW(kRuntimeError) << "cannot write the device header '" << path.string()
                                   << "': " << std::strerror(err);
    }
  }
}

}  // namespace tilejit::backend

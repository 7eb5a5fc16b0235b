// The host C++ compiler (host_compiler.cpp): the CPU backend's kernel
// compiler, and what both backends build an exported library's host units
// with.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "backend/common/device_files.h"

namespace tilejit::backend {

/// A file of a compile: its name in the working directory and its text.
struct SourceUnit {
  std::string name;
  std::string text;
};

/// Who compiles, for the messages and the working directory.
struct HostCompile {
  const char* backend = "cpu";  ///< "cpu backend: cannot write ...", "tilejit-cpu-XXXXXX"
  const char* display = "CPU";  ///< "k: the CPU compiler failed (exit code 1)"
  /// Headers written under the working directory's include/ (on the include
  /// path); none: no include path is added.
  std::span<const DeviceFile> device_files;
};

/// TILEJIT_CXX, else CXX, else "c++".
std::string host_compiler_name();
/// `name` as the absolute path that posix_spawnp would run; `name` itself
/// when not found in PATH.
std::string resolve_in_path(const std::string& name);
/// The first line of `<compiler> --version` (cached per path), or "unknown".
std::string host_compiler_version(const std::string& compiler);
/// `kernel_name` as a plain file name: its letters, digits and `_`, at most
/// 64 of them ("kernel" when none).
std::string file_stem(const std::string& kernel_name);
/// Flags without which the output is not a loadable shared object:
/// -std=c++17 -fPIC -shared.
const std::vector<std::string>& host_required_flags();

/// Runs the host C++ compiler once over several translation units (`units`;
/// the first is shown by a compile error) with `flags`, then the required
/// ones, then the units, then `link_flags` after the output (each "@DIR@" in
/// one is the working directory, where `files` are written); returns the
/// shared object's bytes. Throws CompileError with the command, the log and
/// the numbered lines of the first unit around its first error, and when the
/// compiler cannot be run ("set TILEJIT_CXX").
std::string compile_host_library(const HostCompile& how, const std::vector<SourceUnit>& units,
                                 const std::vector<SourceUnit>& files,
                                 const std::string& kernel_name,
                                 const std::vector<std::string>& flags,
                                 const std::vector<std::string>& link_flags);

}  // namespace tilejit::backend

// The stages of the CPU backend, one source file each, tied together by
// CpuBackend in cpu_backend.cpp:
//   generate_source  (cpu_codegen.cpp)   PrimFunc -> C++17 translation unit
//   compile_source   (cpu_compiler.cpp)  C++ -> shared-object bytes
//   load_module      (cpu_module.cpp)    bytes -> dlopen'ed Module
#pragma once

#include <memory>
#include <string>

#include "tilejit/runtime/backend.h"

namespace tilejit::cpu {

/// The version of the entry-point contract below, returned by the generated
/// tilejit_abi_version(); load_module() refuses any other.
inline constexpr int kAbiVersion = 1;

/// The generated entry point. Runs blocks [begin, end) of the grid, block b
/// being (x, y, z) = (b % gx, b / gx % gy, b / (gx * gy)): x varies fastest.
using EntryFn = void (*)(void* const* args, const int64_t* syms, const int64_t* grid,
                         int64_t begin, int64_t end);

/// The translation unit for `request` (see cpu_codegen.cpp for its shape).
/// Throws ValueError when the PrimFunc has no "cpu" body.
std::string generate_source(const runtime::SourceRequest& request);

/// Compiler identity, version, flags and (with -march=native) the host CPU.
std::string toolchain_key(const runtime::CompileOptions& options);

/// Runs the host C++ compiler on `source`; returns the shared object's bytes.
/// Throws CompileError (see cpu_compiler.cpp for the message).
std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options);

/// Loads shared-object bytes. Throws RuntimeError for bytes that do not load.
std::unique_ptr<runtime::Module> load_module(const std::string& binary);

}  // namespace tilejit::cpu

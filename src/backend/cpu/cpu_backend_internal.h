// The stages of the CPU backend, one source file each, tied together by
// CpuBackend in cpu_backend.cpp:
//   generate_source  (cpu_codegen.cpp)   PrimFunc -> C++17 translation unit + KernelAbi
//   compile_source   (cpu_compiler.cpp)  C++ -> shared-object bytes
//   load_module      (cpu_module.cpp)    bytes + KernelAbi -> dlopen'ed Module
#pragma once

#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/host_compiler.h"
#include "core/embedded_file.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu {

/// The version of the entry-point contract below, returned by the generated
/// tilejit_abi_version(); load_module() refuses any other. (3: the entry
/// takes the KernelAbi's argument block.)
inline constexpr int kAbiVersion = 3;
/// The entry point's name in every generated unit.
inline constexpr const char* kEntryName = "tilejit_entry";

/// What a block threw, as the generated entry classifies it (Note [Exceptions
/// from a body] in cpu_codegen.cpp).
enum BlockFaultKind : int {
  kFaultValue = 0,     // std::invalid_argument, std::out_of_range, std::domain_error
  kFaultStd = 1,       // any other std::exception
  kFaultNonStd = 2,    // anything else: `type` may be null, `what` is
};

/// Called by the generated entry, once, for the block whose exception stops
/// its range: the kind, the exception's mangled type name (typeid().name())
/// and its what(). The strings live until the call returns.
using FaultFn = void (*)(void* context, int kind, const char* type, const char* what) noexcept;

/// The device header every generated unit includes first (device/cpu/).
inline constexpr const char* kPreludeName = "tilejit/cpu/prelude.h";

/// The language of generated units and of the device headers.
inline constexpr const char* kCxxStandard = "-std=c++17";

/// An entry point (one per KernelAbi launch). Runs blocks [begin, end) of
/// the grid, block b being (x, y, z) = (b % gx, b / gx % gy, b / (gx * gy)):
/// x varies fastest. `block` is the packed argument block (Note [Kernel
/// ABI]). Returns -1 when every block ran, or the index of the block that
/// threw, after reporting the exception to `fault`; no exception leaves it.
using EntryFn = int64_t (*)(const void* block, const int64_t* grid, int64_t begin, int64_t end,
                            FaultFn fault, void* fault_context);

/// The generated tilejit_kernel_name(): the name of the kernel the binary is
/// for, which the errors of its launches begin with.
using KernelNameFn = const char* (*)();

/// The generated entry as backend/common/cxx_source.h sees it.
extern const backend::CxxEntry kCpuEntry;

/// Writes the head every generated unit starts with, source body or tile
/// body alike: the comment naming the kernel (`what` after it), the
/// prelude, the fault handler (Note [Exceptions from a body] in
/// cpu_codegen.cpp), tilejit_abi_version() and tilejit_kernel_name(). The
/// entry, tilejit_entry with EntryFn's signature, follows.
void emit_entry_head(std::ostream& os, const ir::PrimFunc& f, const char* what);

/// Writes the opening of entry `entry`, EntryFn's signature, unpacking the
/// block of Note [Slot layout] into tilejit_args (one slot per parameter)
/// and tilejit_syms; the arguments (backend::emit_arguments) follow.
void emit_entry_signature(std::ostream& os, const ir::PrimFunc& f, const char* entry);

/// The translation unit for `request` (see cpu_codegen.cpp for its shape;
/// tile_codegen.cpp for a tile body) and its KernelAbi (Note [Slot layout]).
/// Throws ValueError when the PrimFunc has neither a tile body nor a "cpu"
/// source body.
runtime::GeneratedSource generate_source(const runtime::SourceRequest& request);

/// Compiler identity, version, flags and (with -march=native) the host CPU.
std::string toolchain_key(const runtime::CompileOptions& options);

/// Runs the host C++ compiler on `source`; returns the shared object's bytes.
/// Throws CompileError (see cpu_compiler.cpp for the message).
std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options);

using backend::SourceUnit;

/// Runs the host C++ compiler once over several translation units (`units`;
/// the first is the kernel's, shown by a compile error) with `flags` in
/// place of the user's and `link_flags` after the output (each "@DIR@" in
/// one is the working directory, where `files` are written); returns the
/// shared object's bytes. Throws CompileError as compile_source() does.
std::string compile_library(const std::vector<SourceUnit>& units,
                            const std::vector<SourceUnit>& files, const std::string& kernel_name,
                            const std::vector<std::string>& flags,
                            const std::vector<std::string>& link_flags);

/// Export (cpu_export.cpp): the standalone library of Backend::export_library.
std::string export_library(const runtime::ExportRequest& request);

/// The fixed code of the export's launcher unit, after its tables, as
/// embedded from src/backend/cpu/export_runtime/ at build time: launcher.cpp.
std::span<const EmbeddedFile> launcher_files();

/// Loads shared-object bytes whose entries `abi` names. Throws RuntimeError
/// for bytes that do not load, or that lack an entry.
std::unique_ptr<runtime::Module> load_module(const std::string& binary,
                                             const runtime::KernelAbi& abi);

}  // namespace tilejit::cpu

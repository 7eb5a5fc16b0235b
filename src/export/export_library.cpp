// export_library: a Kernel as a standalone shared library with a C ABI.
//
// Note [Exported library]
// An exported library is what a call of the Kernel needs, decided at jit time
// and written out as code, compiled once more by the target's compiler:
//  - the kernel itself: k.source() (the unit the backend generated: code
//    generation stays in the backend) compiled again, for the CPU without
//    -march=native, for CUDA by NVRTC (Note [CUDA export]);
//  - the launcher: the target's (runtime::ExportRequest; CPU:
//    backend/cpu/cpu_export.cpp, running a launch's blocks serially; CUDA:
//    backend/cuda/cuda_export.cpp), defining the wrapper's hooks: begin/end
//    of a call on a device, a launch on the call's stream, zeroing, memory,
//    whether the stream captures a graph;
//  - the wrapper (export_codegen.cpp over the fixed code of runtime/:
//    wrapper_types.h, wrapper_check.cpp, wrapper_call.cpp), target-neutral:
//    the call plan's input specs, symbol bindings and dimension checks as
//    tables, its ShapeProgram as straight-line code, the KernelAbi's block
//    layout and each launch's shared memory, the workspace layout (256-byte
//    aligned offsets in one arena, as the pool leases it), the init
//    policies, a small pool of its own and the C functions of the header.
//    Its messages are the jit path's (jit/call_errors.cpp), with "got NULL"
//    for a missing tensor.
// The fixed code of the wrapper and of the launchers (backend/cpu/ and
// backend/cuda/export_runtime/launcher.cpp) is real source files, embedded
// at build time (Note [Embedded from a marker] in cmake/embed_files.cmake),
// each compiled on its own against a stand-in for the generated tables by
// the ctests export.runtime.*.
// The header (c_header()) is the wrapper's first lines too, so the two can
// never disagree. Nothing in the library refers to libtilejit: it needs the
// C runtime alone (the launchers link the C++ runtime in statically and
// export the C functions only).
//
// The files appear whole or not at all: the library is compiled first, then
// each file is written under a temporary name in its directory and renamed
// over the final name, the header first; when the library's rename fails
// the header is removed again.
//
// Note [CUDA export]
// The CUDA backend's export_library (backend/cuda/cuda_export.cpp) compiles
// the kernel's unit with NVRTC twice: to a cubin for the architecture the
// Kernel was compiled for (its primary device's, Note [Choosing the
// architecture] in cuda_compiler.cpp: sm_90a on an H200) and to PTX for the
// virtual architecture (compute_90; compute_90a when the body needs the
// architecture-specific features), and embeds both as byte arrays in the
// launcher unit (the code: backend/cuda/export_runtime/launcher.cpp),
// compiled with the wrapper by the host C++ compiler
// (backend/common/host_compiler.h) into one shared object linked as the CPU
// export is. The launcher needs no CUDA
// header (it declares the few driver types and enum values it uses) and
// links no libcuda: on the first call that launches it opens libcuda.so.1
// with dlopen under a pthread_once, calls cuInit and resolves the rest
// through cuGetProcAddress at the CUDA 12.0 ABI; a missing driver or a
// failing cuInit is a TILEJIT_RUNTIME_ERROR whose message names dlopen's
// (or cuInit's) error, given by every later call too. A call runs in the
// current context when that is on the tensors' device (wrapper: every
// tensor on one kDLCUDA device), else in the device's primary context, made
// current for the call and the previous one restored after. The module is
// loaded once per context (a lock-free list of contexts, grown under a
// mutex): the cubin, or the PTX when the cubin does not load there (another
// architecture). A launch passes the packed block as the kernel's one
// parameter (kernelParams = {block}, as cuda_module.cpp does), with the
// KernelAbi's threads and shared memory (cuFuncSetAttribute opts in above
// 48 KiB, once per increase), on the caller's `stream` (a CUstream; NULL is
// the legacy default stream). kZero workspaces are cuMemsetD8Async on that
// stream. The wrapper's pool keys its arenas (cuMemAlloc) by context and
// stream (and thread, on the per-thread default stream): an arena is reused
// only by a later call on the stream its last call was queued on, which
// runs after that call's work, so a steady-state call allocates nothing and
// waits for nothing; zero_once tags work as on the CPU. A stream destroyed
// while its work runs and another created at the same address could reuse
// an arena early; streams are not usually recycled that fast. Under stream
// capture (cuStreamIsCapturing, then cuStreamGetCaptureInfo for the graph)
// a pool call gets a new arena (cuMemAlloc in relaxed capture mode, outside
// the graph) that the graph owns through a user object (cuUserObjectCreate,
// cuGraphRetainUserObject with MOVE, as cuda_graph_hook.cpp does): it never
// goes back to the pool while the graph or an executable made from it
// exists; the destructor, on a driver thread, only pushes it onto the free
// list, where any stream of its context may take it (no work is pending on
// it then; the library must stay loaded while such a graph exists). The
// graph zeroes its zero_once regions on every replay.
// _auto_outputs with no allocator is refused under capture
// (TILEJIT_VALUE_ERROR): its outputs are the caller's after the call, yet a
// graph would write them on every replay. Outputs of _auto_outputs with no
// allocator are cuMemAllocAsync on the stream (where the device has memory
// pools), freed by their deleter with cuMemFreeAsync on it.
#include "tilejit/export/export_library.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "export/export_codegen.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit {
namespace {

[[noreturn, gnu::cold]] void throw_write_error(const std::string& kernel, const std::string& path,
                                              int err) {
  TILEJIT_THROW(kRuntimeError) << kernel << ": export_library: cannot write '" << path
                               << "': " << std::strerror(err);
}

// A file `final_path` is renamed from: written whole under a temporary name
// beside it, removed unless commit() renamed it.
class StagedFile {
 public:
  StagedFile(const std::string& kernel, const std::string& final_path, const std::string& bytes,
             mode_t mode)
      : kernel_(kernel), final_(final_path) {
    std::string templ = final_path + ".tmp-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0) throw_write_error(kernel, final_path, errno);
    temp_ = buf.data();
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        throw_write_error(kernel, final_path, err);
      }
      done += size_t(n);
    }
    if (::fchmod(fd, mode) != 0 || ::close(fd) != 0) throw_write_error(kernel, final_path, errno);
  }
  ~StagedFile() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  void commit() {
    if (::rename(temp_.c_str(), final_.c_str()) != 0) throw_write_error(kernel_, final_, errno);
    temp_.clear();
  }

 private:
  std::string kernel_;
  std::string final_;
  std::string temp_;
};

}  // namespace

std::string export_c_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

void export_library(const Kernel& k, const std::string& path) {
  TILEJIT_CHECK(k.defined(), kValueError) << "export_library of an undefined Kernel";
  const std::string& name = k.name();
  TILEJIT_CHECK(!path.empty(), kValueError) << name << ": export_library: the path is empty";
  const std::filesystem::path lib(path);
  TILEJIT_CHECK(lib.has_filename(), kValueError)
      << name << ": export_library: '" << path << "' names a directory, not a library file";
  std::filesystem::path header_path = lib;
  header_path.replace_extension(".h");
  TILEJIT_CHECK(header_path != lib, kValueError)
      << name << ": export_library: '" << path << "' would be overwritten by its own header";

  const std::string op = export_c_name(name);
  const std::string header = exporter::c_header(k, op, header_path.filename().string());
  runtime::ExportRequest request;
  request.kernel_name = name;
  request.kernel_source = &k.source();
  request.abi = &k.abi();
  request.options = &k.compile_options();
  request.device = k.default_device();
  request.wrapper_source = exporter::wrapper_source(k, op, header);
  request.exported_symbols = exporter::exported_symbols(op);
  const std::string binary = runtime::get_backend(k.target()).export_library(request);

  StagedFile header_file(name, header_path.string(), header, 0644);
  StagedFile lib_file(name, path, binary, 0755);
  header_file.commit();
  try {
    lib_file.commit();
  } catch (...) {
    // Not a header without its library.
    ::unlink(header_path.c_str());
    throw;
  }
}

}  // namespace tilejit

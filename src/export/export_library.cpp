// export_library: a Kernel as a standalone shared library with a C ABI.
//
// Note [Exported library]
// An exported library is what a call of the Kernel needs, decided at jit time
// and written out as code, compiled once more by the target's compiler:
//  - the kernel itself: for the CPU target, k.source() (the unit the CPU
//    backend generated: code generation stays in the backend) compiled
//    again, without -march=native, into the library;
//  - the launcher: the target's (runtime::ExportRequest,
//    backend/cpu/cpu_export.cpp), running a launch's blocks serially;
//  - the wrapper (export_codegen.cpp over wrapper_runtime.cpp): the call
//    plan's input specs, symbol bindings and dimension checks as tables, its
//    ShapeProgram as straight-line code, the KernelAbi's block layout, the
//    workspace layout (256-byte aligned offsets in one arena, as the pool
//    leases it), the init policies, a small pool of its own and the C
//    functions of the header. Its messages are the jit path's
//    (jit/call_errors.cpp), with "got NULL" for a missing tensor.
// The header (c_header()) is the wrapper's first lines too, so the two can
// never disagree. Nothing in the library refers to libtilejit: it needs the
// C runtime alone (cpu_export.cpp links the C++ runtime in statically and
// exports the C functions only).
//
// The files appear whole or not at all: the library is compiled first, then
// each file is written under a temporary name in its directory and renamed
// over the final name, the header first; when the library's rename fails
// the header is removed again.
//
// Note [CUDA export] (designed, not implemented)
// A CUDA export would keep this wrapper as it is and change the target's
// part: Backend::export_library of the CUDA backend would compile the kernel
// with NVRTC to a cubin for the export's architecture plus PTX for newer ones,
// and embed both as byte arrays in a launcher unit. The launcher would open
// libcuda.so.1 with dlopen on first use (under a pthread_once; a missing
// driver is a TILEJIT_RUNTIME_ERROR naming dlopen's error), resolve
// cuGetProcAddress and through it the few entry points it needs
// (cuCtxGetCurrent / cuDevicePrimaryCtxRetain, cuModuleLoadData,
// cuModuleGetFunction, cuFuncSetAttribute, cuLaunchKernel, cuMemsetD8Async,
// cuMemAllocAsync / cuMemFreeAsync for the pool), load the cubin per
// context (falling back to the PTX when the device's architecture is not
// the cubin's), and launch with `stream` as a CUstream, passing the packed
// block as CU_LAUNCH_PARAM_BUFFER_POINTER, as cuda_module.cpp does. The
// device checks would compare kDLCUDA and the tensors' device ids; the pool
// would key its arenas by (device, stream) and free stream-ordered, and
// kZero would be a cuMemsetD8Async on the stream. No CUDA header would be
// needed at build time of the consumer: the few types are opaque pointers.
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

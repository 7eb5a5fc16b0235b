// The CPU backend's load and launch stages: shared-object bytes and a
// KernelAbi -> a dlopen'ed Module whose launch() packs the argument block and
// runs each launch's grid of blocks on the thread pool.
//
// Note [Loading from memory]
// The bytes go into an anonymous memfd and are dlopen'ed as
// "/proc/self/fd/N": no file on disk to clean up or race on. glibc matches
// an already-loaded library by the path string before it looks at the file,
// so two libraries must never be opened under the same "/proc/self/fd/N"
// while the first is loaded. Hence the memfd stays open until after
// dlclose (the number cannot be reused meanwhile), and a path that still
// names a library (one that dlclose could not unload) is avoided by moving
// the memfd to another number.
//
// Bytes that are not a complete shared object for this machine are refused
// before dlopen, which would otherwise map a truncated file and fault on
// the missing pages instead of failing.
//
// A block's exception comes back from the entry as text (Note [Exceptions
// from a body] in cpu_codegen.cpp) and is raised here as an Error that names
// the kernel and the block.
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/common/slot_abi.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "backend/cpu/thread_pool.h"
#include "tilejit/core/error.h"

namespace tilejit::cpu {
namespace {

#if defined(__x86_64__)
constexpr int kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kHostMachine = EM_AARCH64;
#else
constexpr int kHostMachine = -1;  // not checked
#endif

// Why `bytes` cannot be a loadable shared object here, or "" when it can.
std::string elf_problem(const std::string& bytes) {
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  if (bytes.empty()) return "the binary is empty";
  if (bytes.size() < sizeof(Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return "the binary is not an ELF file (" + std::to_string(bytes.size()) + " bytes)";
  }
  Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  const uint64_t size = bytes.size();
  if (eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      eh.e_type != ET_DYN || (kHostMachine >= 0 && eh.e_machine != kHostMachine)) {
    return "the binary is not a shared object for this machine";
  }
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phoff > size ||
      uint64_t(eh.e_phnum) * sizeof(Phdr) > size - eh.e_phoff) {
    return "the binary's program headers are truncated";
  }
  // dlopen never reads the section headers, but they are the last thing the
  // linker writes: a file cut short loses them first.
  if (eh.e_shnum != 0 &&
      (eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shoff > size ||
       uint64_t(eh.e_shnum) * sizeof(ElfW(Shdr)) > size - eh.e_shoff)) {
    return "the binary's section headers are truncated";
  }
  for (int i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + uint64_t(i) * sizeof(Phdr), sizeof ph);
    if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)) {
      return "the binary is truncated (a loadable segment ends past its " +
             std::to_string(size) + " bytes)";
    }
  }
  return "";
}

[[noreturn, gnu::cold]] void throw_load_error(const std::string& what) {
  TILEJIT_THROW(kRuntimeError) << "cpu backend: cannot load the kernel binary: " << what;
}

std::string dl_error_text() {
  const char* e = dlerror();
  return e ? e : "unknown dlerror";
}

// Owns an fd: closes it unless it was moved away or set to -1.
struct FdGuard {
  int fd = -1;
  explicit FdGuard(int f) : fd(f) {}
  FdGuard(FdGuard&& other) noexcept : fd(other.fd) { other.fd = -1; }
  FdGuard& operator=(FdGuard&&) = delete;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

struct LaunchContext {
  EntryFn entry;
  const void* block;
  const int64_t* grid;
  const std::string* kernel_name;
  int launch;        // which of the kernel's launches
  int num_launches;  // named in errors when more than one
};

// What the entry reported of the block that threw.
struct BlockFault {
  int kind = kFaultNonStd;
  std::string type;  // mangled
  std::string what;
};

void record_fault(void* context, int kind, const char* type, const char* what) noexcept {
  auto* fault = static_cast<BlockFault*>(context);
  fault->kind = kind;
  try {
    if (type != nullptr) fault->type = type;
    if (what != nullptr) fault->what = what;
  } catch (...) {
    // Out of memory for the text: the error still names the kernel and block.
  }
}

// "std::runtime_error" for "St13runtime_error"; `mangled` itself when it
// does not demangle. A class the body declared is local to the lambda that
// runs it (cpu_codegen.cpp): it is shown by its name in the body.
std::string demangle(const std::string& mangled) {
  static constexpr std::string_view kBodyScope = "tilejit_entry::{lambda()#1}::operator()() const::";
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (name == nullptr) return mangled;
  std::string_view out = name.get();
  if (out.starts_with(kBodyScope)) out.remove_prefix(kBodyScope.size());
  return std::string(out);
}

[[noreturn, gnu::cold]] void throw_block_fault(const LaunchContext& c, int64_t block,
                                               const BlockFault& fault) {
  const int64_t* grid = c.grid;
  std::ostringstream os;
  os << *c.kernel_name << ": ";
  if (c.num_launches > 1) os << "launch #" << c.launch << ", ";
  os << "block (" << block % grid[0] << ", " << block / grid[0] % grid[1]
     << ", " << block / grid[0] / grid[1] << ") threw ";
  if (fault.kind == kFaultNonStd) {
    os << "a non-standard exception";
    if (!fault.type.empty()) os << " of type " << demangle(fault.type);
    TILEJIT_THROW(kRuntimeError) << os.str();
  }
  os << demangle(fault.type);
  if (!fault.what.empty()) os << ": " << fault.what;
  if (fault.kind == kFaultValue) TILEJIT_THROW(kValueError) << os.str();
  TILEJIT_THROW(kRuntimeError) << os.str();
}

void run_blocks(void* context, int64_t begin, int64_t end) {
  const auto* c = static_cast<const LaunchContext*>(context);
  BlockFault fault;
  const int64_t failed =
      c->entry(c->block, c->grid, begin, end, record_fault, &fault);
  // The pool skips the chunks not yet started and rethrows in the launcher.
  if (TILEJIT_UNLIKELY(failed >= 0)) throw_block_fault(*c, failed, fault);
}

class CpuModule final : public runtime::Module {
 public:
  CpuModule(void* handle, int fd, std::vector<EntryFn> entries, runtime::KernelAbi abi,
            std::string kernel_name)
      : handle_(handle),
        fd_(fd),
        entries_(std::move(entries)),
        abi_(std::move(abi)),
        num_values_(abi_.num_values()),
        num_symbols_(abi_.num_symbols()),
        num_results_(abi_.num_results()),
        packer_(abi_),
        kernel_name_(std::move(kernel_name)) {}
  ~CpuModule() override {
    dlclose(handle_);
    ::close(fd_);  // after dlclose: Note [Loading from memory]
  }
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;

  void launch(const runtime::LaunchParams& p) override {
    backend::check_launch_params(abi_, num_values_, num_symbols_, num_results_, p, "cpu");
    // Note [Kernel ABI]: the block the entries read, packed once for all
    // launches (the launches run one after another, so it outlives them).
    alignas(64) unsigned char block[runtime::KernelAbi::kMaxBlockBytes];
    packer_.pack(p.args, p.symbols, block);
    const int num_launches = int(abi_.launches.size());
    for (int l = 0; l < num_launches; ++l) {
      const runtime::AbiLaunch& a = abi_.launches[size_t(l)];
      const int64_t grid[3] = {p.results[a.grid[0]], p.results[a.grid[1]], p.results[a.grid[2]]};
      int64_t total = 1;
      for (int d = 0; d < 3; ++d) {
        if (TILEJIT_UNLIKELY(grid[d] < 0 || __builtin_mul_overflow(total, grid[d], &total))) {
          TILEJIT_THROW(kValueError) << "cpu launch: invalid grid (" << grid[0] << ", " << grid[1]
                                     << ", " << grid[2] << ")";
        }
      }
      // The pool returns when every block has run: launch l + 1 sees all of
      // launch l's writes, as kernels on one stream would.
      LaunchContext context{entries_[size_t(l)], block, grid, &kernel_name_, l, num_launches};
      ThreadPool::global().run(total, run_blocks, &context);
    }
  }

 private:
  void* handle_;
  int fd_;
  std::vector<EntryFn> entries_;  // one per launch
  runtime::KernelAbi abi_;
  int num_values_;
  int num_symbols_;
  int num_results_;
  runtime::AbiPacker packer_;  // Note [Kernel ABI]: the one packing
  std::string kernel_name_;
};

}  // namespace

std::unique_ptr<runtime::Module> load_module(const std::string& binary,
                                             const runtime::KernelAbi& abi) {
  if (std::string problem = elf_problem(binary); !problem.empty()) throw_load_error(problem);
  if (std::string problem = abi.problem(); !problem.empty()) {
    throw_load_error("its KernelAbi is not well formed: " + problem);
  }

  FdGuard fd{::memfd_create("tilejit_kernel", MFD_CLOEXEC)};
  if (fd.fd < 0) throw_load_error(std::string("memfd_create: ") + std::strerror(errno));
  for (size_t done = 0; done < binary.size();) {
    const ssize_t n = ::write(fd.fd, binary.data() + done, binary.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_load_error(std::string("writing the memfd: ") + std::strerror(errno));
    done += size_t(n);
  }

  // Note [Loading from memory]: step past any path that still names a
  // library. The numbers passed over stay open until we are done, so the
  // next try cannot be handed one of them again.
  std::vector<FdGuard> passed_over;
  std::string path;
  for (int attempt = 0;; ++attempt) {
    path = "/proc/self/fd/" + std::to_string(fd.fd);
    void* stale = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (stale == nullptr) break;
    dlclose(stale);
    const int moved = ::fcntl(fd.fd, F_DUPFD_CLOEXEC, 0);
    if (attempt >= 64 || moved < 0) throw_load_error("no free path for " + path);
    passed_over.emplace_back(fd.fd);
    fd.fd = moved;
  }

  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw_load_error(dl_error_text());
  auto fail = [&](const std::string& what) {
    dlclose(handle);
    throw_load_error(what);
  };
  dlerror();
  auto version = reinterpret_cast<int (*)()>(dlsym(handle, "tilejit_abi_version"));
  if (version == nullptr) fail(dl_error_text());
  if (const int v = version(); v != kAbiVersion) {
    fail("its ABI version is " + std::to_string(v) + "; this tilejit expects " +
         std::to_string(kAbiVersion));
  }
  std::vector<EntryFn> entries;
  for (const runtime::AbiLaunch& l : abi.launches) {
    auto entry = reinterpret_cast<EntryFn>(dlsym(handle, l.entry.c_str()));
    if (entry == nullptr) fail(dl_error_text());
    entries.push_back(entry);
  }
  auto name = reinterpret_cast<KernelNameFn>(dlsym(handle, "tilejit_kernel_name"));
  if (name == nullptr) fail(dl_error_text());
  auto module = std::make_unique<CpuModule>(handle, fd.fd, std::move(entries), abi, name());
  fd.fd = -1;  // the module owns it now
  return module;
}

}  // namespace tilejit::cpu

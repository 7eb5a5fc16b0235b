// Finding and loading NVRTC and the CUDA headers: see nvrtc_loader.h for
// the search order.
#include "backend/cuda/nvrtc_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

// Library names, newest first: a CUDA 13 NVRTC knows every arch a 12 one
// does and more.
constexpr const char* kNames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};

struct Loaded {
  NvrtcApi api;
  bool ok = false;
  std::string reason;
};

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
}

// The directory of the shared object that holds `symbol`, or "".
std::string directory_of(const void* symbol) {
  Dl_info info;
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  char* real = ::realpath(info.dli_fname, nullptr);
  std::string path = real ? real : info.dli_fname;
  std::free(real);
  return parent(path);
}

std::vector<std::string> glob_dirs(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g;
  if (::glob(pattern.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  // Newest Python first, so the order does not depend on the file system.
  std::sort(out.rbegin(), out.rend());
  return out;
}

// Directories that may hold pip's nvidia/ packages.
std::vector<std::string> site_packages() {
  std::vector<std::string> dirs;
  // libtilejit inside a wheel sits a few levels under site-packages.
  for (std::string d = directory_of(reinterpret_cast<const void*>(&site_packages)); !d.empty();
       d = parent(d)) {
    dirs.push_back(d);
    if (dirs.size() >= 4) break;
  }
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (std::string p = env(var); !p.empty()) prefixes.push_back(p);
  }
  if (std::string home = env("HOME"); !home.empty()) prefixes.push_back(home + "/.local");
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  for (const std::string& p : prefixes) {
    for (const char* kind : {"site-packages", "dist-packages"}) {
      for (std::string& d : glob_dirs(p + "/lib/python3*/" + kind)) dirs.push_back(std::move(d));
    }
  }
  dirs.push_back("/usr/lib/python3/dist-packages");
  return dirs;
}

// Every path to try, in order (nvrtc_loader.h).
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (std::string p = env("TILEJIT_NVRTC"); !p.empty()) out.push_back(p);
  for (const char* name : kNames) out.emplace_back(name);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (std::string root = env(var); !root.empty()) {
      for (const char* name : kNames) out.push_back(root + "/lib64/" + name);
    }
  }
  for (const char* name : kNames) out.push_back(std::string("/usr/local/cuda/lib64/") + name);
  for (const std::string& sp : site_packages()) {
    if (is_file(sp + "/nvidia/cu13/lib/libnvrtc.so.13")) out.push_back(sp + "/nvidia/cu13/lib/libnvrtc.so.13");
    if (is_file(sp + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")) {
      out.push_back(sp + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    }
  }
  return out;
}

// The include directory holding cuda_bf16.h (nvrtc_loader.h for the order).
std::string find_include_dir(const std::string& nvrtc_dir) {
  std::vector<std::string> dirs;
  if (std::string p = env("TILEJIT_CUDA_INCLUDE"); !p.empty()) dirs.push_back(p);
  if (!nvrtc_dir.empty()) {
    const std::string up = parent(nvrtc_dir);
    dirs.push_back(up + "/include");                    // toolkit lib64/, pip cu13/lib/
    dirs.push_back(parent(up) + "/cuda_runtime/include");  // pip cu12: nvidia/cuda_nvrtc/lib/
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (std::string root = env(var); !root.empty()) dirs.push_back(root + "/include");
  }
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string& d : dirs) {
    if (is_file(d + "/cuda_bf16.h") && is_file(d + "/cuda_fp16.h")) return d;
  }
  return "";
}

Loaded* load_nvrtc() {
  auto* l = new Loaded;  // never freed, as the driver's table
  std::string tried;
  void* handle = nullptr;
  for (const std::string& c : candidates()) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle != nullptr) {
      l->api.path = c;
      break;
    }
    const char* e = dlerror();
    tried += "\n  " + (e ? std::string(e) : c + ": unknown dlerror");
  }
  if (handle == nullptr) {
    l->reason = "cannot load NVRTC (set TILEJIT_NVRTC to the library's path); tried:" + tried;
    return l;
  }
  NvrtcApi& api = l->api;
  std::string missing;
#define TILEJIT_NVRTC_LOAD(name)                                                   \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));           \
  if (api.name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  TILEJIT_NVRTC_API(TILEJIT_NVRTC_LOAD)
#undef TILEJIT_NVRTC_LOAD
  if (!missing.empty()) {
    l->reason = api.path + " lacks " + missing + " (NVRTC 11.2 or newer is needed)";
    return l;
  }
  api.nvrtcVersion(&api.major, &api.minor);
  int n = 0;
  if (api.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    api.archs.resize(size_t(n));
    if (api.nvrtcGetSupportedArchs(api.archs.data()) != NVRTC_SUCCESS) api.archs.clear();
    std::sort(api.archs.begin(), api.archs.end());
  }
  if (api.archs.empty()) {
    l->reason = api.path + ": nvrtcGetSupportedArchs failed";
    return l;
  }
  const std::string lib_dir = directory_of(reinterpret_cast<const void*>(api.nvrtcVersion));
  if (std::string inc = find_include_dir(lib_dir); !inc.empty()) {
    api.include_dirs.push_back(inc);
    struct stat st;
    if (::stat((inc + "/cccl").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      api.include_dirs.push_back(inc + "/cccl");
    }
  }
  l->ok = true;
  return l;
}

Loaded& loaded() {
  static Loaded* l = load_nvrtc();
  return *l;
}

}  // namespace

const NvrtcApi* nvrtc_or_null() noexcept {
  Loaded& l = loaded();
  return l.ok ? &l.api : nullptr;
}

const std::string& nvrtc_unavailable_reason() noexcept { return loaded().reason; }

const NvrtcApi& nvrtc() {
  Loaded& l = loaded();
  TILEJIT_CHECK(l.ok, kRuntimeError) << "cuda backend: " << l.reason;
  return l.api;
}

}  // namespace tilejit::cuda

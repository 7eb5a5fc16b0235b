// tilejit._C: the extension module. The IR and the kernel have their own
// files (ir_bindings.cpp, kernel_object.cpp); this one holds the module's
// set-up and the runtime's process-wide knobs and counters: the workspace
// pools, the compile cache, the CPU thread count and host block cache.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>

#include "errors.h"
#include "ir_bindings.h"
#include "ir_builder.h"
#include "kernel_object.h"
#include "numpy_interop.h"
#include "tensor_owner.h"
#include "tilejit/backend/cpu.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/compile_cache.h"
#include "tilejit/runtime/source_postproc.h"
#include "tilejit/runtime/workspace_pool.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// "cpu", "cuda", "cuda:1" -> a Device.
Device parse_device(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string type = text.substr(0, colon);
  int32_t id = 0;
  if (colon != std::string::npos) {
    const std::string digits = text.substr(colon + 1);
    const bool ok = !digits.empty() && digits.size() < 6 &&
                    digits.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) throw_error(ErrorKind::kValueError, "bad device '" + text + "'; expected 'cpu', "
                                                 "'cuda' or 'cuda:N'");
    id = std::stoi(digits);
  }
  if (type == "cpu" && id == 0) return Device::cpu();
  if (type == "cuda") return Device::cuda(id);
  throw_error(ErrorKind::kValueError, "bad device '" + text + "'; expected 'cpu', 'cuda' or 'cuda:N'");
}

// The backend serving `device`; ValueError naming the registered targets.
runtime::Backend& backend_for(const Device& device) {
  runtime::Backend* backend = runtime::find_backend(device.type);
  if (backend == nullptr) {
    std::string targets;
    for (const std::string& t : runtime::registered_targets()) targets += (targets.empty() ? "" : ", ") + t;
    throw_error(ErrorKind::kValueError, "no backend serves device '" + device.str() +
                                            "'; registered targets: " + targets);
  }
  return *backend;
}

runtime::WorkspacePool& pool_for(const std::string& device_text) {
  const Device device = parse_device(device_text);
  return runtime::WorkspacePool::get(backend_for(device), device);
}

nb::dict pool_stats(const std::string& device) {
  const runtime::PoolStats s = pool_for(device).stats();
  nb::dict d;
  d["leases"] = s.leases;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["device_allocs"] = s.device_allocs;
  d["device_frees"] = s.device_frees;
  d["oom_retries"] = s.oom_retries;
  d["bytes_reserved"] = s.bytes_reserved;
  d["bytes_in_use"] = s.bytes_in_use;
  d["peak_bytes_reserved"] = s.peak_bytes_reserved;
  d["blocks"] = s.blocks;
  return d;
}

nb::dict cache_stats() {
  runtime::CompileCache& cache = runtime::CompileCache::global();
  const runtime::CompileCacheStats s = cache.stats();
  const runtime::DiskCacheStats disk = cache.disk().stats();
  nb::dict d;
  d["memory_hits"] = s.memory_hits;
  d["disk_hits"] = s.disk_hits;
  d["compiles"] = s.compiles;
  d["loads"] = s.loads;
  nb::dict dd;
  dd["dir"] = cache.disk().dir();
  dd["hits"] = disk.hits;
  dd["misses"] = disk.misses;
  dd["corrupt"] = disk.corrupt;
  dd["stores"] = disk.stores;
  dd["store_failures"] = disk.store_failures;
  d["disk"] = dd;
  return d;
}

nb::dict host_cache_stats() {
  const cpu::HostCacheStats s = cpu::host_cache_stats();
  nb::dict d;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["returns"] = s.returns;
  d["frees"] = s.frees;
  d["bytes_cached"] = s.bytes_cached;
  d["blocks_cached"] = s.blocks_cached;
  d["limit"] = s.limit;
  return d;
}

// Frees the cached (unleased) workspace blocks of every available backend's
// default device and the host block cache's blocks, and drops loaded modules
// that no kernel holds. Returns the bytes freed.
size_t empty_cache() {
  size_t freed = 0;
  for (const std::string& target : runtime::registered_targets()) {
    runtime::Backend& backend = runtime::get_backend(target);
    if (!backend.available()) continue;
    freed += runtime::WorkspacePool::get(backend, backend.default_device()).empty_cache();
  }
  runtime::CompileCache::global().clear_memory();
  return freed + cpu::empty_host_cache();
}

}  // namespace
}  // namespace tilejit::python

NB_MODULE(_C, m) {
  using namespace tilejit;
  using namespace tilejit::python;
  m.doc() = "tilejit's C++ core: the IR, jit(), kernels and the runtime's counters.";
  numpy::init();
  register_errors(m.ptr());
  register_tensor_owner(m.ptr());
  bind_ir(m);
  bind_ir_builder(m);
  bind_kernel(m);

  m.def("pool_stats", &pool_stats, nb::arg("device") = "cpu",
        "The workspace pool's counters for a device ('cpu', 'cuda', 'cuda:N').");
  m.def("set_workspace_limit",
        [](size_t bytes, const std::string& device) { pool_for(device).set_limit(bytes); },
        nb::arg("bytes"), nb::arg("device") = "cpu",
        "Caps the bytes the device's workspace pool may reserve (0: no cap).");
  m.def("workspace_limit", [](const std::string& device) { return pool_for(device).limit(); },
        nb::arg("device") = "cpu");
  m.def("cache_stats", &cache_stats, "The compile cache's counters (memory and disk).");
  m.def("empty_cache", &empty_cache,
        "Frees cached workspace and host blocks and loaded modules no kernel holds; returns "
        "bytes freed.");
  m.def("host_cache_stats", &host_cache_stats,
        "The counters of the cache of host blocks that large CPU outputs come from.");
  m.def("set_host_cache_limit", &cpu::set_host_cache_limit, nb::arg("bytes"),
        "Caps the bytes the host block cache keeps (0: none).");
  m.def("set_cache_dir",
        [](const std::string& dir) { runtime::CompileCache::global().set_disk_dir(dir); },
        nb::arg("path"), "Points the disk cache of binaries at `path` ('' disables it).");
  m.def("cache_dir", [] { return runtime::CompileCache::global().disk().dir(); },
        "The disk cache's directory ('' when disabled).");
  m.def("set_num_threads", &cpu::set_num_threads, nb::arg("n"),
        "Threads that run the blocks of a CPU launch, counting the caller.");
  m.def("get_num_threads", &cpu::num_threads);
  m.def("set_source_postproc",
        [](const std::string& target, nb::object fn) {
          if (fn.is_none()) {
            runtime::set_source_postproc(target, {});
            return;
          }
          // Kernel::jit copies and calls the hook with the GIL released: the
          // callable is held behind a shared_ptr (no reference counting of
          // it without the GIL), and taken with the GIL to call or release.
          struct Holder {
            nb::object fn;
            ~Holder() {
              nb::gil_scoped_acquire gil;
              fn.reset();
            }
          };
          auto held = std::make_shared<Holder>();
          held->fn = std::move(fn);
          runtime::set_source_postproc(
              target, [held](const std::string& source, const std::string& t) {
                nb::gil_scoped_acquire gil;
                nb::object out = held->fn(source, t);
                if (!nb::isinstance<nb::str>(out)) {
                  throw nb::type_error(("the " + t + " source post-processing callback returned " +
                                        std::string(nb::type_name(out.type()).c_str()) +
                                        ", not the source as a str")
                                           .c_str());
                }
                return nb::cast<std::string>(out);
              });
        },
        nb::arg("target"), nb::arg("fn").none(),
        "Registers fn(source, target) -> source to rewrite each kernel's generated source for "
        "`target` before it is compiled (None removes it; Note [Source post-processing]).");
  m.def("registered_targets", &runtime::registered_targets);
  m.def("target_available",
        [](const std::string& target) { return runtime::get_backend(target).available(); },
        nb::arg("target"));
}

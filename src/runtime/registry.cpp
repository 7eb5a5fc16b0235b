// The backend registry: target name -> Backend, filled by static
// initializers in the backends' own sources (BackendRegistration).
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::runtime {
namespace {

struct Registry {
  std::mutex mutex;
  // Registration order; entries are never removed, so a Backend& handed out
  // stays valid for the life of the process (the vector moves only the
  // unique_ptrs when it grows, never the backends).
  std::vector<std::unique_ptr<Backend>> backends;
};

// Backends register from static initializers in other translation units,
// whose order relative to ours is unspecified, so the registry is made on
// first use rather than being a namespace-scope object. It is never
// destroyed: kernels, pools and caches in other static objects keep
// references to backends and may run their destructors after ours would
// have run; a backend that outlives them all costs nothing at exit.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

// "cpu, cuda", or "(none)"; the caller holds the registry's mutex.
std::string target_list_locked(const Registry& r) {
  if (r.backends.empty()) return "(none)";
  std::string out;
  for (const auto& b : r.backends) {
    if (!out.empty()) out += ", ";
    out += b->target();
  }
  return out;
}

// Why target="auto" found nothing: what the function has bodies for, and
// which targets could have run it.
[[noreturn, gnu::cold, gnu::noinline]] void throw_no_auto_backend(
    const ir::PrimFunc& func, const std::vector<Backend*>& backends) {
  std::string bodies = func.is_tile() ? "tile IR" : "";
  for (const auto& [target, _] : func.sources()) bodies += (bodies.empty() ? "" : ", ") + target;
  std::string available;
  for (const Backend* b : backends) {
    if (b->available()) available += (available.empty() ? "" : ", ") + b->target();
  }
  TILEJIT_THROW(kValueError) << func.name << ": target 'auto' found no available target that "
                             << "can run it (bodies given: " << (bodies.empty() ? "none" : bodies)
                             << "; available targets: "
                             << (available.empty() ? "none" : available) << ")";
}

}  // namespace

Backend& get_backend(std::string_view target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& b : r.backends) {
    if (b->target() == target) return *b;
  }
  TILEJIT_THROW(kValueError) << "unknown target '" << target
                             << "'; registered targets: " << target_list_locked(r);
}

Backend& auto_backend(const ir::PrimFunc& func) {
  // The ranks are asked outside the lock: available() may load a driver.
  // Backends are never removed, so the pointers stay valid.
  std::vector<Backend*> backends;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& b : r.backends) backends.push_back(b.get());
  }
  Backend* best = nullptr;
  int best_rank = -1;
  for (Backend* b : backends) {
    if (!b->available()) continue;
    const int rank = b->auto_rank(func);
    if (rank > best_rank) {
      best = b;
      best_rank = rank;
    }
  }
  if (best == nullptr) [[unlikely]] throw_no_auto_backend(func, backends);
  return *best;
}

Backend* find_backend(DeviceType type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& b : r.backends) {
    if (b->device_type() == type) return b.get();
  }
  return nullptr;
}

std::vector<std::string> registered_targets() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  out.reserve(r.backends.size());
  for (const auto& b : r.backends) out.push_back(b->target());
  return out;
}

void register_backend(std::unique_ptr<Backend> backend) {
  TILEJIT_CHECK(backend != nullptr, kInternalError) << "register_backend: the backend is null";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& b : r.backends) {
    // The new backend is dropped (its unique_ptr goes out of scope as the
    // error unwinds); the registered one stays in place.
    TILEJIT_CHECK(b->target() != backend->target(), kInternalError)
        << "register_backend: a backend for target '" << backend->target()
        << "' is already registered";
  }
  r.backends.push_back(std::move(backend));
}

BackendRegistration::BackendRegistration(std::unique_ptr<Backend> (*factory)()) {
  register_backend(factory());
}

}  // namespace tilejit::runtime

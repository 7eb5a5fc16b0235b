// CompileCache: source -> Module through memory, then disk, then the
// compiler. See compile_cache.h.
#include "tilejit/runtime/compile_cache.h"

#include <utility>

#include "tilejit/core/error.h"

namespace tilejit::runtime {

CompileCache::CompileCache() : disk_(std::make_shared<DiskCache>(DiskCache::default_dir())) {}

CompileCache& CompileCache::global() {
  // Never destroyed: modules may be unloaded by their own destructors only
  // while their backend is alive, and kernels in other static objects hold
  // modules past the point where a function-local static would be gone.
  static CompileCache* instance = new CompileCache();
  return *instance;
}

std::string CompileCache::key(Backend& backend, const std::string& source, const KernelAbi& abi,
                              const CompileOptions& options, Device device) {
  std::string text = backend.target();
  text += '\0';
  text += backend.toolchain_key(options, device);
  text += '\0';
  text += abi.serialize();
  text += '\0';
  text += source;
  return hash_hex(text);
}

std::shared_ptr<Module> CompileCache::get(Backend& backend, const std::string& source,
                                          const KernelAbi& abi, const std::string& kernel_name,
                                          const CompileOptions& options, Device device,
                                          bool use_disk) {
  // A binary is per target and toolchain; a loaded module is per device too.
  const std::string binary_key = key(backend, source, abi, options, device);
  const std::string module_key = binary_key + "@" + device.str();

  std::shared_ptr<std::mutex> build_mutex;
  std::shared_ptr<DiskCache> disk;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = modules_.find(module_key); it != modules_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
    auto& slot = building_[module_key];
    if (!slot) slot = std::make_shared<std::mutex>();
    build_mutex = slot;
    disk = disk_;
  }

  // One builder per key; the others wait here and then find its module.
  // The main mutex is not held: compiling takes seconds, and other keys must
  // not wait for it.
  std::lock_guard<std::mutex> build_lock(*build_mutex);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = modules_.find(module_key); it != modules_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  // Drops the build slot on every path, failures included, so that a later
  // call retries instead of finding a stale slot. Waiters already holding
  // the mutex keep it alive through their shared_ptr.
  struct SlotEraser {
    CompileCache* cache;
    const std::string& key;
    ~SlotEraser() {
      std::lock_guard<std::mutex> lock(cache->mutex_);
      cache->building_.erase(key);
    }
  } eraser{this, module_key};

  std::shared_ptr<Module> module;
  bool from_disk = false;
  const bool disk_on = use_disk && disk && disk->enabled();
  if (disk_on) {
    if (std::optional<std::string> entry = disk->load(binary_key)) {
      // Note [ABI beside the binary].
      size_t abi_bytes = 0;
      const std::optional<KernelAbi> stored = KernelAbi::deserialize(*entry, &abi_bytes);
      if (!stored || *stored != abi) {
        disk->discard(binary_key);
      } else {
        try {
          module = backend.load(entry->substr(abi_bytes), *stored, device);
          from_disk = true;
        } catch (const Error&) {
          // Bytes that passed the checksum but do not load (a stale or
          // foreign binary): never run them; the recompiled binary below
          // replaces the entry.
        }
      }
    }
  }
  if (!module) {
    std::string binary = backend.compile(source, kernel_name, options, device);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.compiles;
    }
    // A failed store has already warned and counted; the binary still loads.
    if (disk_on) disk->store(binary_key, abi.serialize() + binary);
    module = backend.load(binary, abi, device);
  }

  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.loads;
  if (from_disk) ++stats_.disk_hits;
  modules_[module_key] = module;
  return module;
}

void CompileCache::clear_memory() {
  // Swapped out and destroyed outside the lock: a module's destructor may
  // call into its backend.
  std::map<std::string, std::shared_ptr<Module>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(modules_);
  }
}

void CompileCache::set_disk_dir(std::string dir) {
  auto disk = std::make_shared<DiskCache>(std::move(dir));
  std::lock_guard<std::mutex> lock(mutex_);
  disk_ = std::move(disk);
}

DiskCache& CompileCache::disk() {
  std::lock_guard<std::mutex> lock(mutex_);
  return *disk_;
}

CompileCacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tilejit::runtime

// Note [Source post-processing] (tilejit/runtime/source_postproc.h).
#include "tilejit/runtime/source_postproc.h"

#include <map>
#include <mutex>
#include <utility>

namespace tilejit::runtime {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, SourcePostproc> hooks;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: hooks may outlive static teardown
  return *r;
}

}  // namespace

void set_source_postproc(const std::string& target, SourcePostproc fn) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (fn) {
    r.hooks[target] = std::move(fn);
  } else {
    r.hooks.erase(target);
  }
}

SourcePostproc source_postproc(const std::string& target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.hooks.find(target);
  return it == r.hooks.end() ? SourcePostproc() : it->second;
}

}  // namespace tilejit::runtime

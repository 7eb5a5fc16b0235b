// Helpers shared by the CPU backend tests: build a kernel through the
// backend's stages, launch it, and set environment variables for a scope.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilejit/backend/cpu.h"
#include "common/test_util.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu::testing {

using tilejit::testing::error_message;
using tilejit::testing::ScopedEnv;
using tilejit::testing::TempDir;

inline runtime::Backend& cpu_backend() { return runtime::get_backend("cpu"); }

/// generate -> compile -> load, as the runtime's cache would.
inline std::unique_ptr<runtime::Module> build(const ir::PrimFunc& f,
                                              const std::vector<std::string>& symbols = {},
                                              const runtime::CompileOptions& options = {}) {
  runtime::Backend& be = cpu_backend();
  runtime::SourceRequest request{&f, symbols};
  const runtime::GeneratedSource generated = be.generate(request);
  const std::string binary = be.compile(generated.source, f.name, options, Device::cpu());
  return be.load(binary, generated.abi, Device::cpu());
}

/// The KernelAbi of a generated entry whose PrimFunc has `num_pointers`
/// tensor parameters and no symbols (Note [Slot layout]).
inline runtime::KernelAbi pointer_abi(int num_pointers) {
  runtime::KernelAbi abi;
  for (int k = 0; k < num_pointers; ++k) {
    abi.add(runtime::AbiArgKind::kPointer, "p" + std::to_string(k), k, 8, 8);
  }
  runtime::AbiLaunch launch;
  launch.entry = "tilejit_entry";
  launch.grid[0] = 0, launch.grid[1] = 1, launch.grid[2] = 2, launch.smem = 3;  // as launch() gives
  abi.launches.push_back(launch);
  return abi;
}

/// Launches the module's one launch.
inline void launch(runtime::Module& m, const std::vector<void*>& args,
                   const std::vector<int64_t>& symbols, std::array<int64_t, 3> grid) {
  // Results 0-3: the grid and the shared memory of a KernelAbi made from a
  // request by hand (SourceRequest::launches).
  const int64_t results[4] = {grid[0], grid[1], grid[2], 0};
  runtime::LaunchParams p;
  p.args = args.data();
  p.num_args = int(args.size());
  p.symbols = symbols.data();
  p.num_symbols = int(symbols.size());
  p.results = results;
  p.num_results = 4;
  p.device = Device::cpu();
  m.launch(p);
}


/// Sets the CPU thread count and restores it.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : old_(num_threads()) { set_num_threads(n); }
  ~ScopedThreads() { set_num_threads(old_); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int old_;
};

}  // namespace tilejit::cpu::testing

// Note [Slot layout] in slot_abi.h.
#include "backend/common/slot_abi.h"

#include "tilejit/core/error.h"

namespace tilejit::backend {

runtime::KernelAbi slot_abi(const runtime::SourceRequest& request,
                            std::vector<runtime::AbiLaunch> launches) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  const ir::PrimFunc& f = *request.func;
  runtime::KernelAbi abi;
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ir::Param& p = f.params[k];
    if (p.is_scalar) {
      abi.add(runtime::AbiArgKind::kScalar, p.name, int(k), uint32_t(p.scalar.bytes()), 8,
              p.scalar);
    } else {
      abi.add(runtime::AbiArgKind::kPointer, p.name, int(k), 8, 8);
    }
  }
  for (size_t s = 0; s < request.symbols.size(); ++s) {
    abi.add(runtime::AbiArgKind::kSymbol, request.symbols[s], int(s), 8, 8);
  }
  // add() rounds the block up to its 8-byte alignment after each argument,
  // so a scalar narrower than its slot still takes the whole slot.
  TILEJIT_ICHECK(request.launches.empty() || request.launches.size() == launches.size())
      << f.name << ": " << request.launches.size() << " launches planned for "
      << launches.size() << " entries";
  for (size_t l = 0; l < launches.size(); ++l) {
    runtime::LaunchResults r;  // a request made by hand: results 4l .. 4l + 3
    for (int d = 0; d < 3; ++d) r.grid[d] = int(4 * l) + d;
    r.smem = int(4 * l) + 3;
    if (l < request.launches.size()) r = request.launches[l];
    for (int d = 0; d < 3; ++d) launches[l].grid[d] = r.grid[d];
    launches[l].smem = r.smem;
  }
  abi.launches = std::move(launches);
  return abi;
}

runtime::KernelAbi slot_abi(const runtime::SourceRequest& request, const char* entry) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  runtime::AbiLaunch launch;
  launch.entry = entry;
  launch.threads[0] = request.func->launch.threads;
  return slot_abi(request, {launch});
}

void throw_launch_mismatch(const runtime::KernelAbi& abi, const runtime::LaunchParams& params,
                           const char* target) {
  TILEJIT_THROW(kInternalError) << target << " launch: " << params.num_args << " arguments, "
                                << params.num_symbols << " symbols and " << params.num_results
                                << " results for a kernel that reads " << abi.num_values() << ", "
                                << abi.num_symbols() << " and " << abi.num_results();
}

}  // namespace tilejit::backend

// The argument block of the phase-1 C++ entries, shared by the CPU and CUDA
// backends.
//
// Note [Slot layout]
// Every parameter of the PrimFunc gets one 8-byte slot, in signature order:
// a tensor's slot holds its data pointer, a scalar's slot holds the scalar's
// bytes at its start (little-endian, the rest zero). Then every dynamic
// symbol gets one int64 slot, in the request's order. So the block is
//   struct { void* ptrs[N]; int64_t syms[M]; }
// which the CUDA entry takes by value and the CPU entry through a pointer;
// slot_abi() describes it as a KernelAbi (Note [Kernel ABI]).
#pragma once

#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::backend {

/// The KernelAbi of Note [Slot layout] for `request`, with `launches`: each
/// one's entry and threads as given, its grid and shared memory at the
/// request's result indices for that launch (-1 where the request has none).
runtime::KernelAbi slot_abi(const runtime::SourceRequest& request,
                            std::vector<runtime::AbiLaunch> launches);
/// slot_abi() with one launch of `entry` and the PrimFunc's threads (a
/// source body).
runtime::KernelAbi slot_abi(const runtime::SourceRequest& request, const char* entry);

/// Throws InternalError ("<target> launch: 2 arguments, 0 symbols and 3
/// results for a kernel that reads 1, 0 and 4") unless `params` has at
/// least the values, symbols and results that `abi` reads (counted once, at
/// load: num_*). Inline: the hot path is three compares.
[[noreturn, gnu::cold]] void throw_launch_mismatch(const runtime::KernelAbi& abi,
                                                   const runtime::LaunchParams& params,
                                                   const char* target);
inline void check_launch_params(const runtime::KernelAbi& abi, int num_values, int num_symbols,
                                int num_results, const runtime::LaunchParams& params,
                                const char* target) {
  if (TILEJIT_UNLIKELY(params.num_args != num_values || params.num_symbols != num_symbols ||
                       params.num_results < num_results)) {
    throw_launch_mismatch(abi, params, target);
  }
}

}  // namespace tilejit::backend

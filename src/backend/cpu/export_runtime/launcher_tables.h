// A stand-in for what cpu_export.cpp writes before launcher.cpp
// (launcher_source()): the includes, the entry points' type and
// declarations, and the tables of one kernel's launches. launcher.cpp
// includes it so that it compiles on its own (ctest
// export.runtime.cpu_launcher); no generated unit holds it. When the
// generator writes a new table, it belongs here too.
//
// The launcher reads kKernelName, kEntries, kNumLaunches, kFaultValue and
// kFaultNonStd (BlockFaultKind in cpu_backend_internal.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

typedef void (*tilejit_fault_fn)(void*, int, const char*, const char*) noexcept;
typedef int64_t (*tilejit_entry_fn)(const void*, const int64_t*, int64_t, int64_t,
                                    tilejit_fault_fn, void*);
extern "C" int64_t tilejit_entry(const void*, const int64_t*, int64_t, int64_t, tilejit_fault_fn, void*);

namespace {

const char* const kKernelName = "splitk_gemm";
const tilejit_entry_fn kEntries[] = {tilejit_entry};
constexpr int kNumLaunches = 1;
constexpr int kFaultValue = 0;
constexpr int kFaultNonStd = 2;

}  // namespace

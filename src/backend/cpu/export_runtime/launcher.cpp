// The fixed part of a CPU export's launcher unit (Note [Exported library]
// in src/export/export_library.cpp); cpu_export.cpp writes the includes and
// the tables before it (launcher_tables.h stands in for them where this file
// compiles on its own, ctest export.runtime.cpu_launcher).
//
// It defines the wrapper's hooks (runtime::ExportRequest; declared in
// src/export/runtime/wrapper_types.h): tilejit_export_launch runs a launch's
// blocks one after another on the calling thread, through the same entry
// points (EntryFn) that load_module() calls, and turns a block's exception
// (Note [Exceptions from a body] in cpu_codegen.cpp) into the message the
// jit path raises, "k: block (x, y, z) threw T: what".
#include "launcher_tables.h"
// ---- embedded from the next line on ----
namespace {

struct Fault {
  int kind = kFaultNonStd;
  char type[512] = {0};
  char what[1024] = {0};
};

void record(void* context, int kind, const char* type, const char* what) noexcept {
  Fault* f = static_cast<Fault*>(context);
  f->kind = kind;
  if (type != nullptr) std::snprintf(f->type, sizeof f->type, "%s", type);
  if (what != nullptr) std::snprintf(f->what, sizeof f->what, "%s", what);
}

}  // namespace

// The hooks of the wrapper (runtime::ExportRequest): the CPU runs a call
// synchronously on the calling thread, in host memory; there is no stream.
struct tilejit_export_call {
  int device_id;
  void* stream;
  void* target;
  void* saved;
};

extern "C" int tilejit_export_begin(tilejit_export_call*, char*, size_t) { return 0; }
extern "C" void tilejit_export_end(tilejit_export_call*) {}
extern "C" int tilejit_export_zero(tilejit_export_call*, void* ptr, size_t bytes, char*, size_t) {
  std::memset(ptr, 0, bytes);
  return 0;
}
extern "C" int tilejit_export_capturing(tilejit_export_call*, int* capturing, char*, size_t) {
  *capturing = 0;
  return 0;
}
// `bytes`: a multiple of 256.
extern "C" void* tilejit_export_alloc(tilejit_export_call*, size_t bytes, int) {
  return std::aligned_alloc(256, bytes);
}
extern "C" void tilejit_export_free(void*, void* ptr, size_t, void*, int) { std::free(ptr); }
// Never called: no CPU stream captures a graph.
extern "C" int tilejit_export_graph_alloc(tilejit_export_call*, size_t, void**,
                                          void (*)(void*), void*, char*, size_t) {
  return 3;
}
// Never called: a CPU kernel has no TMA descriptors.
extern "C" int tilejit_export_tensor_map(tilejit_export_call*, void*, void*, int, int,
                                         const uint64_t*, const uint32_t*, int,
                                         const char*, char*, size_t) {
  return 3;
}

extern "C" int tilejit_export_launch(tilejit_export_call*, int launch, const void* block,
                                     const int64_t* grid, int64_t, char* error,
                                     size_t error_size) {
  const int64_t total = grid[0] * grid[1] * grid[2];
  Fault fault;
  const int64_t failed = kEntries[launch](block, grid, 0, total, record, &fault);
  if (failed < 0) return 0;
  // A class the body declared is local to the lambda that runs it: shown by its
  // name in the body, as the jit path shows it.
  static const char kBodyScope[] = "tilejit_entry::{lambda()#1}::operator()() const::";
  int status = 0;
  char* demangled = fault.type[0] ? abi::__cxa_demangle(fault.type, nullptr, nullptr, &status) : nullptr;
  const char* type = demangled ? demangled : fault.type;
  if (std::strncmp(type, kBodyScope, sizeof kBodyScope - 1) == 0) type += sizeof kBodyScope - 1;
  char where[64] = "";
  if (kNumLaunches > 1) std::snprintf(where, sizeof where, "launch #%d, ", launch);
  const long long x = failed % grid[0], y = failed / grid[0] % grid[1],
                  z = failed / grid[0] / grid[1];
  if (fault.kind == kFaultNonStd) {
    std::snprintf(error, error_size, "%s: %sblock (%lld, %lld, %lld) threw a non-standard exception%s%s",
                  kKernelName, where, x, y, z, type[0] ? " of type " : "", type);
  } else {
    std::snprintf(error, error_size, "%s: %sblock (%lld, %lld, %lld) threw %s%s%s",
                  kKernelName, where, x, y, z, type, fault.what[0] ? ": " : "", fault.what);
  }
  std::free(demangled);
  return fault.kind == kFaultValue ? 2 : 3;
}

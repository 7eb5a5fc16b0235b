#include "tilejit/runtime/lowering_report.h"

namespace tilejit::runtime {

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::kRegisters: return "registers";
    case Placement::kShared: return "shared";
    case Placement::kGlobal: return "global";
    case Placement::kLocal: return "local";
  }
  return "shared";
}

int64_t constant_bytes(const ir::Buffer& b) {
  int64_t elements = 1;
  for (const ir::Expr& d : b.shape()) {
    if (!d.is_const()) return 0;
    elements *= d.int_value();
  }
  return elements * b.dtype().bytes();
}

BufferRecord buffer_record(const ir::Buffer& b, Placement p, int64_t bytes) {
  return {b.name(), ir::scope_name(b.scope()), p, "", b->layout.to_string(), bytes, b->span};
}

}  // namespace tilejit::runtime

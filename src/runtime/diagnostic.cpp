#include "tilejit/runtime/diagnostic.h"

#include "tilejit/ir/tile_builder.h"

namespace tilejit::runtime {

std::string Diagnostic::message(const std::string& func_name) const {
  return ir::diagnostic_prefix(span, func_name, op) + path + ": " + reason;
}

}  // namespace tilejit::runtime

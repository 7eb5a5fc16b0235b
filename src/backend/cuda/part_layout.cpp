// The register layouts' types (fragments.h: AccLayout) and the
// partitioned layout of a tile (Note [Partitioned fragments]).
#include <optional>
#include <string>

#include "backend/cuda/fragments.h"

namespace tilejit::cuda {

std::string AccLayout::type() const {
  if (repl) return "tilejit::cuda::Replicated<" + std::to_string(m) + ">";
  if (part()) {
    if (rows()) {
      return "tilejit::cuda::PartRows<" + std::to_string(m) + ", " + std::to_string(tr) + ", " +
             std::to_string(tc) + ">";
    }
    return "tilejit::cuda::PartTile<" + std::to_string(m) + ", " + std::to_string(n) + ", " +
           std::to_string(tr) + ", " + std::to_string(tc) + ", " + std::to_string(v) + ">";
  }
  // Trailing template arguments, each printed where it or one after it
  // differs from its default.
  const std::string il = il_rows ? ", true" : "";
  const std::string rep = wr > 1 || il_rows ? ", " + std::to_string(wr) + il : std::string();
  if (rows()) return "tilejit::cuda::MmaRows<" + std::to_string(m) + ", " + std::to_string(wm) + rep + ">";
  return "tilejit::cuda::MmaAcc<" + std::to_string(m) + ", " + std::to_string(n) + ", " +
         std::to_string(wm) + ", " + std::to_string(wn) +
         (m_real > 0 || wr > 1 || il_rows ? ", " + std::to_string(m_real > 0 ? m_real : m)
                                          : std::string()) +
         rep + ">";
}

// The partitioned layout of an m x n tile over `threads` threads (Note
// [Partitioned fragments]), or none.
std::optional<AccLayout> part_layout(int64_t m, int64_t n, int threads) {
  for (int v : {8, 4, 2, 1}) {
    if (n % v != 0) continue;
    const int64_t runs = n / v;
    int tc = 1;
    while (tc * 2 <= threads && threads % (tc * 2) == 0 && runs % (tc * 2) == 0) tc *= 2;
    const int tr = threads / tc;
    if (m % tr != 0) continue;
    AccLayout layout{m, n};
    layout.tr = tr;
    layout.tc = tc;
    layout.v = v;
    if (layout.registers() > kMaxAccRegisters) return std::nullopt;
    return layout;
  }
  return std::nullopt;
}

}  // namespace tilejit::cuda

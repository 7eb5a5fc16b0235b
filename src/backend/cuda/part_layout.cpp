// The register layouts' device types (fragments.h: layout_type) and the
// partitioned layout of a tile (Note [Partitioned fragments]).
#include <optional>
#include <string>

#include "backend/cuda/fragments.h"

namespace tilejit::cuda {

std::string layout_type(const FragmentLayout& l) {
  if (l.repl) return "tilejit::cuda::Replicated<" + std::to_string(l.m) + ">";
  if (l.part()) {
    if (l.rows()) {
      return "tilejit::cuda::PartRows<" + std::to_string(l.m) + ", " + std::to_string(l.tr) + ", " +
             std::to_string(l.tc) + ">";
    }
    return "tilejit::cuda::PartTile<" + std::to_string(l.m) + ", " + std::to_string(l.n) + ", " +
           std::to_string(l.tr) + ", " + std::to_string(l.tc) + ", " + std::to_string(l.v) + ">";
  }
  // Trailing template arguments, each printed where it or one after it
  // differs from its default.
  const std::string il = l.il_rows ? ", true" : "";
  const std::string rep = l.wr > 1 || l.il_rows ? ", " + std::to_string(l.wr) + il : std::string();
  if (l.rows()) return "tilejit::cuda::MmaRows<" + std::to_string(l.m) + ", " + std::to_string(l.wm) + rep + ">";
  return "tilejit::cuda::MmaAcc<" + std::to_string(l.m) + ", " + std::to_string(l.n) + ", " +
         std::to_string(l.wm) + ", " + std::to_string(l.wn) +
         (l.m_real > 0 || l.wr > 1 || l.il_rows ? ", " + std::to_string(l.m_real > 0 ? l.m_real : l.m)
                                          : std::string()) +
         rep + ">";
}

// The partitioned layout of an m x n tile over `threads` threads (Note
// [Partitioned fragments]), or none.
std::optional<FragmentLayout> part_layout(int64_t m, int64_t n, int threads) {
  for (int v : {8, 4, 2, 1}) {
    if (n % v != 0) continue;
    const int64_t runs = n / v;
    int tc = 1;
    while (tc * 2 <= threads && threads % (tc * 2) == 0 && runs % (tc * 2) == 0) tc *= 2;
    const int tr = threads / tc;
    if (m % tr != 0) continue;
    FragmentLayout layout{m, n};
    layout.tr = tr;
    layout.tc = tc;
    layout.v = v;
    if (layout.registers() > kMaxAccRegisters) return std::nullopt;
    return layout;
  }
  return std::nullopt;
}

}  // namespace tilejit::cuda

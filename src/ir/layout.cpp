// Layouts (Note [Layouts] in tilejit/ir/layout.h): the maps of fragment
// layouts, as the device library's MmaAcc, MmaRows, PartTile, PartRows and
// Replicated implement them, and the printed forms.
#include "tilejit/ir/layout.h"

#include <string>
#include <utility>

namespace tilejit::ir {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

int64_t FragmentLayout::threads() const {
  if (repl) return 0;
  if (part()) return int64_t(tr) * tc;
  return int64_t(wm) * (rows() ? 1 : wn) * wr * 32;
}

int64_t FragmentLayout::replication() const {
  if (repl) return 0;
  if (part()) return rows() ? tc : 1;
  return rows() ? 4 * int64_t(wr) : wr;
}

std::pair<int64_t, int64_t> FragmentLayout::element(int64_t thread, int64_t local) const {
  if (repl) return {local, 0};
  if (part()) {
    if (rows()) return {local * tr + thread / tc, 0};
    const int64_t cols = n / tc;  // a thread's elements of each of its rows
    const int64_t lj = local % cols;
    return {(local / cols) * tr + thread / tc, (lj / v) * v * tc + (thread % tc) * v + lj % v};
  }
  const int64_t warp = thread / 32, lane = thread % 32;
  const int64_t warp_m = m / wm;
  if (rows()) {
    // MmaRows: slot s holds the row of the accumulator registers of row_slot s.
    const int64_t wmi = il_rows ? (warp / 4 / wr) * 4 + warp % 4 : warp / wr;
    return {wmi * (il_rows ? 16 : warp_m) + (local / 2) * (il_rows ? 16 * wm : 16) + lane / 4 +
                (local % 2) * 8,
            0};
  }
  // MmaAcc: register r = (mt * NT + nt) * 4 + q of the warp's 16 x 8 mma tiles.
  const int64_t warp_n = n / wn, nt_count = warp_n / 8;
  const int64_t wmi = il_rows ? (warp / 4 / (wn * wr)) * 4 + warp % 4 : warp / (wn * wr);
  const int64_t wni = il_rows ? (warp / 4 / wr) % wn : (warp / wr) % wn;
  const int64_t mt = local / (nt_count * 4);
  const int64_t row = wmi * (il_rows ? 16 : warp_m) + mt * (il_rows ? 16 * wm : 16) + lane / 4 +
                      ((local % 4) / 2) * 8;
  const int64_t col = wni * warp_n + ((local / 4) % nt_count) * 8 + (lane % 4) * 2 + local % 2;
  return {row, col};
}

std::string FragmentLayout::to_string() const {
  if (repl) return "replicated " + str(m);
  if (part()) {
    if (rows()) return "rows of part " + str(m) + ", threads " + str(tr) + "x" + str(tc);
    return std::string(flat ? "flat " : "") + "part " + str(m) + "x" + str(n) + ", threads " +
           str(tr) + "x" + str(tc) + ", runs of " + str(v);
  }
  std::string s = rows() ? "rows of mma " + str(m) + ", warps " + str(wm)
                         : "mma " + str(m) + "x" + str(n) + ", warps " + str(wm) + "x" + str(wn);
  if (m_real > 0) s += ", rows " + str(m_real);
  if (wr > 1) s += ", each held by " + str(wr) + " warps";
  if (il_rows) s += ", interleaved";
  return s;
}

std::string SharedLayout::to_string() const {
  std::string s = "pitch " + str(pitch) + ", rows " + str(rows);
  if (swizzle > 0) s += ", swizzle " + str(swizzle);
  return s;
}

std::string Layout::to_string() const {
  switch (kind_) {
    case Kind::kNone: return "";
    case Kind::kRowMajor: return "row_major";
    case Kind::kLocal: return "local";
    case Kind::kShared: return "shared(" + shared_.to_string() + ")";
    case Kind::kFragment: return "fragment(" + fragment_.to_string() + ")";
  }
  return "";
}

}  // namespace tilejit::ir

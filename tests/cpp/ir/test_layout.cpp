// Layouts (tilejit/ir/layout.h, Note [Layouts]): each fragment layout's
// element(thread, local) map covers its tile, every element held by
// replication() threads; the maps agree with the device library's formulas
// at chosen points; the printed forms.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/ir/layout.h"

namespace tilejit::ir {
namespace {

FragmentLayout mma(int64_t m, int64_t n, int wm, int wn) { return FragmentLayout{m, n, wm, wn}; }

FragmentLayout part(int64_t m, int64_t n, int tr, int tc, int v) {
  FragmentLayout l{m, n};
  l.tr = tr;
  l.tc = tc;
  l.v = v;
  return l;
}

// (row, column) -> the threads that hold it, over every register of every
// holding thread (`threads`: the block's, for a replicated layout).
std::map<std::pair<int64_t, int64_t>, int64_t> holders(const FragmentLayout& l, int64_t threads) {
  std::map<std::pair<int64_t, int64_t>, int64_t> out;
  const int64_t n = l.threads() > 0 ? l.threads() : threads;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < l.registers(); ++r) ++out[l.element(t, r)];
  }
  return out;
}

// Every element of the m x n tile (m rows for a vector), each held by
// replication() threads, and nothing else.
void expect_covers(const FragmentLayout& l, int64_t threads = 128) {
  const auto h = holders(l, threads);
  const int64_t cols = l.n > 0 ? l.n : 1;
  const int64_t rep = l.replication() > 0 ? l.replication() : threads;
  EXPECT_EQ(int64_t(h.size()), l.m * cols) << l.to_string();
  for (const auto& [rc, count] : h) {
    EXPECT_TRUE(rc.first >= 0 && rc.first < l.m && rc.second >= 0 && rc.second < cols)
        << l.to_string() << ": (" << rc.first << ", " << rc.second << ")";
    EXPECT_EQ(count, rep) << l.to_string() << ": (" << rc.first << ", " << rc.second << ")";
  }
}

TEST(Layout, EveryFragmentLayoutCoversItsTile) {
  expect_covers(mma(128, 128, 4, 1));
  expect_covers(mma(64, 64, 2, 2));
  expect_covers(mma(64, 64, 1, 8));
  FragmentLayout operand = mma(64, 64, 2, 1);  // the A of a gemm into a 2 x 2 grid
  operand.wr = 2;
  expect_covers(operand);
  FragmentLayout wg = mma(128, 256, 8, 1);  // two warpgroups over rows, as wgmma leaves them
  wg.il_rows = true;
  expect_covers(wg);
  FragmentLayout wg_cols = mma(64, 256, 4, 2);  // two warpgroups over columns
  wg_cols.il_rows = true;
  expect_covers(wg_cols);
  expect_covers(wg.row_layout());
  expect_covers(wg_cols.row_layout());
  expect_covers(mma(64, 64, 2, 2).row_layout());
  expect_covers(part(8, 256, 4, 32, 8));
  expect_covers(part(2, 64, 2, 64, 1));
  expect_covers(part(8, 256, 4, 32, 8).row_layout());
  FragmentLayout flat = part(1, 512, 1, 128, 4);
  flat.flat = true;
  expect_covers(flat);
  FragmentLayout repl{4};
  repl.repl = true;
  expect_covers(repl, 64);
}

// The maps at points the device library's headers spell out (mma_acc.h,
// part_tile.h).
TEST(Layout, TheMapsAreTheDeviceLibrarys) {
  // mma.sync's accumulator: lane 5 holds rows 1 and 9, columns 2 and 3 of
  // its warp's first 16 x 8 tile.
  const FragmentLayout acc = mma(128, 128, 4, 1);
  EXPECT_EQ(acc.element(5, 0), std::make_pair(int64_t(1), int64_t(2)));
  EXPECT_EQ(acc.element(5, 1), std::make_pair(int64_t(1), int64_t(3)));
  EXPECT_EQ(acc.element(5, 2), std::make_pair(int64_t(9), int64_t(2)));
  // Register 4 is the next 8 columns; warp 1 starts at row 32.
  EXPECT_EQ(acc.element(5, 4), std::make_pair(int64_t(1), int64_t(10)));
  EXPECT_EQ(acc.element(32, 0), std::make_pair(int64_t(32), int64_t(0)));
  // Interleaved (wgmma): warp 1 holds rows 16..31 of each 128 (8 warps),
  // and its second 16-row block is 128 rows further.
  FragmentLayout wg = mma(256, 64, 8, 1);
  wg.il_rows = true;
  EXPECT_EQ(wg.element(32, 0), std::make_pair(int64_t(16), int64_t(0)));
  EXPECT_EQ(wg.element(0, 4 * 8), std::make_pair(int64_t(128), int64_t(0)));
  // A partitioned tile: thread 33 of 4 x 32 threads in runs of 8 holds row 1
  // and columns 8..15, then row 5.
  const FragmentLayout p = part(8, 256, 4, 32, 8);
  EXPECT_EQ(p.element(33, 0), std::make_pair(int64_t(1), int64_t(8)));
  EXPECT_EQ(p.element(33, 7), std::make_pair(int64_t(1), int64_t(15)));
  EXPECT_EQ(p.element(33, 8), std::make_pair(int64_t(5), int64_t(8)));
  // Two runs a row: the second is 8 x 32 columns further.
  EXPECT_EQ(part(4, 512, 4, 32, 8).element(33, 8), std::make_pair(int64_t(1), int64_t(264)));
  EXPECT_EQ(p.replication(), 1);
  EXPECT_EQ(p.row_layout().replication(), 32);
  EXPECT_EQ(acc.row_layout().replication(), 4);
}

TEST(Layout, PrintedForms) {
  EXPECT_EQ(Layout().to_string(), "");
  EXPECT_EQ(Layout::row_major().to_string(), "row_major");
  EXPECT_EQ(Layout::local().to_string(), "local");
  EXPECT_EQ(Layout::shared({72, 64, 0}).to_string(), "shared(pitch 72, rows 64)");
  EXPECT_EQ(Layout::shared({64, 128, 128}).to_string(), "shared(pitch 64, rows 128, swizzle 128)");
  FragmentLayout wg = mma(128, 256, 8, 1);
  wg.il_rows = true;
  EXPECT_EQ(Layout::fragment(wg).to_string(), "fragment(mma 128x256, warps 8x1, interleaved)");
  EXPECT_EQ(Layout::fragment(wg.row_layout()).to_string(),
            "fragment(rows of mma 128, warps 8, interleaved)");
  FragmentLayout shortacc = mma(16, 64, 1, 4);
  shortacc.m_real = 1;
  EXPECT_EQ(shortacc.to_string(), "mma 16x64, warps 1x4, rows 1");
  EXPECT_EQ(part(8, 256, 4, 32, 8).to_string(), "part 8x256, threads 4x32, runs of 8");
  EXPECT_EQ(part(8, 256, 4, 32, 8).row_layout().to_string(), "rows of part 8, threads 4x32");
  FragmentLayout repl{2};
  repl.repl = true;
  EXPECT_EQ(repl.to_string(), "replicated 2");
  EXPECT_NE(Layout::fragment(wg), Layout::fragment(wg.row_layout()));
  EXPECT_EQ(Layout::shared({72, 64, 0}), Layout::shared({72, 64, 0}));
}

}  // namespace
}  // namespace tilejit::ir

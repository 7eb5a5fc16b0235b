// T.use_swizzle's block remapping (device/cuda/tilejit/cuda/rasterize.h),
// run on the host: a bijection on every grid, last partial panel included,
// equal to TileLang's definition written from the linear block index.
#include <gtest/gtest.h>

#include <vector>

#include "tilejit/cuda/rasterize.h"

namespace tilejit::cuda::testing {
namespace {

// TileLang's rasterization2DRow / rasterization2DColumn as they define it:
// from the linear index x + y * gx, with the last panel's stride from the
// blocks left.
BlockXY reference(bool rows, unsigned x, unsigned y, unsigned gx, unsigned gy, unsigned panel) {
  const unsigned long long i = x + (unsigned long long)y * gx, grid = (unsigned long long)gx * gy;
  const unsigned long long across = rows ? gx : gy;
  const unsigned long long size = panel * across;
  const unsigned long long p = i / size, o = i % size;
  const unsigned long long total = (grid + size - 1) / size;
  const unsigned long long stride = p + 1 < total ? panel : (grid - p * size) / across;
  const unsigned long long along = p & 1 ? across - 1 - o / stride : o / stride;
  const unsigned long long in_panel = o % stride + p * panel;
  return rows ? BlockXY{unsigned(along), unsigned(in_panel)}
              : BlockXY{unsigned(in_panel), unsigned(along)};
}

void check_grid(bool rows, unsigned gx, unsigned gy, unsigned panel) {
  std::vector<int> seen(size_t(gx) * gy, 0);
  for (unsigned y = 0; y < gy; ++y) {
    for (unsigned x = 0; x < gx; ++x) {
      const BlockXY b = rows ? rasterize_rows(x, y, gx, gy, panel)
                             : rasterize_columns(x, y, gx, gy, panel);
      ASSERT_LT(b.x, gx) << gx << "x" << gy << " panel " << panel;
      ASSERT_LT(b.y, gy) << gx << "x" << gy << " panel " << panel;
      ++seen[size_t(b.y) * gx + b.x];
      const BlockXY r = reference(rows, x, y, gx, gy, panel);
      ASSERT_EQ(b.x, r.x) << (rows ? "row" : "col") << " " << gx << "x" << gy << " panel "
                          << panel << " block (" << x << ", " << y << ")";
      ASSERT_EQ(b.y, r.y) << (rows ? "row" : "col") << " " << gx << "x" << gy << " panel "
                          << panel << " block (" << x << ", " << y << ")";
    }
  }
  for (size_t k = 0; k < seen.size(); ++k) {
    ASSERT_EQ(seen[k], 1) << (rows ? "row" : "col") << " " << gx << "x" << gy << " panel "
                          << panel << ": block " << k % gx << ", " << k / gx;
  }
}

TEST(Rasterize, BijectionOnEveryGridAndPanel) {
  for (bool rows : {true, false}) {
    for (unsigned gx = 1; gx <= 13; ++gx) {
      for (unsigned gy = 1; gy <= 13; ++gy) {
        for (unsigned panel = 1; panel <= 15; ++panel) check_grid(rows, gx, gy, panel);
      }
    }
    check_grid(rows, 64, 64, 10);  // the 8192^3 GEMM at 128 x 128 tiles
    check_grid(rows, 7, 300, 4);
  }
}

// Grid 7 x 5, panel 3 (the GPU test's): two panels, the second of two rows
// (or one column of the three) and reversed.
TEST(Rasterize, PartialLastPanelIsSerpentine) {
  // Row order: panel 0 is rows 0-2, walked down each column.
  EXPECT_EQ(rasterize_rows(0, 0, 7, 5, 3).x, 0u);
  EXPECT_EQ(rasterize_rows(1, 0, 7, 5, 3).y, 1u);
  EXPECT_EQ(rasterize_rows(3, 0, 7, 5, 3).x, 1u);  // block 3 = column 1, row 0
  EXPECT_EQ(rasterize_rows(3, 0, 7, 5, 3).y, 0u);
  // Panel 1 is rows 3-4 (two left), columns from the right: block 0 is (6, 3).
  EXPECT_EQ(rasterize_rows(0, 3, 7, 5, 3).x, 6u);
  EXPECT_EQ(rasterize_rows(0, 3, 7, 5, 3).y, 3u);
  EXPECT_EQ(rasterize_rows(1, 3, 7, 5, 3).y, 4u);
  EXPECT_EQ(rasterize_rows(2, 3, 7, 5, 3).x, 5u);
  // Column order: panel 1 (blocks 15-29) is columns 3-5, rows from the bottom.
  EXPECT_EQ(rasterize_columns(1, 2, 7, 5, 3).x, 3u);  // block 15
  EXPECT_EQ(rasterize_columns(1, 2, 7, 5, 3).y, 4u);
  // Panel 2 (blocks 30-34) is column 6 alone, rows from the top.
  EXPECT_EQ(rasterize_columns(2, 4, 7, 5, 3).x, 6u);  // block 30
  EXPECT_EQ(rasterize_columns(2, 4, 7, 5, 3).y, 0u);
  EXPECT_EQ(rasterize_columns(6, 4, 7, 5, 3).y, 4u);  // block 34
}

TEST(Rasterize, OneRowGridIsTheIdentity) {
  for (unsigned x = 0; x < 9; ++x) {
    EXPECT_EQ(rasterize_rows(x, 0, 9, 1, 4).x, x);
    EXPECT_EQ(rasterize_columns(x, 0, 9, 1, 4).x, x);
    EXPECT_EQ(rasterize_columns(x, 0, 9, 1, 4).y, 0u);
  }
}

static_assert(rasterize_rows(3, 0, 7, 5, 3).x == 1, "usable in constant expressions");

}  // namespace
}  // namespace tilejit::cuda::testing

// T.use_swizzle(panel_size, order): the block a kernel's body sees as
// (bx, by) is not the hardware's (blockIdx.x, blockIdx.y) but a remapping
// that makes blocks running at the same time share their operands' tiles in
// L2 (TileLang's rasterization2DRow / rasterization2DColumn orders).
//
// Blocks are numbered x fastest, i = x + y * gx, as the hardware starts them.
//   row order: the grid is cut into panels of `panel` rows (the last panel
//     keeps the rows left over, h of them); the panel's blocks walk its
//     columns, h blocks down each column before the next: block o of panel p
//     is (o / h, p * panel + o % h), the columns reversed in odd panels (a
//     serpentine, so consecutive panels meet at the same column).
//   column order: the same with x and y exchanged: panels of `panel` columns,
//     each walking its rows, w blocks across each row: block o of panel p is
//     (p * panel + o % w, o / w), the rows reversed in odd panels.
// Either is a bijection on the grid for every grid size and panel >= 1: a
// panel of h rows holds h * gx blocks, which (o / h, o % h) maps one to one
// onto its gx x h rectangle (and likewise for columns). On a one-row grid
// (1-D) both are the identity. gridDim.z is left as it is.
//
// The arithmetic is 64-bit (a panel's block count can pass 2^32) and runs
// once per block. Plain C++, so that host tests check the same code.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TILEJIT_RASTER_FN __host__ __device__ __forceinline__ constexpr
#else
#define TILEJIT_RASTER_FN inline constexpr
#endif

namespace tilejit::cuda {

struct BlockXY {
  unsigned x, y;
};

/// The block (bx, by) that hardware block (x, y) of a gx x gy grid runs
/// under T.use_swizzle(panel, order="row").
TILEJIT_RASTER_FN BlockXY rasterize_rows(unsigned x, unsigned y, unsigned gx, unsigned gy,
                                         unsigned panel) {
  using u64 = unsigned long long;
  const unsigned p = y / panel;  // (x + y * gx) / (panel * gx)
  const unsigned h = gy - p * panel < panel ? gy - p * panel : panel;
  const u64 o = u64(y % panel) * gx + x;
  const unsigned col = unsigned(o / h);
  return {p % 2 ? gx - 1 - col : col, p * panel + unsigned(o % h)};
}

/// The same under T.use_swizzle(panel, order="col"): panels of columns.
TILEJIT_RASTER_FN BlockXY rasterize_columns(unsigned x, unsigned y, unsigned gx, unsigned gy,
                                            unsigned panel) {
  using u64 = unsigned long long;
  const u64 i = u64(y) * gx + x;
  const u64 size = u64(panel) * gy;
  const unsigned p = unsigned(i / size);
  const u64 o = i % size;
  const unsigned w = gx - p * panel < panel ? gx - p * panel : panel;
  const unsigned row = unsigned(o / w);
  return {p * panel + unsigned(o % w), p % 2 ? gy - 1 - row : row};
}

}  // namespace tilejit::cuda

#undef TILEJIT_RASTER_FN

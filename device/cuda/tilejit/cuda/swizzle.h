// Shared tiles swizzled in panels (Note [Warpgroup gemms], Note [Swizzled
// store tiles]): a tile of ROWS rows whose rows are longer than SW bytes is
// stored as panels SW bytes wide, one after the other, each ROWS * SW bytes
// and 1024-byte aligned; within a panel, 16-byte chunk j of row r is at
// chunk j ^ (r % (SW / 16)). It is the layout of TMA's and wgmma's swizzle
// modes, and a row's chunks (and eight rows' same chunk) fall in distinct
// banks.
//
//   swizzled_byte<SW, ROWS, T>(r, c)   the byte offset of element (r, c)
#pragma once

namespace tilejit::cuda {

template <int SW, int ROWS, typename T>
__device__ __forceinline__ int swizzled_byte(int r, int c) {
  static_assert(ROWS % 8 == 0, "panels of whole periods of the swizzle");
  constexpr int kPanel = SW / int(sizeof(T));  // elements of a panel's row
  // The hardware XORs bits [4, ...) of the offset with its bits [7, ...).
  // A panel is a whole number of the pattern's periods (8 rows) and a
  // byte's place in its row is below SW <= 128, so those bits are the
  // row's alone: the compiler sees the XOR as the row's, apart from the
  // column's part of the address.
  const int row_bits = ((r * SW) >> 7) & (SW / 16 - 1);
  return (c / kPanel) * (ROWS * SW) + r * SW + (((c % kPanel) * int(sizeof(T))) ^ (row_bits << 4));
}

}  // namespace tilejit::cuda

// T.copy and T.fill on the CPU: rectangles of elements, 2-D, with bounds.
//
// A Rect names a ROWS x COLS rectangle inside an array: element (r, c) is
// base[origin + r * stride + c], and only the elements with r in [r_lo, r_hi)
// and c in [c_lo, c_hi) exist. For a slice of a tensor the bounds are where
// the slice overlaps the tensor (rect_in()); for a tile they are the whole
// rectangle (tile_rect()). The offset is kept apart from the base pointer, so
// that no pointer outside the array is ever formed, let alone dereferenced.
//
//   copy<ROWS, COLS>(dst, src): every existing element of dst gets src's
//     element at the same (r, c), converted to dst's type, or 0 where src has
//     no such element. Elements of dst that do not exist are not written; of
//     src, not read. So a partial tile loaded from a tensor's edge has zeros
//     past the edge, and stored back writes only inside the tensor.
//   fill<ROWS, COLS>(dst, value): every existing element of dst = value.
//
// Ranks above 2 are the lowering's loops over the leading dimensions around
// these (an index outside the tensor there makes an empty Rect).
#pragma once

#include <cstring>
#include <type_traits>

#include "tilejit/cpu/tile.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

template <typename T>
struct Rect {
  T* base;
  int64_t origin;  // the offset of element (0, 0), which need not exist
  int64_t stride;  // elements between rows
  int64_t r_lo, r_hi, c_lo, c_hi;
};

/// A tile's rectangle at `origin` in `base` (row length `stride`): all of it
/// exists.
template <int ROWS, int COLS, typename T>
inline Rect<T> tile_rect(T* base, int64_t origin, int64_t stride) {
  return {base, origin, stride, 0, ROWS, 0, COLS};
}

/// The rectangle of a slice starting at (row0, col0) of a rows x cols matrix
/// (row length `stride`): its elements exist where the slice overlaps the
/// matrix. row0 and col0 may be negative or past the end.
template <typename T>
inline Rect<T> rect_in(T* base, int64_t stride, int64_t rows, int64_t cols, int64_t row0,
                       int64_t col0) {
  return {base, row0 * stride + col0, stride, -row0, rows - row0, -col0, cols - col0};
}

/// The same rectangle with no element existing (a leading index outside the
/// tensor).
template <typename T>
inline Rect<T> empty_rect(Rect<T> r) {
  r.r_hi = r.r_lo;
  return r;
}

namespace copy_detail {

inline int64_t clamp(int64_t v, int64_t hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

// dst[0, n) = src[0, n) converted.
template <typename D, typename S>
inline void convert_row(D* __restrict dst, const S* __restrict src, int64_t n) {
  if constexpr (std::is_same_v<D, S>) {
    std::memcpy(dst, src, size_t(n) * sizeof(D));
  } else if constexpr (std::is_same_v<D, float>) {
    widen_row(src, dst, int(n));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i]);
  }
}

template <typename D>
inline void zero_row(D* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(0.f);
}

}  // namespace copy_detail

template <int ROWS, int COLS, typename D, typename S>
inline void copy(const Rect<D>& dst, const Rect<S>& src) {
  using copy_detail::clamp;
  const int64_t d_r0 = clamp(dst.r_lo, ROWS), d_r1 = clamp(dst.r_hi, ROWS);
  const int64_t d_c0 = clamp(dst.c_lo, COLS), d_c1 = clamp(dst.c_hi, COLS);
  const int64_t s_r0 = clamp(src.r_lo, ROWS), s_r1 = clamp(src.r_hi, ROWS);
  const int64_t s_c0 = clamp(src.c_lo, COLS), s_c1 = clamp(src.c_hi, COLS);
  if (d_r0 == 0 && d_r1 == ROWS && d_c0 == 0 && d_c1 == COLS && s_r0 == 0 && s_r1 == ROWS &&
      s_c0 == 0 && s_c1 == COLS) {
    // Whole tiles: the trip counts are constants.
    for (int r = 0; r < ROWS; ++r) {
      copy_detail::convert_row(dst.base + (dst.origin + r * dst.stride),
                               src.base + (src.origin + r * src.stride), COLS);
    }
    return;
  }
  for (int64_t r = d_r0; r < d_r1; ++r) {
    D* out = dst.base + (dst.origin + r * dst.stride);
    if (r < s_r0 || r >= s_r1 || d_c0 >= d_c1) {
      if (d_c0 < d_c1) copy_detail::zero_row(out + d_c0, d_c1 - d_c0);
      continue;
    }
    const S* in = src.base + (src.origin + r * src.stride);
    // Within [d_c0, d_c1): zeros before s_c0, src's elements, zeros after s_c1.
    const int64_t lo = s_c0 > d_c0 ? (s_c0 < d_c1 ? s_c0 : d_c1) : d_c0;
    const int64_t hi = s_c1 < d_c1 ? (s_c1 > lo ? s_c1 : lo) : d_c1;
    copy_detail::zero_row(out + d_c0, lo - d_c0);
    copy_detail::convert_row(out + lo, in + lo, hi - lo);
    copy_detail::zero_row(out + hi, d_c1 - hi);
  }
}

template <int ROWS, int COLS, typename D, typename V>
inline void fill(const Rect<D>& dst, V value) {
  using copy_detail::clamp;
  const D v = convert<D>(value);
  const int64_t r0 = clamp(dst.r_lo, ROWS), r1 = clamp(dst.r_hi, ROWS);
  const int64_t c0 = clamp(dst.c_lo, COLS), c1 = clamp(dst.c_hi, COLS);
  if (r0 == 0 && r1 == ROWS && c0 == 0 && c1 == COLS) {
    for (int r = 0; r < ROWS; ++r) {
      D* out = dst.base + (dst.origin + r * dst.stride);
      for (int c = 0; c < COLS; ++c) out[c] = v;
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    D* out = dst.base + (dst.origin + r * dst.stride);
    for (int64_t c = c0; c < c1; ++c) out[c] = v;
  }
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop

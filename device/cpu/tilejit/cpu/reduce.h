// T.reduce_sum / _max / _min / _abssum / _absmax on the CPU, over a ROWS x
// COLS tile (row length LDS), as TileLang defines them:
//
//   reduce<kind, ROWS, COLS, dim>(src, dst, clear)
//     dim == 1: dst[r] = reduction of src[r][0..COLS)   (dst has ROWS elements)
//     dim == 0: dst[c] = reduction of src[0..ROWS)[c]   (dst has COLS elements)
//
// sum adds, max and min compare, abssum adds |x|, absmax takes the largest
// |x|. With clear the reduction starts from the kind's identity (0 for sum,
// abssum and absmax, -inf for max, +inf for min) and overwrites dst; without
// it, dst's existing values take part: dst[r] = combine(dst[r], reduction).
// Reductions run in float for bfloat16 and float16 tiles, otherwise in dst's
// type. A 1-D source is a 1 x N tile with dim 1 (dst has one element).
//
// A row reduction (dim 1) of floats keeps kVecFloats partial results and
// combines them at the end, which vectorises; a sum's rounding differs from
// a left-to-right sum by the usual reassociation error. max, min and absmax
// return NaN where the reduced elements (or, without clear, dst's value)
// hold one, as torch.amax does (Note [NaN in max and min], prelude.h).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "tilejit/cpu/tile.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

enum class ReduceKind { kSum, kMax, kMin, kAbsSum, kAbsMax };

namespace reduce_detail {

template <typename T>
using acc_t = std::conditional_t<is_half_v<T>, float, T>;

template <ReduceKind kKind, typename A>
inline A identity() {
  if constexpr (kKind == ReduceKind::kMax) {
    if constexpr (std::numeric_limits<A>::has_infinity) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();
    }
  } else if constexpr (kKind == ReduceKind::kMin) {
    if constexpr (std::numeric_limits<A>::has_infinity) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  } else {
    return A(0);
  }
}

// The element as the reduction sees it.
template <ReduceKind kKind, typename A>
inline A element(A x) {
  if constexpr (kKind == ReduceKind::kAbsSum || kKind == ReduceKind::kAbsMax) {
    return x < A(0) ? -x : x;
  } else {
    return x;
  }
}

template <ReduceKind kKind, typename A>
inline A combine(A a, A b) {
  if constexpr (kKind == ReduceKind::kSum || kKind == ReduceKind::kAbsSum) {
    return a + b;
  } else if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kAbsMax) {
    return maximum(a, b);  // NaN wins (Note [NaN in max and min], prelude.h)
  } else {
    return minimum(a, b);
  }
}

// The reduction of row[0, n): a float row in vector lanes, combined at the
// end. Max and min lanes take the plain select (one maxps or minps, which
// drops a NaN) and note NaNs in a mask beside them, so that the lanes'
// dependency chain is one instruction long; the mask makes the result NaN
// at the end (Note [NaN in max and min], prelude.h). For max and min the
// order changes nothing but which zero's sign comes out.
template <ReduceKind kKind, int N, typename S, typename A>
inline A reduce_row(const S* row) {
  constexpr bool sum = kKind == ReduceKind::kSum || kKind == ReduceKind::kAbsSum;
  constexpr bool lanes =
      std::is_same_v<S, float> && N >= 2 * kVecFloats && (sum || std::is_floating_point_v<A>);
  if constexpr (lanes) {
    vfloat part = vfloat{} + identity<kKind, float>();
    decltype(part != part) nan{};
    int i = 0;
    for (; i + kVecFloats <= N; i += kVecFloats) {
      vfloat v = load_vec(row + i);
      if constexpr (kKind == ReduceKind::kAbsSum || kKind == ReduceKind::kAbsMax) {
        v = v < 0 ? -v : v;
      }
      if constexpr (sum) {
        part += v;
      } else {
        if constexpr (kKind == ReduceKind::kMin) part = v < part ? v : part;
        else part = part < v ? v : part;
        nan |= v != v;
      }
    }
    A acc = identity<kKind, A>();
    for (int l = 0; l < kVecFloats; ++l) {
      acc = combine<kKind, A>(acc, nan[l] ? std::numeric_limits<A>::quiet_NaN() : A(part[l]));
    }
    for (; i < N; ++i) acc = combine<kKind>(acc, element<kKind>(A(row[i])));
    return acc;
  } else {
    A acc = identity<kKind, A>();
    for (int i = 0; i < N; ++i) acc = combine<kKind>(acc, element<kKind>(convert<A>(row[i])));
    return acc;
  }
}

}  // namespace reduce_detail

template <ReduceKind kKind, int ROWS, int COLS, int kDim, int LDS = COLS, typename S, typename D>
inline void reduce(const S* src, D* dst, bool clear) {
  static_assert(kDim == 0 || kDim == 1, "reduce: dim is 0 or 1 of a 2-D tile");
  using A = reduce_detail::acc_t<D>;
  if constexpr (kDim == 1) {
    for (int r = 0; r < ROWS; ++r) {
      A acc = reduce_detail::reduce_row<kKind, COLS, S, A>(src + r * LDS);
      if (!clear) acc = reduce_detail::combine<kKind>(convert<A>(dst[r]), acc);
      dst[r] = convert<D>(acc);
    }
  } else {
    A acc[COLS];
    for (int c = 0; c < COLS; ++c) {
      acc[c] = clear ? reduce_detail::identity<kKind, A>() : convert<A>(dst[c]);
    }
    for (int r = 0; r < ROWS; ++r) {
      const S* row = src + r * LDS;
      for (int c = 0; c < COLS; ++c) {
        acc[c] = reduce_detail::combine<kKind>(
            acc[c], reduce_detail::element<kKind>(convert<A>(row[c])));
      }
    }
    for (int c = 0; c < COLS; ++c) dst[c] = convert<D>(acc[c]);
  }
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop

// T.atomic_add on the CPU. Blocks of a launch run concurrently on the thread
// pool, so a tensor element that several blocks add into (split-K partials,
// histograms) is updated atomically, with relaxed ordering as CUDA's
// atomicAdd: the launch's end orders everything before the caller reads.
//
//   atomic_add(T* p, V value)        *p += value, as one atomic step
//   atomic_add<ROWS, COLS>(dst, src) each existing element of a Rect (copy.h)
//                                    += the tile src's element (row length LDS)
//
// Integers use fetch-add; floating types (float, double, bfloat16, float16)
// a compare-and-swap loop on their bits, the sum rounded in the element's own
// type (in float for the 16-bit ones). GCC's __atomic builtins rather than
// C++20's std::atomic_ref: generated units are C++17, and <atomic> would
// add most of a second to each compile.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tilejit/cpu/copy.h"
#include "tilejit/cpu/tile.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

namespace atomic_detail {

template <int kBytes>
struct bits_of;
template <>
struct bits_of<2> {
  typedef uint16_t __attribute__((may_alias)) type;
};
template <>
struct bits_of<4> {
  typedef uint32_t __attribute__((may_alias)) type;
};
template <>
struct bits_of<8> {
  typedef uint64_t __attribute__((may_alias)) type;
};

}  // namespace atomic_detail

template <typename T, typename V>
inline void atomic_add(T* p, V value) {
  if constexpr (std::is_integral_v<T>) {
    __atomic_fetch_add(p, convert<T>(value), __ATOMIC_RELAXED);
  } else {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "atomic_add: no atomic update for this element size");
    using Bits = typename atomic_detail::bits_of<int(sizeof(T))>::type;
    using A = std::conditional_t<is_half_v<T>, float, T>;
    Bits* word = reinterpret_cast<Bits*>(p);
    const A add = convert<A>(value);
    Bits old = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
      T cur;
      std::memcpy(&cur, &old, sizeof cur);
      const T next = convert<T>(convert<A>(cur) + add);
      Bits next_bits;
      std::memcpy(&next_bits, &next, sizeof next_bits);
      // On failure `old` becomes the current bits and the sum is redone.
      if (__atomic_compare_exchange_n(word, &old, next_bits, /*weak=*/true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        return;
      }
    }
  }
}

template <int ROWS, int COLS, int LDS = COLS, typename D, typename S>
inline void atomic_add(const Rect<D>& dst, const S* src) {
  const int64_t r0 = dst.r_lo < 0 ? 0 : dst.r_lo, r1 = dst.r_hi > ROWS ? ROWS : dst.r_hi;
  const int64_t c0 = dst.c_lo < 0 ? 0 : dst.c_lo, c1 = dst.c_hi > COLS ? COLS : dst.c_hi;
  for (int64_t r = r0; r < r1; ++r) {
    D* out = dst.base + (dst.origin + r * dst.stride);
    for (int64_t c = c0; c < c1; ++c) atomic_add(out + c, src[r * LDS + c]);
  }
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop

// The header every translation unit the CPU backend generates includes
// first: what a body can use besides its parameters (see
// src/backend/cpu/cpu_codegen.cpp for the entry point that follows it). It is
// embedded into libtilejit and written beside the unit at each compile
// (src/backend/common/device_files.h).
//
// It is C++17 (the generated unit is compiled with -std=c++17, whatever the
// library itself is built with) and includes only a few standard headers, so
// that a kernel compiles in a fraction of a second.
//
// Everything here is hidden (#pragma GCC visibility): a kernel's shared
// object exports its two extern "C" functions only. That keeps -O3 free to
// inline the helpers without the possibility of interposition, and keeps the
// inline functions and template members out of the dynamic symbol table, so
// two kernels loaded into one process never bind to each other's copies (and
// no STB_GNU_UNIQUE symbol can make a kernel impossible to unload).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <utility>

#pragma GCC visibility push(hidden)

namespace tilejit {

// Brain float: the top 16 bits of an IEEE float32.
struct bfloat16 {
  uint16_t bits;

  bfloat16() = default;
  bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = uint16_t((u >> 16) | 0x0040u);  // NaN stays NaN (quiet), sign kept
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
      bits = uint16_t(u >> 16);
    }
  }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 r;
    r.bits = b;
    return r;
  }
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  bfloat16& operator+=(float x) { return *this = bfloat16(float(*this) + x); }
  bfloat16& operator-=(float x) { return *this = bfloat16(float(*this) - x); }
  bfloat16& operator*=(float x) { return *this = bfloat16(float(*this) * x); }
  bfloat16& operator/=(float x) { return *this = bfloat16(float(*this) / x); }
};

// IEEE 754 binary16, converted in integer arithmetic so that the result does
// not depend on the floating-point environment (flush-to-zero modes).
struct float16 {
  uint16_t bits;

  float16() = default;
  float16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {
      bits = uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // quiet NaN, payload kept
    } else if (a >= 0x477ff000u) {
      bits = uint16_t(sign | 0x7c00u);  // 65520 and above round to infinity
    } else if (a >= 0x38800000u) {
      // Normal: rebias the exponent (127 -> 15) and round the 13 dropped
      // mantissa bits to nearest even; a carry moves into the exponent.
      const uint32_t r = a - (112u << 23) + 0x0fffu + ((a >> 13) & 1u);
      bits = uint16_t(sign | (r >> 13));
    } else if (a <= 0x33000000u) {
      bits = uint16_t(sign);  // at most 2^-25, half the smallest subnormal: ties to zero
    } else {
      // Subnormal: the value in units of 2^-24 is m * 2^(e - 126).
      const uint32_t e = a >> 23;
      const uint32_t m = (a & 0x7fffffu) | 0x800000u;
      const uint32_t shift = 126u - e;
      uint32_t r = m >> shift;
      const uint32_t rest = m & ((1u << shift) - 1u);
      const uint32_t half = 1u << (shift - 1u);
      if (rest > half || (rest == half && (r & 1u))) ++r;
      bits = uint16_t(sign | r);
    }
  }
  static float16 from_bits(uint16_t b) {
    float16 r;
    r.bits = b;
    return r;
  }
  operator float() const {
    const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
    const uint32_t e = (bits >> 10) & 0x1fu;
    const uint32_t m = bits & 0x3ffu;
    uint32_t u;
    if (e == 0x1fu) {
      u = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
      u = sign | ((e + 112u) << 23) | (m << 13);
    } else {
      const float f = float(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
      return sign ? -f : f;
    }
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  float16& operator+=(float x) { return *this = float16(float(*this) + x); }
  float16& operator-=(float x) { return *this = float16(float(*this) - x); }
  float16& operator*=(float x) { return *this = float16(float(*this) * x); }
  float16& operator/=(float x) { return *this = float16(float(*this) / x); }
};

// Shape arithmetic with Python's conventions, as in tilejit's Expr.
inline constexpr int64_t floordiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline constexpr int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }
inline constexpr int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }
inline constexpr int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline constexpr int64_t max(int64_t a, int64_t b) { return a < b ? b : a; }

// Note [NaN in max and min]
// T.max / T.min and every max / min reduction (T.reduce_max / _min /
// _absmax, on both targets) return NaN when either operand is NaN, as
// torch.maximum, torch.amax and numpy.max do. `a < b ? b : a` (std::max)
// keeps a NaN only when it arrives first, and fmax / CUDA's fmaxf drop it
// always, so a reduction's answer would depend on where in the row the NaN
// sits. The form here is that select (one maxps, which keeps a NaN in `a`)
// followed by a test of `b` alone: a reduction passes its accumulator as
// `a`, so the accumulator's dependency chain is a max and a blend, and the
// test of the incoming element runs beside it.
template <typename T>
inline T maximum(T a, T b) {
  const T m = a < b ? b : a;  // two statements: GCC then selects maxps
  return b != b ? b : m;
}
template <typename T>
inline T minimum(T a, T b) {
  const T m = b < a ? b : a;
  return b != b ? b : m;
}

struct Dim3 {
  int64_t x, y, z;
};

// The run-time extents of a View's dynamic dimensions, in order.
template <int N>
struct Extents {
  int64_t v[N > 0 ? N : 1];
};

// A row-major view of a contiguous tensor. Each of Dims is a static extent,
// or -1 for a dimension whose extent is given at construction. Static
// extents are compile-time constants in the index arithmetic, so -O3 folds
// them. No bounds checks.
template <typename T, int64_t... Dims>
struct View {
  static constexpr int rank = int(sizeof...(Dims));
  static constexpr int num_dynamic = (0 + ... + (Dims < 0 ? 1 : 0));

  View(T* data, const Extents<num_dynamic>& dynamic) : data_(data), dynamic_(dynamic) {}

  template <typename... I>
  T& operator()(I... idx) const {
    static_assert(sizeof...(I) == sizeof...(Dims), "wrong number of indices for this view");
    return data_[offset(std::make_index_sequence<sizeof...(Dims)>(), idx...)];
  }
  int64_t shape(int d) const {
    return static_extent(d) >= 0 ? static_extent(d) : dynamic_.v[dynamic_position(d)];
  }
  int64_t stride(int d) const {
    int64_t s = 1;
    for (int i = d + 1; i < rank; ++i) s *= shape(i);
    return s;
  }
  int64_t size() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape(i);
    return n;
  }
  T* data() const { return data_; }

 private:
  static constexpr int64_t static_extent(int d) {
    constexpr int64_t dims[] = {Dims..., 0};
    return dims[d];
  }
  static constexpr int dynamic_position(int d) {
    int n = 0;
    for (int i = 0; i < d; ++i) n += static_extent(i) < 0 ? 1 : 0;
    return n;
  }
  template <size_t D>
  int64_t extent() const {
    if constexpr (static_extent(int(D)) >= 0) {
      return static_extent(int(D));
    } else {
      return dynamic_.v[dynamic_position(int(D))];
    }
  }
  template <size_t... D, typename... I>
  int64_t offset(std::index_sequence<D...>, I... idx) const {
    int64_t off = 0;
    ((off = off * extent<D>() + int64_t(idx)), ...);
    return off;
  }

  T* data_;
  Extents<num_dynamic> dynamic_;
};

}  // namespace tilejit

#pragma GCC visibility pop

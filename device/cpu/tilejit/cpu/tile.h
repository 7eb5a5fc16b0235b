// What the CPU tile library's headers share: element conversion between the
// dtypes a tile may hold, and the SIMD vector type the kernels are written in.
//
// Tiles (shared and fragment buffers of a tile program) are plain row-major
// arrays of one block: on the CPU a block runs on one thread, so a fragment
// is the whole tile. The library's functions take a tile as a pointer and its
// row length (the stride between rows, in elements), sizes as template
// arguments where the tile program fixes them, so that -O3 unrolls and
// vectorises with constant trip counts.
//
// C++17, like the generated units, and only the prelude's standard headers
// plus <type_traits>: each kernel compiles in a fraction of a second.
#pragma once

#include <cstdlib>
#include <new>
#include <type_traits>

#include "tilejit/cpu/prelude.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

template <typename T>
inline constexpr bool is_half_v =
    std::is_same_v<T, tilejit::bfloat16> || std::is_same_v<T, tilejit::float16>;

/// `s` as a D, the way a tile program's cast converts: 16-bit floats through
/// float (exact when widening, round to nearest even when narrowing), the
/// rest as C++'s static_cast.
template <typename D, typename S>
inline D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (is_half_v<S>) {
    return convert<D>(float(s));
  } else if constexpr (is_half_v<D>) {
    return D(float(s));
  } else {
    return static_cast<D>(s);
  }
}

/// `s` widened to float (exact for bfloat16 and float16).
template <typename S>
inline float to_float(S s) {
  return convert<float>(s);
}

// The f32 SIMD vector the kernels accumulate in: a GCC vector type as wide as
// the target's widest float register, so that each operation on it is one
// instruction (AVX-512: 16 floats in a zmm; AVX/AVX2: 8 in a ymm; otherwise
// 4, which every 64-bit target has).
#if defined(__AVX512F__)
inline constexpr int kVecFloats = 16;
#elif defined(__AVX__)
inline constexpr int kVecFloats = 8;
#else
inline constexpr int kVecFloats = 4;
#endif
typedef float vfloat __attribute__((vector_size(kVecFloats * 4)));
// The same type at float alignment and aliasing floats, for loads and stores
// anywhere in a tile.
typedef float vfloat_u __attribute__((vector_size(kVecFloats * 4), aligned(4), may_alias));

inline vfloat load_vec(const float* p) { return *reinterpret_cast<const vfloat_u*>(p); }
inline void store_vec(float* p, vfloat v) { *reinterpret_cast<vfloat_u*>(p) = v; }

/// dst[0, n) = src[0, n) widened to float. The prelude's float16 converts in
/// integer arithmetic, one element at a time; with F16C the hardware converts
/// 8 at once. The builtin is the one behind _mm256_cvtph_ps, called without
/// <immintrin.h>, whose parsing alone would cost a generated unit most of a
/// second (GCC 12 scalarises __builtin_convertvector on _Float16 vectors).
template <typename S>
inline void widen_row(const S* __restrict src, float* __restrict dst, int n) {
  int i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<S, tilejit::float16>) {
    typedef short vhalf8 __attribute__((vector_size(16)));
    typedef float vfloat8 __attribute__((vector_size(32)));
    for (; i + 8 <= n; i += 8) {
      vhalf8 h;
      std::memcpy(&h, src + i, sizeof h);
      const vfloat8 f = __builtin_ia32_vcvtph2ps256(h);
      std::memcpy(dst + i, &f, sizeof f);
    }
  }
#endif
  for (; i < n; ++i) dst[i] = to_float(src[i]);
}

/// The per-worker memory of a launch's large tiles: one aligned heap block
/// per call of the entry (a chunk of blocks on one thread), reused by every
/// block of the chunk and freed on the way out, exceptions included. Large
/// tiles stay off the stack (a 128 x 512 f32 accumulator is 256 KiB).
class Arena {
 public:
  Arena() = default;
  /// Throws std::bad_alloc when the memory is not there.
  void allocate(size_t bytes) {
    std::free(data_);
    data_ = nullptr;
    if (bytes == 0) return;
    data_ = static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~Arena() { std::free(data_); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  /// The tile at byte `offset` (a multiple of 64).
  template <typename T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(data_ + offset);
  }

 private:
  char* data_ = nullptr;
};

}  // namespace tilejit::cpu

#pragma GCC visibility pop

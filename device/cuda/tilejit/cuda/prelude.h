// The header every translation unit the CUDA backend generates includes
// first: what a body can use besides its parameters
// (src/backend/cuda/cuda_codegen.cpp writes the kernel that follows it). It is
// embedded into libtilejit and handed to NVRTC by name
// (src/backend/common/device_files.h). It mirrors the CPU prelude
// (tilejit/cpu/prelude.h) name for name, so that a body reads the same
// on both targets: tilejit::View with Q(i, j), Q.shape(d), Q.stride(d),
// Q.size(), Q.data(); tilejit::Dim3; floordiv, floormod, ceildiv, min, max;
// maximum, minimum; tilejit::bfloat16 and tilejit::float16.
//
// NVRTC has no C++ standard library without extra include paths, so the
// prelude includes only the toolkit's cuda_fp16.h and cuda_bf16.h and
// declares the fixed-width integers itself, as the same aliases CCCL's
// <cuda/std/cstdint> declares under NVRTC (a redeclaration of an alias to the
// same type is allowed, so a body compiled with CCCL included still builds).
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// <math.h>'s constants, which NVRTC's built-in math functions come without
// (the CPU prelude has them from <cmath>).
#ifndef INFINITY
#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#endif
#ifndef NAN
#define NAN __builtin_bit_cast(float, 0x7fc00000u)
#endif

using int8_t = signed char;
using int16_t = signed short;
using int32_t = signed int;
using int64_t = signed long long;
using uint8_t = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long long;

namespace tilejit {

// The toolkit's own types: device arithmetic and conversions on them are
// the hardware's (round to nearest even).
using bfloat16 = __nv_bfloat16;
using float16 = __half;

// Shape arithmetic with Python's conventions, as in tilejit's Expr.
__device__ __forceinline__ constexpr int64_t floordiv(int64_t a, int64_t b) {
  return (a % b != 0 && ((a < 0) != (b < 0))) ? a / b - 1 : a / b;
}
__device__ __forceinline__ constexpr int64_t floormod(int64_t a, int64_t b) {
  return a - floordiv(a, b) * b;
}
__device__ __forceinline__ constexpr int64_t ceildiv(int64_t a, int64_t b) {
  return -floordiv(-a, b);
}
__device__ __forceinline__ constexpr int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ constexpr int64_t max(int64_t a, int64_t b) { return a < b ? b : a; }

// T.max / T.min and the max / min reductions propagate NaN, as on the CPU
// (Note [NaN in max and min], tilejit/cpu/prelude.h); fmaxf and fminf drop
// it. On sm_80 and later a float takes one instruction, max.NaN / min.NaN.
template <typename T>
__device__ __forceinline__ T maximum(T a, T b) {
  const T m = a < b ? b : a;
  return b != b ? b : m;
}
template <typename T>
__device__ __forceinline__ T minimum(T a, T b) {
  const T m = b < a ? b : a;
  return b != b ? b : m;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <>
__device__ __forceinline__ float maximum<float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <>
__device__ __forceinline__ float minimum<float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif

struct Dim3 {
  int64_t x, y, z;
};

// The run-time extents of a View's dynamic dimensions, in order.
template <int N>
struct Extents {
  int64_t v[N > 0 ? N : 1];
};

// std::index_sequence, which NVRTC does not have.
template <int... I>
struct Seq {};
template <int N, int... I>
struct MakeSeq : MakeSeq<N - 1, N - 1, I...> {};
template <int... I>
struct MakeSeq<0, I...> {
  using type = Seq<I...>;
};

// A row-major view of a contiguous tensor in device memory. Each of Dims is a
// static extent, or -1 for a dimension whose extent is given at
// construction. Static extents are compile-time constants in the index
// arithmetic. No bounds checks.
template <typename T, int64_t... Dims>
struct View {
  static constexpr int rank = int(sizeof...(Dims));
  static constexpr int num_dynamic = (0 + ... + (Dims < 0 ? 1 : 0));

  __device__ __forceinline__ View(T* data, const Extents<num_dynamic>& dynamic)
      : data_(data), dynamic_(dynamic) {}

  template <typename... I>
  __device__ __forceinline__ T& operator()(I... idx) const {
    static_assert(sizeof...(I) == sizeof...(Dims), "wrong number of indices for this view");
    return data_[offset(typename MakeSeq<rank>::type(), idx...)];
  }
  __device__ __forceinline__ int64_t shape(int d) const {
    return static_extent(d) >= 0 ? static_extent(d) : dynamic_.v[dynamic_position(d)];
  }
  __device__ __forceinline__ int64_t stride(int d) const {
    int64_t s = 1;
    for (int i = d + 1; i < rank; ++i) s *= shape(i);
    return s;
  }
  __device__ __forceinline__ int64_t size() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape(i);
    return n;
  }
  __device__ __forceinline__ T* data() const { return data_; }

 private:
  __device__ static constexpr int64_t static_extent(int d) {
    constexpr int64_t dims[] = {Dims..., 0};
    return dims[d];
  }
  __device__ static constexpr int dynamic_position(int d) {
    int n = 0;
    for (int i = 0; i < d; ++i) n += static_extent(i) < 0 ? 1 : 0;
    return n;
  }
  template <int D>
  __device__ __forceinline__ int64_t extent() const {
    if constexpr (static_extent(D) >= 0) {
      return static_extent(D);
    } else {
      return dynamic_.v[dynamic_position(D)];
    }
  }
  template <int... D, typename... I>
  __device__ __forceinline__ int64_t offset(Seq<D...>, I... idx) const {
    int64_t off = 0;
    ((off = off * extent<D>() + int64_t(idx)), ...);
    return off;
  }

  T* data_;
  Extents<num_dynamic> dynamic_;
};

// A scalar argument: its value's bytes sit at the start of its 8-byte slot
// of the argument struct (cuda_module.cpp packs them).
template <typename T>
__device__ __forceinline__ T scalar_arg(const void* const& slot) {
  static_assert(sizeof(T) <= sizeof(void*), "a scalar argument is at most 8 bytes");
  T value;
  memcpy(&value, &slot, sizeof(T));
  return value;
}

}  // namespace tilejit

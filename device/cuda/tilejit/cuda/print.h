// T.print on the GPU: the CPU's lines (tilejit/cpu/print.h), written by the
// block's first thread through the device printf, one call per line so that
// lines of different blocks do not interleave.
#pragma once

#include "tilejit/cuda/tile.h"

// The device printf's entry, which nvcc's headers declare and NVRTC does not.
#if defined(__CUDACC_RTC__)
extern "C" __device__ int vprintf(const char*, const char*);
#endif

namespace tilejit::cuda {
namespace print_detail {

// printf's arguments, packed as vprintf reads them (8-byte slots).
struct Args {
  alignas(8) char bytes[8 * 12];
  int n = 0;
  __device__ void add_i(long long v) { memcpy(bytes + 8 * n++, &v, 8); }
  __device__ void add_f(double v) { memcpy(bytes + 8 * n++, &v, 8); }
  __device__ void add_s(const char* s) { memcpy(bytes + 8 * n++, &s, 8); }
  // "%s: block (%lld, %lld, %lld), thread %lld": where a check failed.
  __device__ void add_where(const char* kernel) {
    add_s(kernel);
    add_i(blockIdx.x);
    add_i(blockIdx.y);
    add_i(blockIdx.z);
    add_i(threadIdx.x);
  }
};

template <typename T>
__device__ __forceinline__ void value(Args& args, T v, bool& is_float) {
  if constexpr (is_same_v<T, bool>) {
    args.add_s(v ? "True" : "False");
    is_float = false;
  } else if constexpr (is_half_v<T> || is_same_v<T, float> || is_same_v<T, double>) {
    args.add_f(double(to_float(v)));
    is_float = true;
  } else {
    args.add_i(static_cast<long long>(v));
    is_float = false;
  }
}

}  // namespace print_detail

template <typename T>
__device__ void print_value(const char* msg, const int64_t (&block)[3], T v) {
  print_detail::Args args;
  args.add_s(msg);
  for (int d = 0; d < 3; ++d) args.add_i(block[d]);
  bool f = false;
  print_detail::value(args, v, f);
  const bool b = is_same_v<T, bool>;
  vprintf(b ? "msg='%s' BlockIdx=(%lld, %lld, %lld): value=%s\n"
            : f ? "msg='%s' BlockIdx=(%lld, %lld, %lld): value=%g\n"
                : "msg='%s' BlockIdx=(%lld, %lld, %lld): value=%lld\n",
          args.bytes);
}

template <typename T, int N>
__device__ void print_element(const char* msg, const int64_t (&block)[3], const char* buffer,
                              const int64_t (&index)[N], int rank, T v) {
  // One format per rank (up to 4), so that the line is one printf.
  print_detail::Args args;
  args.add_s(msg);
  for (int d = 0; d < 3; ++d) args.add_i(block[d]);
  args.add_s(buffer);
  for (int d = 0; d < rank && d < 4; ++d) args.add_i(index[d]);
  bool f = false;
  print_detail::value(args, v, f);
  const bool b = is_same_v<T, bool>;
  const char* const kFormats[3][4] = {
      {"msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld), value=%lld\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld), value=%lld\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld), value=%lld\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld, %lld), "
       "value=%lld\n"},
      {"msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld), value=%g\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld), value=%g\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld), value=%g\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld, %lld), "
       "value=%g\n"},
      {"msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld), value=%s\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld), value=%s\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld), value=%s\n",
       "msg='%s' BlockIdx=(%lld, %lld, %lld): buffer=%s, index=(%lld, %lld, %lld, %lld), "
       "value=%s\n"}};
  const int r = rank < 1 ? 1 : (rank > 4 ? 4 : rank);
  vprintf(kFormats[b ? 2 : (f ? 1 : 0)][r - 1], args.bytes);
}

}  // namespace tilejit::cuda

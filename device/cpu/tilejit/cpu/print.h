// T.print on the CPU: one line per value on stdout, in TileLang's format
// (with one thread per block there is no thread index to show). Lines of
// blocks running at once never interleave: each is written under stdout's lock.
//
//   msg='<message>' BlockIdx=(x, y, z): value=<v>
//   msg='<message>' BlockIdx=(x, y, z): buffer=<name>, index=(i, j), value=<v>
#pragma once

#include <cstdio>
#include <type_traits>

#include "tilejit/cpu/tile.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {
namespace print_detail {

template <typename T>
inline void value(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    std::printf("%s", v ? "True" : "False");
  } else if constexpr (std::is_integral_v<T>) {
    std::printf("%lld", static_cast<long long>(v));
  } else {
    std::printf("%g", double(to_float(v)));
  }
}

inline void head(const char* msg, const int64_t (&block)[3]) {
  std::printf("msg='%s' BlockIdx=(%lld, %lld, %lld): ", msg, static_cast<long long>(block[0]),
              static_cast<long long>(block[1]), static_cast<long long>(block[2]));
}

}  // namespace print_detail

template <typename T>
inline void print_value(const char* msg, const int64_t (&block)[3], T v) {
  // Blocks run on several threads: each line is written whole.
  flockfile(stdout);
  print_detail::head(msg, block);
  std::printf("value=");
  print_detail::value(v);
  std::printf("\n");
  std::fflush(stdout);
  funlockfile(stdout);
}

template <typename T, size_t N>
inline void print_element(const char* msg, const int64_t (&block)[3], const char* buffer,
                          const int64_t (&index)[N], int rank, T v) {
  flockfile(stdout);
  print_detail::head(msg, block);
  std::printf("buffer=%s, index=(", buffer);
  for (int d = 0; d < rank; ++d) std::printf(d ? ", %lld" : "%lld", static_cast<long long>(index[d]));
  std::printf("), value=");
  print_detail::value(v);
  std::printf("\n");
  std::fflush(stdout);
  funlockfile(stdout);
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop

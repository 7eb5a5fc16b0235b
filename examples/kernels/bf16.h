// bfloat16 <-> float on the host, for the examples' inputs and references.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace examples {

inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest, ties to even
  return uint16_t(u >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace examples

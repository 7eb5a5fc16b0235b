// T.shfl_sync / shfl_up / shfl_down / shfl_xor on the CPU (Note [Warp
// shuffles] in tilejit/transform/hoist_shuffles.h). A block's threads run
// one after another here, so a shuffle is two loops over the threads (the
// generated code's): the first stores the value each thread offers,
// values[t], the second reads the source lane's element:
//
//   shfl_source(mode, t, b, width, first, end)  the thread whose value thread
//                                               t reads: PTX's shfl.sync
//                                               rules (the lane t % 32 of the
//                                               warp t / 32, b the source
//                                               lane or the delta), t itself
//                                               where the source is outside
//                                               the segment, or not among the
//                                               threads [first, end) that ran
//                                               the first loop (a lane that
//                                               does not exist or did not
//                                               shuffle: undefined on a GPU)
//   shfl(mode, values, t, b, width, first, end) values[shfl_source(...)]
#pragma once

#include <cstdint>

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

enum class ShflMode { kIdx, kUp, kDown, kBfly };

inline int64_t shfl_source(ShflMode mode, int64_t t, int64_t b, int width, int64_t first,
                           int64_t end) {
  const int lane = int(t & 31);
  const int bval = int(b & 31);
  // shfl.sync's c operand as CUDA's __shfl_*_sync make it: the segment mask
  // (32 - width) and the clamp (0 for up, 31 otherwise).
  const int seg = 32 - width;
  const int clamp = mode == ShflMode::kUp ? 0 : 31;
  const int max_lane = (lane & seg) | (clamp & ~seg);
  const int min_lane = lane & seg;
  int j = lane;
  bool in_range = true;
  switch (mode) {
    case ShflMode::kUp:
      j = lane - bval;
      in_range = j >= max_lane;
      break;
    case ShflMode::kDown:
      j = lane + bval;
      in_range = j <= max_lane;
      break;
    case ShflMode::kBfly:
      j = lane ^ bval;
      in_range = j <= max_lane;
      break;
    case ShflMode::kIdx:
      j = min_lane | (bval & ~seg);
      in_range = j <= max_lane;
      break;
  }
  if (!in_range) return t;
  const int64_t source = t - lane + j;
  return source >= first && source < end ? source : t;
}

template <typename T>
inline T shfl(ShflMode mode, const T* values, int64_t t, int64_t b, int width, int64_t first,
              int64_t end) {
  return values[shfl_source(mode, t, b, width, first, end)];
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop

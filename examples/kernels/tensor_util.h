// Host helpers the examples and their tests share: random bf16 tensors and
// the error of a bf16 output against a float reference.
#pragma once

#include <tilejit/tilejit.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/bf16.h"

namespace examples {

/// A host bf16 tensor of N(0, 1) values.
inline tilejit::Tensor random_bf16(std::initializer_list<int64_t> shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  tilejit::Tensor t = tilejit::empty(shape, tilejit::DataType::bfloat16());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<uint16_t>()[i] = to_bf16(normal(rng));
  return t;
}

/// max |out - ref| over a host bf16 tensor; infinity when any is NaN.
inline double max_abs_error_bf16(const tilejit::Tensor& out, const std::vector<float>& ref) {
  double err = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double e = std::fabs(double(from_bf16(out.data_as<uint16_t>()[i])) - ref[size_t(i)]);
    if (std::isnan(e)) return INFINITY;
    err = std::max(err, e);
  }
  return err;
}

}  // namespace examples

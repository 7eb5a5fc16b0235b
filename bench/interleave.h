// Timing shared by the CUDA call benchmarks (bench_cuda_call.cpp,
// bench_export_call.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace tilejit::bench {

/// Nanoseconds per call of each of `paths`, the median over `rounds` rounds
/// in which every path runs `batch` calls in turn and then `wait()` (the
/// device drained), so that drifts of the machine (clocks, neighbours) hit
/// all paths alike.
inline std::vector<double> interleaved_ns(const std::vector<std::function<void()>>& paths,
                                          const std::function<void()>& wait, int batch,
                                          int rounds) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> samples(paths.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t p = 0; p < paths.size(); ++p) {
      const auto t0 = Clock::now();
      for (int i = 0; i < batch; ++i) paths[p]();
      wait();
      samples[p].push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                           batch);
    }
  }
  std::vector<double> medians;
  for (auto& s : samples) {
    std::sort(s.begin(), s.end());
    medians.push_back(s[s.size() / 2]);
  }
  return medians;
}

}  // namespace tilejit::bench

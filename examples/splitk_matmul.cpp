// Split-K matmul on the CPU, checked against a plain reference at several
// shapes: C = A @ B, with the partial sums and the tile counters as
// workspaces the caller never sees.
#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/splitk_matmul.h"

int main() {
  using namespace tilejit;
  const Kernel op = jit(examples::splitk_matmul(/*split_k=*/4), examples::splitk_options("cpu"));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const int64_t shapes[][3] = {{64, 64, 256}, {33, 70, 129}, {1, 1, 1}, {100, 3, 1000}};
  for (const auto& shape : shapes) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    Tensor a = empty({m, k}, DataType::float32());
    Tensor b = empty({k, n}, DataType::float32());
    for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
    for (int64_t i = 0; i < b.numel(); ++i) b.data_as<float>()[i] = dist(rng);
    for (int rep = 0; rep < 3; ++rep) {  // the zero_once counters must stay armed
      Tensor c = op(a, b);
      const auto ref = examples::matmul_reference(a.data_as<float>(), b.data_as<float>(), m, n, k);
      double max_err = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        max_err = std::max(max_err, double(std::fabs(c.data_as<float>()[i] - ref[size_t(i)])));
      }
      if (!(max_err < 1e-3 * std::sqrt(double(k)))) {
        std::printf("FAIL M=%lld N=%lld K=%lld: max error %g\n", (long long)m, (long long)n,
                    (long long)k, max_err);
        return 1;
      }
      if (rep == 0) {
        std::printf("M=%-4lld N=%-4lld K=%-5lld workspace %zu bytes, max error %.3g\n",
                    (long long)m, (long long)n, (long long)k, op.workspace_bytes_of(a, b), max_err);
      }
    }
  }
  std::printf("splitk_matmul: all shapes match the reference\n");
  return 0;
}

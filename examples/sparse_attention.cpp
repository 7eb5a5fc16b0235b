// Sparse attention forward on the CPU, checked against a plain reference at
// several shapes, including skipped (-1) indices and queries with none valid.
#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/sparse_attention.h"
#include "kernels/tensor_util.h"

namespace {

// Random bf16 inputs and indices (about 1 in 8 is -1); returns max |error|.
double run_case(const tilejit::Kernel& op, const examples::SparseAttentionConfig& cfg, int64_t b,
                int64_t s, int64_t s_kv, std::mt19937& rng) {
  using namespace tilejit;
  std::uniform_int_distribution<int32_t> row(0, int32_t(s_kv - 1));
  std::uniform_int_distribution<int> skip(0, 7);
  Tensor q = examples::random_bf16({b, s, cfg.heads, cfg.dim}, rng);
  Tensor kv = examples::random_bf16({b, s_kv, cfg.dim}, rng);
  Tensor idx = empty({b, s, cfg.topk}, DataType::int32());
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int32_t>()[i] = skip(rng) == 0 ? -1 : row(rng);
  // The last query position attends to nothing: its output must be zero.
  for (int64_t t = 0; t < cfg.topk; ++t) idx.data_as<int32_t>()[idx.numel() - 1 - t] = -1;
  Tensor out = op(q, kv, idx);
  const auto ref = examples::sparse_attention_reference(
      q.data_as<uint16_t>(), kv.data_as<uint16_t>(), idx.data_as<int32_t>(), b, s, s_kv, cfg);
  return examples::max_abs_error_bf16(out, ref);
}

}  // namespace

int main() {
  const examples::SparseAttentionConfig cfg{/*heads=*/4, /*dim=*/32, /*topk=*/96, /*block=*/32};
  const tilejit::Kernel op =
      tilejit::jit(examples::sparse_attention_fwd(cfg), examples::sparse_attention_options("cpu"));
  std::mt19937 rng(11);
  const int64_t shapes[][3] = {{1, 1, 8}, {2, 3, 100}, {1, 17, 1}, {3, 5, 257}};
  for (const auto& shape : shapes) {
    const double err = run_case(op, cfg, shape[0], shape[1], shape[2], rng);
    std::printf("b=%lld s=%-3lld s_kv=%-4lld max error %.3g\n", (long long)shape[0],
                (long long)shape[1], (long long)shape[2], err);
    if (!(err < 2e-2)) {
      std::printf("FAIL: error above 2e-2 (bf16 output)\n");
      return 1;
    }
  }
  std::printf("sparse_attention: all shapes match the reference\n");
  return 0;
}

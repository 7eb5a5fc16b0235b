// The demo: the seed's sparse attention forward at a realistic size on the
// CPU. The caller passes Q, KV and Indices; the output and the four
// workspaces are the framework's business. Prints the error against a plain
// reference, the time per call, and the workspace pool's counters, which show
// that after the first call no call allocates.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/sparse_attention.h"
#include "kernels/tensor_util.h"

int main(int argc, char** argv) {
  using namespace tilejit;
  // --quick: a smaller problem for CI.
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const examples::SparseAttentionConfig cfg{/*heads=*/16, /*dim=*/128, /*topk=*/quick ? 128 : 512,
                                            /*block=*/64};
  const int64_t b = quick ? 1 : 2, s = quick ? 16 : 64, s_kv = quick ? 512 : 4096;
  const int calls = quick ? 3 : 10;

  auto t0 = std::chrono::steady_clock::now();
  const Kernel op = jit(examples::sparse_attention_fwd(cfg), examples::sparse_attention_options("cpu"));
  const double jit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937 rng(2026);
  std::uniform_int_distribution<int32_t> row(0, int32_t(s_kv - 1));
  Tensor q = examples::random_bf16({b, s, cfg.heads, cfg.dim}, rng);
  Tensor kv = examples::random_bf16({b, s_kv, cfg.dim}, rng);
  Tensor idx = empty({b, s, cfg.topk}, DataType::int32());
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int32_t>()[i] = i % 9 == 8 ? -1 : row(rng);

  std::printf("sparse_attention_fwd: b=%lld s=%lld s_kv=%lld heads=%d dim=%d topk=%d block=%d\n",
              (long long)b, (long long)s, (long long)s_kv, cfg.heads, cfg.dim, cfg.topk, cfg.block);
  std::printf("inputs: Q, KV, Indices; the caller passes no output and no workspace\n");
  std::printf("jit (generate, compile or load from the disk cache): %.1f ms\n", jit_ms);
  std::printf("workspace arena per call: %zu bytes (ws_kv, ws_s, ws_p, ws_o)\n",
              op.workspace_bytes_of(q, kv, idx));

  std::vector<double> times;
  Tensor out;
  for (int i = 0; i < calls; ++i) {
    t0 = std::chrono::steady_clock::now();
    out = op(q, kv, idx);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());

  const auto ref = examples::sparse_attention_reference(
      q.data_as<uint16_t>(), kv.data_as<uint16_t>(), idx.data_as<int32_t>(), b, s, s_kv, cfg);
  const double max_err = examples::max_abs_error_bf16(out, ref);
  const runtime::PoolStats st =
      runtime::WorkspacePool::get(runtime::get_backend("cpu"), Device::cpu()).stats();
  std::printf("output %s bf16, max |error| vs reference: %.3g\n", out.shape_str().c_str(), max_err);
  std::printf("time per call: median %.2f ms over %d calls (min %.2f ms)\n", times[times.size() / 2],
              calls, times.front());
  std::printf("workspace pool: %llu leases, %llu hits, %llu misses, %llu device allocations, "
              "%llu bytes reserved (peak %llu)\n",
              (unsigned long long)st.leases, (unsigned long long)st.hits,
              (unsigned long long)st.misses, (unsigned long long)st.device_allocs,
              (unsigned long long)st.bytes_reserved, (unsigned long long)st.peak_bytes_reserved);
  const bool ok = max_err < 2e-2 && st.device_allocs == 1 && st.hits == uint64_t(calls - 1);
  std::printf("%s\n", ok ? "OK: matches the reference; one arena, reused by every later call"
                         : "FAIL");
  return ok ? 0 : 1;
}

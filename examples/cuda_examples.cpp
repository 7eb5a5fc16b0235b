// The examples on a CUDA device, checked against the CPU references at
// several shapes: split-K matmul (float32), sparse attention and
// flash-decoding (bf16). Prints the time of each jit (compile, or disk-cache
// hit when run a second time with the same TILEJIT_CACHE_DIR). Exits 0 when
// every case matches, 77 (skipped) when no CUDA device is available.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/flash_decoding.h"
#include "kernels/sparse_attention.h"
#include "kernels/sparse_attention_cuda.h"
#include "kernels/splitk_matmul.h"
#include "kernels/splitk_matmul_cuda.h"
#include "kernels/tensor_util.h"

namespace {

using namespace tilejit;
using Clock = std::chrono::steady_clock;

int failures = 0;

Tensor to_device(const Tensor& host) {
  Tensor d = empty(host.shape(), host.dtype(), Device::cuda(0));
  runtime::copy(host, d);
  return d;
}

Tensor to_host(const Tensor& dev) {
  Tensor h = empty(dev.shape(), dev.dtype(), Device::cpu());
  runtime::copy(dev, h);
  return h;
}


// Relative L2 error ||out - ref|| / ||ref||, as in the method notes.
double rel_error(const Tensor& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double o = out.dtype() == DataType::bfloat16()
                         ? double(examples::from_bf16(out.data_as<uint16_t>()[i]))
                         : double(out.data_as<float>()[i]);
    num += (o - ref[size_t(i)]) * (o - ref[size_t(i)]);
    den += double(ref[size_t(i)]) * ref[size_t(i)];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void report(const char* what, const std::string& shape, double err, double tol) {
  const bool ok = err < tol;  // NaN fails
  if (!ok) ++failures;
  std::printf("%-18s %-28s rel.err %.2e (tol %.0e) %s\n", what, shape.c_str(), err, tol, ok ? "ok" : "FAIL");
}

template <typename F>
Kernel timed_jit(const char* name, F&& make) {
  const auto t0 = Clock::now();
  Kernel k = make();
  std::printf("jit %-22s %8.1f ms\n", name,
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  return k;
}

}  // namespace

int main() {
  if (!runtime::get_backend("cuda").available()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  {
    // Creating the CUDA context (100+ ms) is the process's cost, not the
    // kernel's: pay it before timing the jit.
    const auto t0 = Clock::now();
    Tensor warm = empty({1}, DataType::float32(), Device::cuda(0));
    std::printf("cuda context + first allocation %8.1f ms\n",
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::mt19937 rng(2026);
  const examples::SparseAttentionConfig sa{16, 128, 512, 64};
  const Kernel sparse = timed_jit("sparse_attention_fwd", [&] {
    return jit(examples::sparse_attention_fwd(sa, examples::kSparseAttentionCudaBody),
               examples::sparse_attention_options("cuda"));
  });
  const Kernel splitk = timed_jit("splitk_matmul", [&] {
    return jit(examples::splitk_matmul(4, examples::kSplitKCudaBody), examples::splitk_options("cuda"));
  });
  const examples::FlashDecodingConfig fd{32, 128, 16};
  const Kernel flash = timed_jit("flash_decoding", [&] {
    return jit(examples::flash_decoding(fd), examples::flash_decoding_options("cuda"));
  });

  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (auto [m, n, k] : {std::array<int64_t, 3>{256, 256, 4096}, {100, 37, 999}, {1, 1, 1}, {1024, 512, 2048}}) {
    Tensor a = empty({m, k}, DataType::float32()), b = empty({k, n}, DataType::float32());
    for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = uni(rng);
    for (int64_t i = 0; i < b.numel(); ++i) b.data_as<float>()[i] = uni(rng);
    const auto ref = examples::matmul_reference(a.data_as<float>(), b.data_as<float>(), m, n, k);
    Tensor da = to_device(a), db = to_device(b);
    for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the arena and its armed counters
      Tensor c = to_host(splitk(da, db));
      report("splitk_matmul", "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k),
             rel_error(c, ref), 1e-5);
    }
  }
  for (auto [b, s, s_kv] : {std::array<int64_t, 3>{1, 4, 1000}, {2, 33, 4096}, {1, 1, 64}}) {
    Tensor q = examples::random_bf16({b, s, sa.heads, sa.dim}, rng);
    Tensor kv = examples::random_bf16({b, s_kv, sa.dim}, rng);
    Tensor idx = empty({b, s, sa.topk}, DataType::int32());
    std::uniform_int_distribution<int32_t> row(-1, int32_t(s_kv - 1));
    for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int32_t>()[i] = row(rng);
    const auto ref = examples::sparse_attention_reference(q.data_as<uint16_t>(), kv.data_as<uint16_t>(),
                                                          idx.data_as<int32_t>(), b, s, s_kv, sa);
    Tensor out = to_host(sparse(to_device(q), to_device(kv), to_device(idx)));
    report("sparse_attention", "b=" + std::to_string(b) + " s=" + std::to_string(s) + " s_kv=" + std::to_string(s_kv),
           rel_error(out, ref), 1e-2);
  }
  for (auto [b, s_kv] : {std::array<int64_t, 2>{1, 1}, {2, 1000}, {4, 8192}, {1, 100000}}) {
    Tensor q = examples::random_bf16({b, fd.heads, fd.dim}, rng);
    Tensor k = examples::random_bf16({b, s_kv, fd.heads, fd.dim}, rng);
    Tensor v = examples::random_bf16({b, s_kv, fd.heads, fd.dim}, rng);
    const auto ref = examples::flash_decoding_reference(q.data_as<uint16_t>(), k.data_as<uint16_t>(),
                                                        v.data_as<uint16_t>(), b, s_kv, fd);
    Tensor dq = to_device(q), dk = to_device(k), dv = to_device(v);
    for (int rep = 0; rep < 2; ++rep) {
      Tensor out = to_host(flash(dq, dk, dv));
      report("flash_decoding", "b=" + std::to_string(b) + " s_kv=" + std::to_string(s_kv), rel_error(out, ref), 1e-2);
    }
  }
  const auto st = runtime::WorkspacePool::get(runtime::get_backend("cuda"), Device::cuda(0)).stats();
  std::printf("cuda pool: %llu leases, %llu hits, %llu device allocations\n", (unsigned long long)st.leases,
              (unsigned long long)st.hits, (unsigned long long)st.device_allocs);
  std::printf("%s\n", failures ? "FAIL" : "all CUDA examples match the references");
  return failures ? 1 : 0;
}

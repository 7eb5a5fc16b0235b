// The demo: the seed's sparse attention forward written in the tile language
// (examples/tile/sparse_attention.h, built with the C++ builder) at a
// realistic size on the CPU. The caller passes Q, KV and Indices; the output
// and the four workspaces are the framework's business. Prints the error
// against a plain reference, the time per call, the workspace arena slice by
// slice, and the workspace pool's counters, which show that after the first
// call no call allocates. The sparse attention declares all its workspaces
// in its signature, so a small flash-decoding follows, whose two partials are
// compiler-made (T.alloc_global) and whose arena is printed the same way.
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
#include "tile/flash_decoding.h"
#include "tile/sparse_attention.h"

namespace {

using namespace tilejit;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One line per slice of the arena; a slice named by a parameter of the
// signature is declared there (workspace_idx), any other the compiler made
// from a T.alloc_global.
void print_arena(const Kernel& op, const ir::PrimFunc& func, std::span<const Arg> args) {
  const std::vector<WorkspaceSlice> layout = op.workspace_layout(args);
  std::printf("workspace arena per call: %zu bytes, %zu slices\n", op.workspace_bytes(args),
              layout.size());
  for (const WorkspaceSlice& w : layout) {
    std::printf("  %-15s offset %9zu  bytes %9zu  %s\n", w.name.c_str(), w.offset, w.bytes,
                func.param_index(w.name) >= 0 ? "declared in the signature"
                                              : "compiler-made (T.alloc_global)");
  }
}

runtime::PoolStats pool_stats() {
  return runtime::WorkspacePool::get(runtime::get_backend("cpu"), Device::cpu()).stats();
}

void print_pool(const runtime::PoolStats& st) {
  std::printf("workspace pool: %llu leases, %llu hits, %llu misses, %llu device allocations, "
              "%llu bytes reserved (peak %llu)\n",
              (unsigned long long)st.leases, (unsigned long long)st.hits,
              (unsigned long long)st.misses, (unsigned long long)st.device_allocs,
              (unsigned long long)st.bytes_reserved, (unsigned long long)st.peak_bytes_reserved);
}

// The flash-decoding part: a small GQA decode step, checked in double.
bool run_flash_decoding(std::mt19937& rng) {
  const examples::tile::FlashDecodingConfig cfg;  // heads 4, kv heads 2, dim 64, 4 splits of 32
  const int64_t batch = 2, seq = 1000;
  JitOptions options;
  options.out_idx = {3};
  options.target = "cpu";
  const ir::PrimFunc func = examples::tile::flash_decoding(cfg);
  const Kernel fd = jit(func, options);
  std::normal_distribution<float> dist;
  auto random_f32 = [&](std::initializer_list<int64_t> shape) {
    Tensor t = empty(shape, DataType::float32());
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
    return t;
  };
  Tensor q = random_f32({batch, cfg.heads, cfg.dim});
  Tensor k = random_f32({batch, seq, cfg.kv_heads, cfg.dim});
  Tensor v = random_f32({batch, seq, cfg.kv_heads, cfg.dim});
  std::printf("\nflash_decoding: batch=%lld seqlen_kv=%lld heads=%lld kv_heads=%lld dim=%lld "
              "num_split=%lld block_n=%lld f32, %zu launches (split, combine)\n",
              (long long)batch, (long long)seq, (long long)cfg.heads, (long long)cfg.kv_heads,
              (long long)cfg.dim, (long long)cfg.num_split, (long long)cfg.block_n,
              fd.abi().launches.size());
  const Arg args[] = {q, k, v};
  print_arena(fd, func, args);
  Tensor o = fd(q, k, v);
  const std::vector<double> want = examples::tile::flash_decoding_reference(q, k, v);
  double err = 0;
  for (int64_t i = 0; i < o.numel(); ++i) {
    err = std::max(err, std::abs(double(o.data_as<float>()[i]) - want[size_t(i)]));
  }
  std::printf("output %s f32, max |error| vs reference: %.3g\n", o.shape_str().c_str(), err);
  return err < 2e-5;
}

}  // namespace

int main(int argc, char** argv) {
  // --quick: a smaller problem for CI.
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  examples::tile::SparseAttentionTileConfig cfg;  // heads 16, dim 128, block 64, bf16
  cfg.topk = quick ? 128 : 512;
  const examples::SparseAttentionConfig ref_cfg{int(cfg.heads), int(cfg.dim), int(cfg.topk),
                                                int(cfg.block)};
  const int64_t b = quick ? 1 : 2, s = quick ? 16 : 64, s_kv = quick ? 512 : 4096;
  const int calls = quick ? 3 : 10;

  auto t0 = std::chrono::steady_clock::now();
  const ir::PrimFunc func = examples::tile::sparse_attention_tile(cfg);
  const Kernel op = jit(func, examples::tile::sparse_attention_tile_options());
  const double jit_ms = ms_since(t0);

  std::mt19937 rng(2026);
  std::uniform_int_distribution<int32_t> row(0, int32_t(s_kv - 1));
  Tensor q = examples::random_bf16({b, s, cfg.heads, cfg.dim}, rng);
  Tensor kv = examples::random_bf16({b, s_kv, cfg.dim}, rng);
  Tensor idx = empty({b, s, cfg.topk}, DataType::int32());
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int32_t>()[i] = i % 9 == 8 ? -1 : row(rng);

  std::printf("sparse_attention_fwd (tile language, C++ builder): b=%lld s=%lld s_kv=%lld "
              "heads=%lld dim=%lld topk=%lld block=%lld bf16\n",
              (long long)b, (long long)s, (long long)s_kv, (long long)cfg.heads,
              (long long)cfg.dim, (long long)cfg.topk, (long long)cfg.block);
  std::printf("inputs: Q, KV, Indices (-1 skips a row); the caller passes no output and no "
              "workspace\n");
  std::printf("jit (lower, generate, compile or load from the disk cache): %.1f ms\n", jit_ms);
  const Arg args[] = {q, kv, idx};
  print_arena(op, func, args);

  std::vector<double> times;
  Tensor out;
  for (int i = 0; i < calls; ++i) {
    t0 = std::chrono::steady_clock::now();
    out = op(q, kv, idx);
    times.push_back(ms_since(t0));
  }
  std::sort(times.begin(), times.end());

  const auto ref = examples::sparse_attention_reference(
      q.data_as<uint16_t>(), kv.data_as<uint16_t>(), idx.data_as<int32_t>(), b, s, s_kv, ref_cfg);
  const double max_err = examples::max_abs_error_bf16(out, ref);
  const runtime::PoolStats st = pool_stats();
  std::printf("output %s bf16, max |error| vs reference: %.3g\n", out.shape_str().c_str(), max_err);
  std::printf("time per call: median %.2f ms over %d calls (min %.2f ms)\n", times[times.size() / 2],
              calls, times.front());
  print_pool(st);
  const bool sparse_ok = max_err < 2e-2 && st.device_allocs == 1 && st.hits == uint64_t(calls - 1);

  const bool decode_ok = run_flash_decoding(rng);
  print_pool(pool_stats());
  const bool ok = sparse_ok && decode_ok;
  std::printf("%s\n", ok ? "OK: both match their references; the sparse attention's one arena "
                           "was reused by every later call"
                         : "FAIL");
  return ok ? 0 : 1;
}

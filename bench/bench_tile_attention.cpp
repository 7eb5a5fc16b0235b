// The tile-language attention kernels on the CPU (bench_tile_attention.sh
// runs this beside bench_tile_attention.py, numpy's f32 version of the same
// math):
//   flash_attention  examples/tile/flash_attention.h, f32, non-causal;
//   sparse_tile      examples/tile/sparse_attention.h, bf16, the demo's size;
//   sparse_text      the phase-1 source-text operator
//                    (examples/kernels/sparse_attention.h), same inputs.
//
//   bench_tile_attention [threads] [repeats]
//
// Prints "<name> <problem> threads=<t>: median <ms> ms (min <ms> ms)" per
// kernel, then the tile sparse attention's median over the text one's. The
// kernels are compiled (or loaded from the disk cache) and called twice
// before the timing; the thread count is TILEJIT_NUM_THREADS, which the
// script sets, and is only echoed here.
#include <tilejit/tilejit.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "kernels/sparse_attention.h"
#include "kernels/tensor_util.h"
#include "tile/flash_attention.h"
#include "tile/sparse_attention.h"

namespace {

using namespace tilejit;
using Clock = std::chrono::steady_clock;

struct Timing {
  double median_ms, min_ms;
};

Timing time_calls(const std::function<void()>& call, int repeats) {
  call();
  call();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const Clock::time_point t0 = Clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

}  // namespace

int main(int argc, char** argv) {
  const char* threads = argc > 1 ? argv[1] : "?";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  std::mt19937 rng(1);

  {  // flash attention forward
    examples::tile::FlashAttentionConfig cfg;
    cfg.heads = 8;
    cfg.dim = 64;
    const int64_t batch = 1, seq = 1024;
    JitOptions options;
    options.out_idx = {3};
    options.target = "cpu";
    const Kernel fa = jit(examples::tile::flash_attention(cfg), options);
    std::normal_distribution<float> dist;
    auto random_f32 = [&] {
      Tensor t = empty({batch, seq, cfg.heads, cfg.dim}, DataType::float32());
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
      return t;
    };
    Tensor q = random_f32(), k = random_f32(), v = random_f32();
    const Timing t = time_calls([&] { Tensor o = fa(q, k, v); }, repeats);
    std::printf("flash_attention b=%lld seq=%lld heads=%lld dim=%lld f32 threads=%s: "
                "median %.2f ms (min %.2f ms)\n",
                (long long)batch, (long long)seq, (long long)cfg.heads, (long long)cfg.dim,
                threads, t.median_ms, t.min_ms);
  }

  {  // sparse attention: the tile program and the phase-1 text, same inputs
    const examples::tile::SparseAttentionTileConfig cfg;  // 16 heads, dim 128, topk 512, block 64
    const examples::SparseAttentionConfig text_cfg;       // the same numbers
    const int64_t b = 2, s = 64, s_kv = 4096;
    const Kernel tile = jit(examples::tile::sparse_attention_tile(cfg),
                            examples::tile::sparse_attention_tile_options());
    const Kernel text =
        jit(examples::sparse_attention_fwd(text_cfg), examples::sparse_attention_options("cpu"));
    std::uniform_int_distribution<int32_t> row(0, int32_t(s_kv - 1));
    Tensor q = examples::random_bf16({b, s, cfg.heads, cfg.dim}, rng);
    Tensor kv = examples::random_bf16({b, s_kv, cfg.dim}, rng);
    Tensor idx = empty({b, s, cfg.topk}, DataType::int32());
    for (int64_t i = 0; i < idx.numel(); ++i) {
      idx.data_as<int32_t>()[i] = i % 9 == 8 ? -1 : row(rng);
    }
    // Alternate the two so that both see the same machine load.
    Timing t_tile{}, t_text{};
    std::vector<double> tile_med, text_med;
    for (int round = 0; round < 3; ++round) {
      t_tile = time_calls([&] { Tensor o = tile(q, kv, idx); }, repeats);
      t_text = time_calls([&] { Tensor o = text(q, kv, idx); }, repeats);
      tile_med.push_back(t_tile.median_ms);
      text_med.push_back(t_text.median_ms);
    }
    std::sort(tile_med.begin(), tile_med.end());
    std::sort(text_med.begin(), text_med.end());
    const char* problem = "b=2 s=64 s_kv=4096 heads=16 dim=128 topk=512 block=64 bf16";
    std::printf("sparse_tile %s threads=%s: median %.2f ms (rounds %.2f %.2f %.2f)\n", problem,
                threads, tile_med[1], tile_med[0], tile_med[1], tile_med[2]);
    std::printf("sparse_text %s threads=%s: median %.2f ms (rounds %.2f %.2f %.2f)\n", problem,
                threads, text_med[1], text_med[0], text_med[1], text_med[2]);
    std::printf("sparse_tile / sparse_text: %.2f\n", tile_med[1] / text_med[1]);
  }
  return 0;
}

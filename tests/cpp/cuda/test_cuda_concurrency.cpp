// Many host threads, each with its own stream, calling the same and
// different kernels at once. A canary kernel fills its whole workspace with
// a call-unique value, spins, and checks that nothing else wrote there: no
// two calls in flight may share workspace memory, even across streams, and
// the pool stays bounded. The CPU half of this test is
// tests/cpp/reliability/test_concurrency.cpp.
#include <atomic>
#include <thread>

#include "cuda/cuda_test_util.h"
#include "tilejit/tilejit.h"

namespace tilejit::cuda::testing {
namespace {

// Ok[0] = 1 when the workspace still holds `tag` everywhere after the spin.
ir::PrimFunc canary(const std::string& name, int64_t words) {
  return ir::prim_func(name)
      .scalar("tag", DataType::int64())
      .tensor("Ok", {1}, DataType::int32())
      .tensor("W", {words}, DataType::int64())
      .threads(256)
      .body("cuda", R"(
__shared__ int ok;
if (threadIdx.x == 0) ok = 1;
for (int64_t i = threadIdx.x; i < W.size(); i += blockDim.x) W(i) = tag;
__syncthreads();
const long long start = clock64();
while (clock64() - start < 20000) {}
for (int64_t i = threadIdx.x; i < W.size(); i += blockDim.x) if (W(i) != tag) ok = 0;
__syncthreads();
if (threadIdx.x == 0) Ok(0) = ok;
)")
      .build();
}

TEST(CudaConcurrency, CallsOnManyStreamsNeverShareWorkspaces) {
  TILEJIT_SKIP_WITHOUT_GPU();
  JitOptions o;
  o.out_idx = {1};
  o.workspace_idx = {2};
  o.target = "cuda";
  const Kernel kernels[] = {jit(canary("canary_a", 4096), o), jit(canary("canary_b", 6000), o)};
  constexpr int kThreads = 8, kCalls = 150;
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        TestStream stream;
        CallOptions opts;
        opts.has_stream = true;
        opts.stream = stream.get();
        std::vector<Tensor> oks;
        for (int i = 0; i < kCalls; ++i) {
          const Arg args[] = {Arg(int64_t(t) * 1000000 + i)};
          oks.push_back(kernels[(t + i) % 2].call(args, opts)[0]);
        }
        stream.sync();
        for (const Tensor& ok : oks) {
          int32_t value = 0;
          Tensor host = runtime::empty({1}, DataType::int32());
          runtime::copy(ok, host);
          value = host.data_as<int32_t>()[0];
          if (value != 1) failures++;
        }
        oks.clear();  // outputs go back on `stream`, before it is destroyed
        stream.sync();
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  const runtime::PoolStats st = runtime::WorkspacePool::get(cuda_backend(), Device::cuda(0)).stats();
  EXPECT_EQ(st.bytes_in_use, 0u);
  // Bounded: at most one arena per call in flight; calls in flight are capped
  // by the streams' queues, far below one per call.
  EXPECT_LT(st.blocks, uint64_t(kThreads * kCalls) / 4);
}

}  // namespace
}  // namespace tilejit::cuda::testing

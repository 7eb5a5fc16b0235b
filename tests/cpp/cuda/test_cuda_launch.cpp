// Running CUDA kernels (GPU only; every test skips without a device): block
// and thread indices, scalars, bf16/fp16 conversions, dynamic shared memory
// above 48 KiB, launch and load errors, PTX loading, events, memory, the
// workspace pool's stream semantics on CUDA (steady-state reuse, cross-stream
// reuse after the release event, zero policies), and CUDA-graph capture.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tilejit/tilejit.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Expr;

constexpr Device kDev = Device::cuda(0);

// A kernel that keeps its stream busy for `cycles` clock cycles.
runtime::Module& spin_module() {
  static std::unique_ptr<runtime::Module> m = [] {
    const ir::PrimFunc f = ir::prim_func("spin")
                               .scalar("cycles", DataType::int64())
                               .body("cuda",
                                     "const long long t0 = clock64();\n"
                                     "while (clock64() - t0 < cycles) {}\n")
                               .build();
    return build(f, {});
  }();
  return *m;
}

// About 0.1 s on an H200 (1.98 GHz): long enough that the host always gets
// ahead of the device.
void spin(runtime::Stream stream, int64_t cycles = 200'000'000) {
  launch(spin_module(), {.args = {&cycles}, .stream = stream});
}

TEST(CudaLaunch, EveryBlockAndThreadRunsOnce) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Expr x = Expr::var("x"), y = Expr::var("y"), z = Expr::var("z");
  const ir::PrimFunc f = ir::prim_func("block_index")
                             .tensor("Out", {z, y, x, 32, 5}, DataType::int64())
                             .grid({x, y, z})
                             .threads(32)
                             .body("cuda",
                                   "const int64_t t = threadIdx.x;\n"
                                   "Out(bz, by, bx, t, 0) = bx;\n"
                                   "Out(bz, by, bx, t, 1) = by;\n"
                                   "Out(bz, by, bx, t, 2) = bz;\n"
                                   "Out(bz, by, bx, t, 3) += t + 1;\n"
                                   "Out(bz, by, bx, t, 4) = grid_dim.x * 10000 + grid_dim.y * 100 "
                                   "+ grid_dim.z;\n")
                             .build();
  auto m = build(f, {"x", "y", "z"});
  for (std::array<int64_t, 3> g : {std::array<int64_t, 3>{1, 1, 1}, {5, 3, 7}, {70000, 1, 2}}) {
    const size_t count = size_t(g[0] * g[1] * g[2] * 32 * 5);
    DeviceBuffer out(count * 8);
    out.upload(std::vector<int64_t>(count, 0));
    launch(*m, {.args = {out.get()}, .symbols = {g[0], g[1], g[2]}, .grid = g});
    const std::vector<int64_t> host = out.download<int64_t>(count);
    for (int64_t k = 0; k < g[2]; ++k) {
      for (int64_t j = 0; j < g[1]; ++j) {
        for (int64_t i = 0; i < g[0]; ++i) {
          for (int64_t t = 0; t < 32; ++t) {
            const int64_t* e = &host[size_t((((k * g[1] + j) * g[0] + i) * 32 + t) * 5)];
            ASSERT_EQ(e[0], i);
            ASSERT_EQ(e[1], j);
            ASSERT_EQ(e[2], k);
            ASSERT_EQ(e[3], t + 1) << "thread ran " << e[3] / (t + 1) << " times";
            ASSERT_EQ(e[4], g[0] * 10000 + g[1] * 100 + g[2]);
          }
        }
      }
    }
  }
}

TEST(CudaLaunch, ScalarsOfEachDtypeAndSymbolScalars) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Expr n = Expr::var("n");
  const ir::PrimFunc f = ir::prim_func("scalars")
                             .tensor("Out", {n}, DataType::float64())
                             .scalar("a", DataType::int32())
                             .scalar("b", DataType::int64())
                             .scalar("c", DataType::float32())
                             .scalar("n", DataType::int64())
                             .body("cuda",
                                   "Out(0) = a; Out(1) = double(b); Out(2) = c; Out(3) = n;\n"
                                   "Out(4) = Out.shape(0);\n")
                             .build();
  auto m = build(f, {"n"});
  DeviceBuffer out(5 * 8);
  int32_t a = -7;
  int64_t b = int64_t(1) << 40, sym = 5;
  float c = 2.5f;
  launch(*m, {.args = {out.get(), &a, &b, &c, &sym}, .symbols = {sym}});
  EXPECT_EQ(out.download<double>(5), (std::vector<double>{-7, double(b), 2.5, 5, 5}));
}

uint16_t bits_of_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // finite values: nearest even
}

TEST(CudaLaunch, Bfloat16AndFloat16AreTheToolkitTypes) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Expr n = Expr::var("n");
  const ir::PrimFunc f = ir::prim_func("halves")
                             .tensor("In", {n}, DataType::float32())
                             .tensor("B", {n}, DataType::bfloat16())
                             .tensor("H", {n}, DataType::float16())
                             .tensor("Back", {n, 2}, DataType::float32())
                             .threads(64)
                             .body("cuda",
                                   "const int i = threadIdx.x;\n"
                                   "if (i >= n) return;\n"
                                   "B(i) = tilejit::bfloat16(In(i));\n"
                                   "H(i) = tilejit::float16(In(i));\n"
                                   "Back(i, 0) = float(B(i));\n"
                                   "Back(i, 1) = float(H(i));\n")
                             .build();
  auto m = build(f, {"n"});
  const std::vector<float> in = {1.0f, -2.5f, 3.14159f, 1.00390625f, 65504.0f, 1e-8f, 0.1f};
  const std::vector<uint16_t> half_bits = {0x3c00, 0xc100, 0x4248, 0x3c04, 0x7bff, 0x0000, 0x2e66};
  const int64_t count = int64_t(in.size());
  DeviceBuffer din(in.size() * 4), db(in.size() * 2), dh(in.size() * 2), dback(in.size() * 8);
  din.upload(in);
  launch(*m, {.args = {din.get(), db.get(), dh.get(), dback.get()}, .symbols = {count}});
  const auto b = db.download<uint16_t>(in.size());
  const auto h = dh.download<uint16_t>(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(b[i], bits_of_bf16(in[i])) << in[i];
    EXPECT_EQ(h[i], half_bits[i]) << in[i];
  }
}

TEST(CudaLaunch, DynamicSharedMemoryAbove48KiB) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Expr g = Expr::var("g");
  const ir::PrimFunc f = ir::prim_func("smem")
                             .tensor("Out", {g}, DataType::float64())
                             .scalar("nfloats", DataType::int64())
                             .grid({g})
                             .threads(256)
                             .dynamic_smem(Expr(0))
                             .body("cuda",
                                   "extern __shared__ float smem[];\n"
                                   "for (int64_t i = threadIdx.x; i < nfloats; i += blockDim.x)\n"
                                   "  smem[i] = float((i + bx) % 1000);\n"
                                   "__syncthreads();\n"
                                   "if (threadIdx.x == 0) {\n"
                                   "  double s = 0;\n"
                                   "  for (int64_t i = nfloats - 1; i >= 0; --i) s += smem[i];\n"
                                   "  Out(bx) = s;\n"
                                   "}\n")
                             .build();
  auto m = build(f, {"g"});
  const int64_t blocks = 4;
  DeviceBuffer out(blocks * 8);
  const int optin = device_state(0).max_smem_optin;
  for (int64_t bytes : {int64_t(100) << 10, int64_t(200) << 10, int64_t(40) << 10, int64_t(optin)}) {
    if (bytes > optin) continue;
    int64_t nfloats = bytes / 4;
    launch(*m, {.args = {out.get(), &nfloats}, .symbols = {blocks}, .grid = {blocks, 1, 1},
                .smem = bytes});
    const auto host = out.download<double>(blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      double expect = 0;
      for (int64_t i = 0; i < nfloats; ++i) expect += double((i + b) % 1000);
      EXPECT_EQ(host[size_t(b)], expect) << bytes << " bytes, block " << b;
    }
  }
  int64_t nfloats = 1;
  const int64_t too_much = int64_t(optin) + 4;
  EXPECT_EQ(error_message([&] {
              launch(*m, {.args = {out.get(), &nfloats}, .symbols = {blocks},
                          .grid = {blocks, 1, 1}, .smem = too_much});
            }, ErrorKind::kValueError),
            "cuda launch: " + std::to_string(too_much) +
                " bytes of dynamic shared memory plus the kernel's 0 bytes of static shared "
                "memory exceed the " + std::to_string(optin) + " bytes per block that cuda:0 allows");
}

TEST(CudaLaunch, Errors) {
  TILEJIT_SKIP_WITHOUT_GPU();
  const ir::PrimFunc f =
      ir::prim_func("one").tensor("Out", {4}, DataType::int32()).body("cuda", "Out(0) = 1;").build();
  auto m = build(f, {});
  DeviceBuffer out(16);
  // An empty grid runs nothing, as on the CPU.
  launch(*m, {.args = {out.get()}, .grid = {0, 1, 1}});
  const std::string bad =
      " is outside what CUDA allows (grid x up to 2^31-1, y and z up to 65535, 1 to 1024 threads)";
  EXPECT_EQ(error_message([&] { launch(*m, {.args = {out.get()}, .grid = {-1, 1, 1}}); },
                          ErrorKind::kValueError),
            "cuda launch: grid (-1, 1, 1) with 1 threads and 0 bytes of dynamic shared memory" + bad);
  EXPECT_EQ(error_message([&] { launch(*m, {.args = {out.get()}, .grid = {1, 70000, 1}}); },
                          ErrorKind::kValueError),
            "cuda launch: grid (1, 70000, 1) with 1 threads and 0 bytes of dynamic shared memory" + bad);
  EXPECT_EQ(error_message([&] { build(f, {}, {}, kDev, 2048); }, ErrorKind::kRuntimeError),
            "cuda backend: cannot load the kernel binary: launch 'tilejit_kernel' has 2048 threads "
            "per block; CUDA allows 1 to 1024");
  EXPECT_EQ(error_message([&] { launch(*m, {.args = {out.get()}, .device = Device::cuda(7)}); },
                          ErrorKind::kValueError),
            "cuda launch: a kernel loaded on cuda:0 launched on cuda:7");
  EXPECT_EQ(error_message([&] { launch(*m, {.args = {out.get(), out.get()}}); },
                          ErrorKind::kInternalError),
            "cuda launch: 2 arguments, 0 symbols and 4 results for a kernel that reads 1, 0 and 4");
  // The kernel's __launch_bounds__(1): the driver refuses more threads.
  auto two = build(f, {}, {}, kDev, 2);
  EXPECT_EQ(error_message([&] { launch(*two, {.args = {out.get()}}); },
                          ErrorKind::kRuntimeError)
                .rfind("cuda launch: cuLaunchKernel failed: CUDA_ERROR_", 0),
            0u);
  EXPECT_EQ(error_message([&] { device_state(device_count()); }, ErrorKind::kValueError),
            "cuda backend: device cuda:" + std::to_string(device_count()) +
                " does not exist (the driver reports " + std::to_string(device_count()) +
                " device" + (device_count() == 1 ? "" : "s") + ")");
}

TEST(CudaLoad, DriverErrorsNameTheCallTheErrorAndItsCode) {
  TILEJIT_SKIP_WITHOUT_GPU();
  if (device_state(0).cc_major == 8) GTEST_SKIP() << "an sm_80 cubin loads on this device";
  const ir::PrimFunc f =
      ir::prim_func("one").tensor("Out", {4}, DataType::int32()).body("cuda", "Out(0) = 1;").build();
  runtime::CompileOptions o;
  o.extra_flags = {"--gpu-architecture=sm_80"};
  const std::string binary = compile(f, {}, o);
  const std::string msg = error_message([&] { cuda_backend().load(binary, abi_of(f, {}), kDev); },
                                        ErrorKind::kRuntimeError);
  EXPECT_EQ(msg.rfind("cuda backend: loading a cubin kernel on cuda:0 (compute capability ", 0), 0u)
      << msg;
  EXPECT_NE(msg.find("cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"),
            std::string::npos)
      << msg;
}

TEST(CudaLoad, PtxIsFinishedByTheDriver) {
  TILEJIT_SKIP_WITHOUT_GPU();
  const ir::PrimFunc f = ir::prim_func("ptx")
                             .tensor("Out", {64}, DataType::int32())
                             .threads(64)
                             .body("cuda", "Out(threadIdx.x) = threadIdx.x * 3;")
                             .build();
  const DeviceState& s = device_state(0);
  runtime::CompileOptions o;
  o.extra_flags = {"--gpu-architecture=compute_" + std::to_string(std::min(s.cc_major * 10 + s.cc_minor, 80))};
  const std::string binary = compile(f, {}, o);
  ASSERT_EQ(binary[0], 'P');
  auto m = cuda_backend().load(binary, abi_of(f, {}), kDev);
  DeviceBuffer out(64 * 4);
  launch(*m, {.args = {out.get()}});
  const auto host = out.download<int32_t>(64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[size_t(i)], i * 3);
}

TEST(CudaStreams, EventsAreRecycledAndTrackTheStream) {
  TILEJIT_SKIP_WITHOUT_GPU();
  runtime::Backend& be = cuda_backend();
  TestStream s;
  runtime::Event e1 = be.record_event(kDev, s.get());
  s.sync();
  EXPECT_TRUE(be.event_completed(e1));
  be.destroy_event(e1);
  runtime::Event e2 = be.record_event(kDev, s.get());
  EXPECT_EQ(e2, e1) << "a destroyed event is reused";
  spin(s.get());
  runtime::Event e3 = be.record_event(kDev, s.get());
  EXPECT_FALSE(be.event_completed(e3));
  s.sync();
  EXPECT_TRUE(be.event_completed(e3));
  be.destroy_event(e2);
  be.destroy_event(e3);
  EXPECT_FALSE(be.is_capturing(kDev, s.get()));
  EXPECT_FALSE(be.is_capturing(kDev, nullptr));
}

TEST(CudaMemory, TensorsAreAlignedAndMemsetOrdered) {
  TILEJIT_SKIP_WITHOUT_GPU();
  runtime::Backend& be = cuda_backend();
  Tensor t = runtime::empty({1000}, DataType::float32(), kDev);
  EXPECT_EQ(t.device(), kDev);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 256, 0u);
  be.memset_async(t.data(), 0x3f, 4000, kDev, nullptr);
  std::vector<uint32_t> host(1000);
  {
    ContextGuard guard(0);
    TILEJIT_CU(cuMemcpyDtoH, host.data(), CUdeviceptr(t.data()), 4000);
  }
  for (uint32_t v : host) ASSERT_EQ(v, 0x3f3f3f3fu);
  Tensor empty = runtime::empty({0, 3}, DataType::bfloat16(), kDev);
  EXPECT_EQ(empty.numel(), 0);
  // Freed on the legacy stream when the last reference goes; the next
  // allocation may reuse it.
  t = Tensor();
  Tensor again = runtime::empty({1000}, DataType::float32(), kDev);
  EXPECT_NE(again.data(), nullptr);
}

// ---- the workspace pool on CUDA --------------------------------------------

// Y = 2 * X + index, through two workspaces.
ir::PrimFunc two_workspaces() {
  Expr n = Expr::var("n");
  return ir::prim_func("two_ws")
      .tensor("X", {n}, DataType::float32())
      .tensor("Y", {n}, DataType::float32())
      .tensor("W1", {n}, DataType::float32())
      .tensor("W2", {n}, DataType::int32())
      .grid({ir::ceildiv(n, 256)})
      .threads(256)
      .body("cuda",
            "const int64_t i = bx * 256 + threadIdx.x;\n"
            "if (i >= n) return;\n"
            "W1(i) = X(i) * 2.f;\n"
            "W2(i) = int32_t(i);\n"
            "Y(i) = W1(i) + float(W2(i));\n")
      .build();
}

Kernel jit_cuda(const ir::PrimFunc& f, JitOptions o) {
  o.target = "cuda";
  o.disk_cache = false;
  return jit(f, o);
}

Tensor device_tensor(const std::vector<float>& values) {
  Tensor t = runtime::empty({int64_t(values.size())}, DataType::float32(), kDev);
  ContextGuard guard(0);
  TILEJIT_CU(cuMemcpyHtoD, CUdeviceptr(t.data()), values.data(), values.size() * 4);
  return t;
}

std::vector<float> host_copy(const Tensor& t, runtime::Stream stream) {
  ContextGuard guard(0);
  TILEJIT_CU(cuStreamSynchronize, static_cast<CUstream>(stream));
  std::vector<float> out(size_t(t.numel()));
  TILEJIT_CU(cuMemcpyDtoH, out.data(), CUdeviceptr(t.data()), out.size() * 4);
  return out;
}

void expect_two_ws_result(const std::vector<float>& x, const std::vector<float>& y) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i] + float(i)) << i;
}

TEST(CudaPool, SteadyStateOnOneStreamAllocatesNothing) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Kernel k = jit_cuda(two_workspaces(), {.out_idx = {1}, .workspace_idx = {2, 3}});
  TestStream s;
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17);
  Tensor dx = device_tensor(x);
  const Arg args[] = {Arg(dx)};
  CallOptions opts{.has_stream = true, .stream = s.get()};
  Tensor y = k.call(args, opts);  // warm: the pool makes its block
  runtime::WorkspacePool& pool = runtime::WorkspacePool::get(cuda_backend(), kDev);
  const runtime::PoolStats before = pool.stats();
  for (int i = 0; i < 50; ++i) y = k.call(args, opts);
  const runtime::PoolStats after = pool.stats();
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.leases - before.leases, 50u);
  EXPECT_EQ(after.hits - before.hits, 50u);
  expect_two_ws_result(x, host_copy(y, s.get()));
}

TEST(CudaPool, AnotherStreamWaitsForTheReleaseEvent) {
  TILEJIT_SKIP_WITHOUT_GPU();
  TestStream a, b;  // before the pool: its destructor frees blocks on them
  runtime::WorkspacePool pool(cuda_backend(), kDev);  // private: exact counters
  const size_t bytes = size_t(1) << 20;
  // release() clears the lease it is given: keep the pointers.
  runtime::WorkspacePool::Lease l1 = pool.acquire(bytes, {pool.device(), a.get(), false});
  void* const p1 = l1.ptr;
  spin(a.get());
  pool.release(l1, a.get());
  // The releasing stream reuses at once: stream order protects the block.
  runtime::WorkspacePool::Lease l2 = pool.acquire(bytes, {pool.device(), a.get(), false});
  EXPECT_EQ(l2.ptr, p1);
  spin(a.get());
  pool.release(l2, a.get());
  // Another stream may not: the release event is still pending.
  runtime::WorkspacePool::Lease l3 = pool.acquire(bytes, {pool.device(), b.get(), false});
  void* const p3 = l3.ptr;
  EXPECT_NE(p3, p1);
  EXPECT_EQ(pool.stats().misses, 2u);
  pool.release(l3, b.get());
  a.sync();
  // Now both blocks are free for b: no new allocation.
  runtime::WorkspacePool::Lease l4 = pool.acquire(bytes, {pool.device(), b.get(), false});
  runtime::WorkspacePool::Lease l5 = pool.acquire(bytes, {pool.device(), b.get(), false});
  EXPECT_EQ(pool.stats().misses, 2u);
  EXPECT_EQ(pool.stats().device_allocs, 2u);
  EXPECT_TRUE((l4.ptr == p1 && l5.ptr == p3) || (l4.ptr == p3 && l5.ptr == p1));
  pool.release(l4, b.get());
  pool.release(l5, b.get());
  b.sync();
}

TEST(CudaPool, ZeroPoliciesRunOnTheLaunchStream) {
  TILEJIT_SKIP_WITHOUT_GPU();
  Expr n = Expr::var("n");
  const ir::PrimFunc f = ir::prim_func("zeroes")
                             .tensor("X", {n}, DataType::int32())
                             .tensor("Out", {n}, DataType::int32())
                             .tensor("Wz", {n}, DataType::int32())
                             .tensor("Wo", {n}, DataType::int32())
                             .tensor("We", {n}, DataType::int32())
                             .grid({ir::ceildiv(n, 128)})
                             .threads(128)
                             .body("cuda",
                                   "const int64_t i = bx * 128 + threadIdx.x;\n"
                                   "if (i >= n) return;\n"
                                   "Out(i) = (Wz(i) == 0 ? 1 : 0) + (Wo(i) == 0 ? 2 : 0) + X(i);\n"
                                   "Wz(i) = 7;  // dirty: `zero` re-zeroes it every call\n"
                                   "We(i) = 9;  // `empty`: whatever is there\n"
                                   "// Wo is left zeroed, as `zero_once` promises\n")
                             .build();
  Kernel k = jit_cuda(f, {.out_idx = {1},
                          .workspace_idx = {2, 3, 4},
                          .workspace_init = {{"Wz", WorkspaceInit::kZero},
                                             {"Wo", WorkspaceInit::kZeroOnce}}});
  TestStream s;
  const int64_t count = 1000;
  Tensor x = runtime::empty({count}, DataType::int32(), kDev);
  {
    const std::vector<int32_t> zeros(size_t(count), 0);
    ContextGuard guard(0);  // a synchronous copy: done before `s` reads it
    TILEJIT_CU(cuMemcpyHtoD, CUdeviceptr(x.data()), zeros.data(), zeros.size() * 4);
  }
  const Arg args[] = {Arg(x)};
  for (int call = 0; call < 3; ++call) {
    Tensor out = k.call(args, {.has_stream = true, .stream = s.get()});
    std::vector<int32_t> host(static_cast<size_t>(count));
    ContextGuard guard(0);
    TILEJIT_CU(cuStreamSynchronize, static_cast<CUstream>(s.get()));
    TILEJIT_CU(cuMemcpyDtoH, host.data(), CUdeviceptr(out.data()), host.size() * 4);
    for (int32_t v : host) ASSERT_EQ(v, 3) << "call " << call;
  }
}

// ---- CUDA graphs -------------------------------------------------------------

TEST(CudaGraph, CapturedCallsReplayCorrectly) {
  TILEJIT_SKIP_WITHOUT_GPU();
  const DriverApi& api = driver();
  if (api.cuStreamBeginCapture == nullptr || api.cuGraphInstantiate == nullptr) {
    GTEST_SKIP() << "the driver lacks graph capture";
  }
  runtime::Backend& be = cuda_backend();
  Kernel k = jit_cuda(two_workspaces(), {.out_idx = {1}, .workspace_idx = {2, 3}});
  TestStream s, other;
  std::vector<float> x(5000, 1.f);
  Tensor dx = device_tensor(x);
  const Arg args[] = {Arg(dx)};
  Tensor warm = k.call(args, {.has_stream = true, .stream = s.get()});
  s.sync();

  ContextGuard guard(0);
  TILEJIT_CU(cuStreamBeginCapture, static_cast<CUstream>(s.get()), CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_TRUE(be.is_capturing(kDev, s.get()));
  Tensor y = k.call(args, {.has_stream = true, .stream = s.get()});
  CUgraph graph = nullptr;
  TILEJIT_CU(cuStreamEndCapture, static_cast<CUstream>(s.get()), &graph);
  EXPECT_FALSE(be.is_capturing(kDev, s.get()));
  CUgraphExec exec = nullptr;
  TILEJIT_CU(cuGraphInstantiate, &exec, graph, 0);

  for (int replay = 0; replay < 4; ++replay) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7 + size_t(replay)) % 23);
    TILEJIT_CU(cuMemcpyHtoD, CUdeviceptr(dx.data()), x.data(), x.size() * 4);
    // From pageable memory the copy may return before the DMA lands, and s
    // is not ordered with the legacy stream: wait before replaying.
    TILEJIT_CU(cuCtxSynchronize);
    TILEJIT_CU(cuGraphLaunch, exec, static_cast<CUstream>(s.get()));
    // Ordinary calls on another stream meanwhile must not get the graph's
    // workspace (Note [Graph arenas]).
    std::vector<float> x2(5000, float(replay + 100));
    Tensor dx2 = device_tensor(x2);
    const Arg args2[] = {Arg(dx2)};
    Tensor y2 = k.call(args2, {.has_stream = true, .stream = other.get()});
    expect_two_ws_result(x, host_copy(y, s.get()));
    expect_two_ws_result(x2, host_copy(y2, other.get()));
  }
  runtime::WorkspacePool& pool = runtime::WorkspacePool::get(be, kDev);
  EXPECT_GE(pool.stats().graph_blocks, 1u);
  TILEJIT_CU(cuGraphExecDestroy, exec);
  TILEJIT_CU(cuGraphDestroy, graph);
  // Note [Graph-owned arenas]: the block goes back to the pool once the
  // driver has released the graph (on its own thread, soon after).
  for (int i = 0; i < 200 && pool.stats().graph_blocks != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(pool.stats().graph_blocks, 0u);
}

void set_flag(void* flag) noexcept { static_cast<std::atomic<bool>*>(flag)->store(true); }

// Waits up to 2 s for `flag`: the user object's destructor runs on a driver
// thread soon after the last executable goes.
bool wait_for(const std::atomic<bool>& flag) {
  for (int i = 0; i < 200 && !flag.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return flag.load();
}

TEST(CudaGraph, ReleaseRunsWhenTheLastExecutableIsDestroyed) {
  TILEJIT_SKIP_WITHOUT_GPU();
  const DriverApi& api = driver();
  if (api.cuUserObjectCreate == nullptr || api.cuStreamBeginCapture == nullptr) {
    GTEST_SKIP() << "the driver lacks user objects or graph capture";
  }
  runtime::Backend& be = cuda_backend();
  TestStream s;
  std::atomic<bool> released{false};
  EXPECT_FALSE(be.on_graph_destroyed(kDev, s.get(), set_flag, &released));
  DeviceBuffer buf(4096);
  ContextGuard guard(0);
  TILEJIT_CU(cuStreamBeginCapture, static_cast<CUstream>(s.get()), CU_STREAM_CAPTURE_MODE_GLOBAL);
  be.memset_async(buf.get(), 0x11, 4096, kDev, s.get());  // a node of the graph
  EXPECT_TRUE(be.on_graph_destroyed(kDev, s.get(), set_flag, &released));
  CUgraph graph = nullptr;
  TILEJIT_CU(cuStreamEndCapture, static_cast<CUstream>(s.get()), &graph);
  CUgraphExec exec = nullptr;
  TILEJIT_CU(cuGraphInstantiate, &exec, graph, 0);
  TILEJIT_CU(cuGraphDestroy, graph);  // the executable still holds it
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(released.load());
  TILEJIT_CU(cuGraphLaunch, exec, static_cast<CUstream>(s.get()));
  s.sync();
  EXPECT_EQ(buf.download<uint8_t>(4096), std::vector<uint8_t>(4096, 0x11));
  EXPECT_FALSE(released.load());
  TILEJIT_CU(cuGraphExecDestroy, exec);
  EXPECT_TRUE(wait_for(released));
}

// ---- several devices ---------------------------------------------------------

TEST(CudaMultiDevice, InputsOnDevice1RunAndAllocateOnDevice1) {
  TILEJIT_SKIP_WITHOUT_GPU();
  if (device_count() < 2) GTEST_SKIP() << "one device";
  const Device dev1 = Device::cuda(1);
  const ir::PrimFunc f = ir::prim_func("on1")
                             .tensor("Out", {64}, DataType::int32())
                             .threads(64)
                             .body("cuda", "Out(threadIdx.x) = threadIdx.x + 1;")
                             .build();
  auto m = build(f, {}, {}, dev1);
  DeviceBuffer out(64 * 4, dev1);
  launch(*m, {.args = {out.get()}, .device = dev1});
  const auto host = out.download<int32_t>(64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[size_t(i)], i + 1);

  Kernel k = jit_cuda(two_workspaces(), {.out_idx = {1}, .workspace_idx = {2, 3}});
  std::vector<float> x(3000, 2.f);
  Tensor dx = runtime::empty({3000}, DataType::float32(), dev1);
  {
    ContextGuard guard(1);
    TILEJIT_CU(cuMemcpyHtoD, CUdeviceptr(dx.data()), x.data(), x.size() * 4);
  }
  Tensor y = k(dx);
  EXPECT_EQ(y.device(), dev1);
  std::vector<float> host_y(3000);
  {
    ContextGuard guard(1);
    TILEJIT_CU(cuCtxSynchronize);
    TILEJIT_CU(cuMemcpyDtoH, host_y.data(), CUdeviceptr(y.data()), host_y.size() * 4);
  }
  expect_two_ws_result(x, host_y);
  EXPECT_GE(runtime::WorkspacePool::get(cuda_backend(), dev1).stats().leases, 1u);
}

}  // namespace
}  // namespace tilejit::cuda::testing

// Calls end to end on the CPU: roles anywhere in the signature, several or no
// outputs, scalars, products of symbols, workspace policies, pool reuse,
// supplied buffers, and concurrent calls.
#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include "common/test_util.h"

namespace tilejit {
namespace {

using testing::cpu_options;
using testing::cpu_pool;
using testing::expect_error;
using testing::iota;

TEST(KernelCalls, OutputInTheMiddle) {
  const Expr n = symbolic("n");
  const auto f = prim_func("add")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .tensor("Z", {n}, DataType::float32())
                     .grid({n})
                     .body("cpu", "Y(bx) = X(bx) + Z(bx);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  EXPECT_EQ(k.input_names(), (std::vector<std::string>{"X", "Z"}));
  Tensor x = iota({5}, 1.f), z = iota({5}, 10.f, 10.f);
  Tensor y = k(x, z);
  ASSERT_EQ(y.shape_str(), "[5]");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y.data_as<float>()[i], float(1 + i) + float(10 + 10 * i));
}

TEST(KernelCalls, SeveralOutputsInOutIdxOrder) {
  const Expr m = symbolic("m"), n = symbolic("n");
  const auto f = prim_func("split")
                     .tensor("X", {m, n}, DataType::float32())
                     .tensor("RowSum", {m}, DataType::float32())
                     .tensor("ColSum", {n}, DataType::float32())
                     .body("cpu", R"(
for (int64_t i = 0; i < m; ++i) RowSum(i) = 0;
for (int64_t j = 0; j < n; ++j) ColSum(j) = 0;
for (int64_t i = 0; i < m; ++i)
  for (int64_t j = 0; j < n; ++j) { RowSum(i) += X(i, j); ColSum(j) += X(i, j); }
)")
                     .build();
  const Kernel k = jit(f, cpu_options({-1, -2}));  // ColSum first, then RowSum
  Tensor x = iota({2, 3});
  Outputs out = k(x);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape_str(), "[3]");
  EXPECT_EQ(out[1].shape_str(), "[2]");
  EXPECT_EQ(out[0].data_as<float>()[0], 0.f + 3.f);
  EXPECT_EQ(out[0].data_as<float>()[2], 2.f + 5.f);
  EXPECT_EQ(out[1].data_as<float>()[1], 3.f + 4.f + 5.f);
}

TEST(KernelCalls, SixOutputsInOrderAndCopiesShareThem) {
  // Outputs holds every output inline, in out_idx order; copies of the list
  // share the tensors.
  const Expr n = symbolic("n");
  auto builder = prim_func("fan_out").tensor("X", {n}, DataType::float32());
  std::string body;
  for (int o = 0; o < 6; ++o) {
    builder.tensor("Y" + std::to_string(o), {n}, DataType::float32());
    body += "Y" + std::to_string(o) + "(bx) = X(bx) * " + std::to_string(o + 1) + ";\n";
  }
  const auto f = builder.grid({n}).body("cpu", body).build();
  const Kernel k = jit(f, cpu_options({1, 2, 3, 4, 5, 6}));
  Tensor x = iota({3}, 1.f);
  Outputs out = k(x);
  ASSERT_EQ(out.size(), 6u);
  for (int o = 0; o < 6; ++o) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out[o].data_as<float>()[i], float((i + 1) * (o + 1)));
  }
  const Outputs copy = out;
  int visited = 0;
  for (const Tensor& t : copy) EXPECT_EQ(t.data(), out[visited++].data());
  EXPECT_EQ(visited, 6);
  EXPECT_EQ(out[5].use_count(), 2);
  testing::expect_error([&] { (void)out[6]; }, ErrorKind::kValueError,
                        "output index 6 is out of range: the call returned 6 outputs");
}

// A caller's TensorAllocator (how the Python binding makes torch outputs):
// asked once per output it makes, through the AllocContext overload's default, never
// for an output supplied with out=.
class CountingAllocator : public runtime::TensorAllocator {
 public:
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream) override {
    ++calls;
    last_shape.assign(shape.begin(), shape.end());
    last_dtype = dtype;
    return runtime::empty(shape, dtype, device);
  }
  int calls = 0;
  std::vector<int64_t> last_shape;
  DataType last_dtype;
};

TEST(KernelCalls, OutputsFromTheCallersAllocator) {
  const Expr n = symbolic("n");
  const auto f = prim_func("plus_one")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {2 * n}, DataType::float32())
                     .grid({n})
                     .body("cpu", "Y(2 * bx) = X(bx) + 1; Y(2 * bx + 1) = X(bx) + 1;")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  Tensor x = iota({3});
  CountingAllocator allocator;
  CallOptions o;
  o.allocator = &allocator;
  const Arg args[] = {Arg(x)};
  Tensor y = k.call(args, o);
  EXPECT_EQ(allocator.calls, 1);
  EXPECT_EQ(allocator.last_shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(allocator.last_dtype, DataType::float32());
  EXPECT_EQ(y.data_as<float>()[5], 3.f);
  Tensor mine = empty({6}, DataType::float32());
  const Tensor outs[] = {mine};
  o.out = outs;
  Tensor same = k.call(args, o);
  EXPECT_EQ(allocator.calls, 1);  // out= supplied it
  EXPECT_EQ(same.data(), mine.data());
}

// A TensorAllocator that fails with a given kind and message after
// `succeed` tensors.
class FailingAllocator : public runtime::TensorAllocator {
 public:
  FailingAllocator(int succeed, ErrorKind kind, std::string message)
      : succeed_(succeed), kind_(kind), message_(std::move(message)) {}
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream) override {
    if (made_++ >= succeed_) throw Error(kind_, message_);
    return runtime::empty(shape, dtype, device);
  }

 private:
  int succeed_;
  ErrorKind kind_;
  std::string message_;
  int made_ = 0;
};

TEST(KernelCalls, AllocationErrorsNameTheKernelAndTheOutput) {
  const Expr n = symbolic("n");
  const auto f = prim_func("two_outs")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .tensor("Z", {n}, DataType::int32())
                     .grid({n})
                     .body("cpu", "Y(bx) = X(bx); Z(bx) = int32_t(bx);")
                     .build();
  const Kernel k = jit(f, cpu_options({1, 2}));
  Tensor x = iota({3});
  const Arg args[] = {Arg(x)};
  CallOptions o;
  // The allocator's kind and its message, after the kernel and the output.
  FailingAllocator first(0, ErrorKind::kOutOfMemoryError, "cannot allocate 12 bytes");
  o.allocator = &first;
  testing::expect_error([&] { k.call(args, o); }, ErrorKind::kOutOfMemoryError,
                        "two_outs: output #0 'Y': cannot allocate 12 bytes");
  FailingAllocator second(1, ErrorKind::kValueError, "no such memory");
  o.allocator = &second;
  testing::expect_error([&] { k.call(args, o); }, ErrorKind::kValueError,
                        "two_outs: output #1 'Z': no such memory");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  o.allocator = nullptr;
  Outputs out = k.call(args, o);
  EXPECT_EQ(out[1].data_as<int32_t>()[2], 2);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(KernelCalls, OutOfHostMemoryNamesTheKernelAndTheOutput) {
  // 2^60 bytes fit in int64, so the call asks the CPU allocator, which
  // cannot have them. (The sanitizers' allocators abort instead.)
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("n", DataType::int64())
                     .tensor("Out", {n}, DataType::uint8())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  testing::expect_error([&] { k(int64_t{1} << 60); }, ErrorKind::kOutOfMemoryError,
                        "k: output #0 'Out': empty: cannot allocate 1152921504606846976 bytes of "
                        "host memory for a tensor of shape [1152921504606846976] and dtype uint8");
}
#endif

TEST(KernelCalls, NoOutputs) {
  const Expr n = symbolic("n");
  const auto f = prim_func("scale_in_place")
                     .tensor("X", {n}, DataType::float32())
                     .scalar("alpha", DataType::float32())
                     .grid({n})
                     .body("cpu", "X(bx) *= alpha;")
                     .build();
  const Kernel k = jit(f, cpu_options({}));
  Tensor x = iota({4}, 1.f);
  Outputs out = k(x, 2.5f);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(x.data_as<float>()[3], 10.f);
}

TEST(KernelCalls, ProductSymbolsScalarsAndGrid3D) {
  const Expr b = symbolic("b"), s = symbolic("s"), h = Expr(3);
  const auto f = prim_func("grid3")
                     .tensor("Q", {b, s, h}, DataType::int32())
                     .scalar("offset", DataType::int64())
                     .tensor("Out", {b * s, h}, DataType::int64())
                     .tensor("ws", {b * s * h}, DataType::int64())
                     .grid({h, s, b})
                     .body("cpu", R"(
const int64_t row = bz * s + by;
ws(row * 3 + bx) = Q(bz, by, bx) + offset;
Out(row, bx) = ws(row * 3 + bx) * grid_dim.x + block_idx.x;
)")
                     .build();
  const Kernel k = jit(f, cpu_options({2}, {3}));
  Tensor q = empty({2, 4, 3}, DataType::int32());
  for (int i = 0; i < 24; ++i) q.data_as<int32_t>()[i] = i;
  Tensor out = k(q, int64_t{100});
  ASSERT_EQ(out.shape_str(), "[8, 3]");
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out.data_as<int64_t>()[i], (i + 100) * 3 + i % 3) << i;
  EXPECT_EQ(k.workspace_bytes_of(q, 100), 256u);  // 24 int64 = 192 bytes, one 256-byte line
}

TEST(KernelCalls, WorkspaceLayoutIsAligned) {
  const Expr n = symbolic("n");
  const auto f = prim_func("layout")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("W1", {n}, DataType::float32())
                     .tensor("W2", {n, 3}, DataType::float64())
                     .tensor("W3", {1}, DataType::uint8())
                     .body("cpu", "")
                     .build();
  JitOptions o = cpu_options({}, {1, 2, 3});
  o.workspace_init = {{"W2", WorkspaceInit::kZero}};
  const Kernel k = jit(f, o);
  Tensor x = empty({10}, DataType::float32());
  const Arg args[] = {Arg(x)};
  const auto layout = k.workspace_layout(args);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_EQ(layout[0].offset, 0u);
  EXPECT_EQ(layout[0].bytes, 40u);
  EXPECT_EQ(layout[1].offset, 256u);
  EXPECT_EQ(layout[1].bytes, 240u);
  EXPECT_EQ(layout[1].init, WorkspaceInit::kZero);
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{10, 3}));
  EXPECT_EQ(layout[2].offset, 512u);
  EXPECT_EQ(k.workspace_bytes(args), 768u);
}

// A kernel whose workspace starts with `probe` elements: it reports whether
// they were all zero on entry, then writes `value` into them (0 keeps the
// zero_once promise).
ir::PrimFunc probe_kernel(const std::string& name) {
  const Expr n = symbolic("n");
  return prim_func(name)
      .tensor("Value", {1}, DataType::int32())
      .tensor("WasZero", {1}, DataType::int32())
      .tensor("W", {n}, DataType::int32())
      .tensor("Shape", {n}, DataType::uint8())
      .body("cpu", R"(
int32_t zero = 1;
for (int64_t i = 0; i < n; ++i) zero &= W(i) == 0;
WasZero(0) = zero;
for (int64_t i = 0; i < n; ++i) W(i) = Value(0);
)")
      .build();
}

Kernel probe(const std::string& name, WorkspaceInit init) {
  JitOptions o = cpu_options({1}, {2});
  o.workspace_init = {{"W", init}};
  return jit(probe_kernel(name), o);
}

int32_t was_zero(const Kernel& k, int32_t value, int64_t n = 64) {
  Tensor v = empty({1}, DataType::int32());
  v.data_as<int32_t>()[0] = value;
  Tensor shape = empty({n}, DataType::uint8());
  Tensor out = k(v, shape);
  return out.data_as<int32_t>()[0];
}

TEST(KernelCalls, WorkspaceInitPolicies) {
  cpu_pool().empty_cache();
  const Kernel zero = probe("probe_zero", WorkspaceInit::kZero);
  const Kernel once = probe("probe_once", WorkspaceInit::kZeroOnce);
  const Kernel empty_ws = probe("probe_empty", WorkspaceInit::kEmpty);

  // zero: zeroed before every call, whatever the last call left.
  EXPECT_EQ(was_zero(zero, 7), 1);
  EXPECT_EQ(was_zero(zero, 7), 1);
  // empty: the arena is reused as it was left (this is the reuse the pool is for).
  EXPECT_EQ(was_zero(empty_ws, 5), 0);  // the block still holds zero's 7s
  // zero_once: zeroed for a block last used by another layout...
  EXPECT_EQ(was_zero(once, 0), 1);
  // ...then trusted: a kernel that keeps its promise sees zeros again,
  EXPECT_EQ(was_zero(once, 3), 1);
  // and one that breaks it sees what it left (no re-zeroing in steady state).
  EXPECT_EQ(was_zero(once, 0), 0);
  EXPECT_EQ(was_zero(once, 0), 1);
  // Another kernel scribbling on the block invalidates the promise: zeroed again.
  EXPECT_EQ(was_zero(empty_ws, 9), 1);  // sees the zeros `once` left, writes 9s
  EXPECT_EQ(was_zero(once, 0), 1);
  // So does another shape of the same kernel (a different layout).
  EXPECT_EQ(was_zero(once, 5, 32), 1);  // new layout: zeroed; leaves 5s
  EXPECT_EQ(was_zero(once, 0, 64), 1);  // back to the first layout: zeroed again
}

TEST(KernelCalls, PoolReuseZeroAllocationsInSteadyState) {
  const Kernel k = probe("probe_reuse", WorkspaceInit::kEmpty);
  was_zero(k, 1);  // warm
  const auto before = cpu_pool().stats();
  for (int i = 0; i < 200; ++i) was_zero(k, i);
  const auto after = cpu_pool().stats();
  EXPECT_EQ(after.leases - before.leases, 200u);
  EXPECT_EQ(after.hits - before.hits, 200u);
  EXPECT_EQ(after.device_allocs - before.device_allocs, 0u);
  EXPECT_EQ(after.bytes_in_use, 0u);
}

TEST(KernelCalls, SuppliedOutputAndWorkspace) {
  const Kernel k = probe("probe_supplied", WorkspaceInit::kZeroOnce);
  Tensor v = empty({1}, DataType::int32());
  v.data_as<int32_t>()[0] = 42;
  Tensor shape = empty({16}, DataType::uint8());
  Tensor out = empty({1}, DataType::int32());
  Tensor arena = empty({512}, DataType::uint8());
  std::fill_n(arena.data_as<uint8_t>(), 512, 0xff);
  const Tensor outs[] = {out};
  CallOptions o;
  o.out = outs;
  o.workspace = arena;
  const Arg args[] = {Arg(v), Arg(shape)};
  const auto before = cpu_pool().stats();
  Outputs result = k.call(args, o);
  EXPECT_EQ(result[0].data(), out.data());  // the caller's tensor, not a copy
  EXPECT_EQ(out.data_as<int32_t>()[0], 1);  // zero_once is zeroed in a supplied arena
  for (int i = 0; i < 16; ++i) EXPECT_EQ(arena.data_as<int32_t>()[i], 42);
  EXPECT_EQ(cpu_pool().stats().leases, before.leases);  // the pool was not used
}

TEST(KernelCalls, WorkspaceBytesFromShapesAlone) {
  const Expr n = symbolic("n"), m = symbolic("m");
  const auto f = prim_func("layout_shapes")
                     .tensor("X", {n, 4}, DataType::float32())
                     .scalar("m", DataType::int64())
                     .tensor("W1", {n, 4}, DataType::float32())
                     .tensor("W2", {m * n}, DataType::float64())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({}, {2, 3}));
  Tensor x = empty({10, 4}, DataType::float32());
  const Arg args[] = {Arg(x), Arg(3)};
  const ShapeArg shapes[] = {{10, 4}, 3};
  EXPECT_EQ(k.workspace_bytes_for_shapes(shapes), k.workspace_bytes(args));
  EXPECT_EQ(k.workspace_bytes_for_shapes(shapes), 512u);  // 160 -> 256, then 240 -> 256
  const auto layout = k.workspace_layout_for_shapes(shapes);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[1].offset, 256u);
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{30}));
  // Checked as a call with tensors of those shapes would be.
  const ShapeArg short_list[] = {{10, 4}};
  expect_error([&] { k.workspace_bytes_for_shapes(short_list); }, ErrorKind::kTypeError,
               "layout_shapes: expected 2 inputs (X, m), got 1: missing parameter #1 'm' (a "
               "parameter in neither out_idx nor workspace_idx is an input)");
  const ShapeArg wrong_rank[] = {{10}, 3};
  expect_error([&] { k.workspace_bytes_for_shapes(wrong_rank); }, ErrorKind::kValueError,
               "layout_shapes: argument #0 'X': expected 2 dimensions [n, 4], got 1 [10]");
  const ShapeArg negative[] = {{-1, 4}, 3};
  expect_error([&] { k.workspace_bytes_for_shapes(negative); }, ErrorKind::kValueError,
               "layout_shapes: argument #0 'X': shape [-1, 4] has a negative extent");
  const ShapeArg huge[] = {{int64_t{1} << 32, int64_t{1} << 32}, 3};
  expect_error([&] { k.workspace_bytes_for_shapes(huge); }, ErrorKind::kValueError,
               "layout_shapes: argument #0 'X': shape [4294967296, 4294967296] has more elements "
               "than int64 can count");
  const ShapeArg too_deep[] = {{1, 1, 1, 1, 1, 1, 1, 1, 1}, 3};
  expect_error([&] { k.workspace_layout_for_shapes(too_deep); }, ErrorKind::kValueError,
               "layout_shapes: argument #0 'X': shape [1, 1, 1, 1, 1, 1, 1, 1, 1] has 9 "
               "dimensions; tilejit supports at most 8");
  const ShapeArg swapped[] = {3, {10, 4}};
  expect_error([&] { k.workspace_bytes_for_shapes(swapped); }, ErrorKind::kTypeError,
               "layout_shapes: argument #0 'X': expected a float32 tensor, got an integer (3)");
}

TEST(KernelCalls, EmptyWorkspaceIsAnAlignedArenaOfTheRightSize) {
  const Kernel k = probe("probe_arena", WorkspaceInit::kZeroOnce);
  Tensor v = empty({1}, DataType::int32());
  v.data_as<int32_t>()[0] = 42;
  Tensor shape = empty({100}, DataType::uint8());
  const Arg args[] = {Arg(v), Arg(shape)};
  Tensor arena = k.empty_workspace(args);
  EXPECT_EQ(arena.dtype(), DataType::uint8());
  EXPECT_EQ(arena.device(), Device::cpu());
  EXPECT_EQ(size_t(arena.nbytes()), k.workspace_bytes(args));
  EXPECT_EQ(arena.nbytes(), 512);  // 400 bytes of int32, in whole 256-byte lines
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % 256, 0u);
  CallOptions o;
  o.workspace = arena;
  const auto before = cpu_pool().stats();
  Outputs result = k.call(args, o);
  EXPECT_EQ(result[0].data_as<int32_t>()[0], 1);  // zeroed: a supplied arena always is
  EXPECT_EQ(arena.data_as<int32_t>()[99], 42);
  EXPECT_EQ(cpu_pool().stats().leases, before.leases);
  // The inputs are checked as by a call.
  const Arg short_list[] = {Arg(v)};
  expect_error([&] { k.empty_workspace(short_list); }, ErrorKind::kTypeError,
               "probe_arena: expected 2 inputs (Value, Shape), got 1: missing parameter #3 "
               "'Shape' (a parameter in neither out_idx nor workspace_idx is an input)");
}

TEST(KernelCalls, MatchInputsByName) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Out", {n}, DataType::float32())
                     .tensor("Yin", {n}, DataType::float32())
                     .scalar("alpha", DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  int order[3];
  const std::string_view all[] = {"alpha", "X", "Yin"};
  k.match_inputs(0, all, order);
  EXPECT_EQ(order[0], 1);
  EXPECT_EQ(order[1], 2);
  EXPECT_EQ(order[2], 0);
  const std::string_view rest[] = {"alpha", "Yin"};
  k.match_inputs(1, rest, order);  // positional first, then by name
  EXPECT_EQ(order[0], 0);
  EXPECT_EQ(order[1], 2);
  EXPECT_EQ(order[2], 1);
  k.match_inputs(3, {}, order);
  EXPECT_EQ(order[2], 2);
  const std::string_view unknown[] = {"Z"};
  expect_error([&] { k.match_inputs(2, unknown, order); }, ErrorKind::kTypeError,
               "k: unexpected keyword argument 'Z' (inputs: X, Yin, alpha)");
  expect_error([&] { k.match_inputs(2, unknown, order, "stream=, out="); }, ErrorKind::kTypeError,
               "k: unexpected keyword argument 'Z' (inputs: X, Yin, alpha; options: stream=, "
               "out=)");
  const std::string_view output[] = {"Out"};  // an output is no input
  expect_error([&] { k.match_inputs(2, output, order); }, ErrorKind::kTypeError,
               "k: unexpected keyword argument 'Out' (inputs: X, Yin, alpha)");
  const std::string_view again[] = {"X", "alpha"};
  expect_error([&] { k.match_inputs(1, again, order); }, ErrorKind::kTypeError,
               "k: got multiple values for input #0 'X'");
  const std::string_view twice[] = {"alpha", "alpha"};
  expect_error([&] { k.match_inputs(2, twice, order); }, ErrorKind::kTypeError,
               "k: got multiple values for input #2 'alpha'");
  const std::string_view some[] = {"alpha"};
  expect_error([&] { k.match_inputs(0, some, order); }, ErrorKind::kTypeError,
               "k: expected 3 inputs (X, Yin, alpha), got 1: missing parameters #0 'X', #2 "
               "'Yin' (a parameter in neither out_idx nor workspace_idx is an input)");
  expect_error([&] { k.match_inputs(4, {}, order); }, ErrorKind::kTypeError,
               "k: expected 3 inputs (X, Yin, alpha), got 4");
}

TEST(KernelCalls, ConcurrentCallsNeverShareWorkspaces) {
  // Each call writes a call-unique value into its whole workspace, waits, and
  // checks that nobody else wrote there.
  const Expr n = symbolic("n");
  const auto f = prim_func("canary")
                     .tensor("Tag", {n}, DataType::int64())
                     .tensor("Ok", {1}, DataType::int32())
                     .tensor("W", {4096}, DataType::int64())
                     .body("cpu", R"(
const int64_t tag = Tag(0);
for (int64_t i = 0; i < 4096; ++i) W(i) = tag;
for (volatile int spin = 0; spin < 2000; ++spin) {}
int32_t ok = 1;
for (int64_t i = 0; i < 4096; ++i) ok &= W(i) == tag;
Ok(0) = ok;
)")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Tensor tag = empty({1}, DataType::int64());
      for (int i = 0; i < 200; ++i) {
        tag.data_as<int64_t>()[0] = int64_t(t) * 1000000 + i;
        Tensor ok = k(tag);
        if (ok.data_as<int32_t>()[0] != 1) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const auto st = cpu_pool().stats();
  EXPECT_EQ(st.bytes_in_use, 0u);
  EXPECT_LE(st.blocks, 8u + 16u);  // bounded: at most one block per thread in flight, plus others
}

TEST(KernelCalls, JitTwiceHitsTheModuleCache) {
  const auto f = probe_kernel("probe_cache");
  auto& cache = runtime::CompileCache::global();
  const Kernel a = jit(f, cpu_options({1}, {2}));
  const auto before = cache.stats();
  const Kernel b = jit(f, cpu_options({1}, {2}));
  const auto after = cache.stats();
  EXPECT_EQ(after.memory_hits - before.memory_hits, 1u);
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(a.source(), b.source());
  was_zero(b, 0);                  // leaves its (reused) workspace zeroed...
  EXPECT_EQ(was_zero(b, 4), 1);    // ...which the next call on the same block sees
  EXPECT_EQ(was_zero(b, 0), 0);
}

}  // namespace
}  // namespace tilejit

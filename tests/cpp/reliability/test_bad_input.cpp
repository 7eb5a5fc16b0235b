// The catalogue of bad calls (issue 5), beyond what tests/cpp/jit/
// test_call_errors.cpp covers: zero-size and negative extents, strided
// views, scalars and tensors swapped, supplied out= and workspace= buffers
// that do not fit, shapes that divide by zero or overflow, and workspaces
// over the pool's limit. Every case checks the error's kind and exact
// message, that no workspace lease is left held, and that the next good call
// succeeds with the right result (expect_rejected).
#include <cstdint>
#include <limits>

#include "reliability/reliability_support.h"

namespace tilejit::reliability {
namespace {

// Out = alpha * X + Y, through a workspace: W = alpha * X, Out = W + Y.
class BadCall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Expr n = symbolic("n");
    const auto f = prim_func("scale_add")
                       .tensor("X", {n, 4}, DataType::float32())
                       .tensor("Y", {n, 4}, DataType::float32())
                       .scalar("alpha", DataType::float32())
                       .tensor("Out", {n, 4}, DataType::float32())
                       .tensor("W", {n, 4}, DataType::float32())
                       .grid({n})
                       .body("cpu", R"(
for (int64_t j = 0; j < 4; ++j) W(bx, j) = alpha * X(bx, j);
for (int64_t j = 0; j < 4; ++j) Out(bx, j) = W(bx, j) + Y(bx, j);
)")
                       .build();
    kernel_ = new Kernel(jit(f, cpu_options({3}, {4})));
  }
  static void TearDownTestSuite() {
    delete kernel_;
    kernel_ = nullptr;
  }

  void SetUp() override {
    x_ = iota({3, 4});
    y_ = iota({3, 4}, 100.f);
  }

  const Kernel& k() const { return *kernel_; }

  // Out[i] = 2 * i + 100 + i.
  static void check_result(const Tensor& out) {
    ASSERT_EQ(out.shape_str(), "[3, 4]");
    for (int i = 0; i < 12; ++i) ASSERT_EQ(out.data_as<float>()[i], 100.f + 3.f * float(i)) << i;
  }
  // The next good call.
  std::function<void()> good() {
    return [this] { check_result(k()(x_, y_, 2.0f)); };
  }

  static Kernel* kernel_;
  Tensor x_, y_;
};

Kernel* BadCall::kernel_ = nullptr;

TEST_F(BadCall, ZeroSizeInputMakesTheGridZero) {
  Tensor x0 = empty({0, 4}, DataType::float32());
  Tensor y0 = empty({0, 4}, DataType::float32());
  expect_rejected([&] { k()(x0, y0, 2.0f); }, ErrorKind::kValueError,
                  "scale_add: grid extent 0 = n evaluates to 0 (n = 0 from X.shape[0]); every "
                  "grid extent must be positive",
                  good());
  // workspace_bytes() checks as a call does.
  const Arg args[] = {Arg(x0), Arg(y0), Arg(2.0f)};
  expect_rejected([&] { k().workspace_bytes(args); }, ErrorKind::kValueError,
                  "scale_add: grid extent 0 = n evaluates to 0 (n = 0 from X.shape[0]); every "
                  "grid extent must be positive",
                  good());
}

TEST_F(BadCall, NegativeDimensionIsRejectedByTensor) {
  float buf[12] = {};
  expect_rejected([&] { view(buf, {-3, 4}, DataType::float32()); }, ErrorKind::kValueError,
                  "tensor dimension 0 is negative (-3)", good());
}

TEST_F(BadCall, TransposedView) {
  Tensor xt = view(x_.data(), {3, 4}, DataType::float32(), Device::cpu(), {1, 3});
  expect_rejected([&] { k()(xt, y_, 2.0f); }, ErrorKind::kValueError,
                  "scale_add: argument #0 'X': expected a contiguous tensor, got strides [1, 3] "
                  "in elements ([4, 12] in bytes) for shape [3, 4]",
                  good());
}

TEST_F(BadCall, ColumnSliceView) {
  Tensor wide = iota({3, 8});
  Tensor slice = view(wide.data(), {3, 4}, DataType::float32(), Device::cpu(), {8, 1});
  expect_rejected([&] { k()(x_, slice, 2.0f); }, ErrorKind::kValueError,
                  "scale_add: argument #1 'Y': expected a contiguous tensor, got strides [8, 1] "
                  "in elements ([32, 4] in bytes) for shape [3, 4]",
                  good());
}

TEST_F(BadCall, BroadcastView) {
  Tensor row = iota({4});
  Tensor broadcast = view(row.data(), {3, 4}, DataType::float32(), Device::cpu(), {0, 1});
  expect_rejected([&] { k()(broadcast, y_, 2.0f); }, ErrorKind::kValueError,
                  "scale_add: argument #0 'X': expected a contiguous tensor, got strides [0, 1] "
                  "in elements ([0, 4] in bytes) for shape [3, 4]",
                  good());
}

TEST_F(BadCall, ExtentOneDimensionsMayCarryAnyStride) {
  // Not an error: a [1, 4] view with an odd row stride is contiguous.
  Tensor x1 = iota({1, 4}), y1 = iota({1, 4}, 10.f);
  Tensor xv = view(x1.data(), {1, 4}, DataType::float32(), Device::cpu(), {1000, 1});
  Tensor out = k()(xv, y1, 3.0f);
  ASSERT_EQ(out.shape_str(), "[1, 4]");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.data_as<float>()[i], 3.f * float(i) + 10.f + float(i));
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  good()();
}

TEST_F(BadCall, FloatWhereATensorGoes) {
  expect_rejected([&] { k()(x_, 1.5, 2.0f); }, ErrorKind::kTypeError,
                  "scale_add: argument #1 'Y': expected a float32 tensor, got a float (1.5)",
                  good());
}

TEST_F(BadCall, NoneWhereAScalarGoes) {
  const Arg args[] = {Arg(x_), Arg(y_), Arg()};
  expect_rejected([&] { k().call(args); }, ErrorKind::kTypeError,
                  "scale_add: argument #2 'alpha': expected float32 scalar, got None", good());
}

TEST_F(BadCall, UndefinedTensorWhereAScalarGoes) {
  Tensor undefined;
  expect_rejected([&] { k()(x_, y_, undefined); }, ErrorKind::kTypeError,
                  "scale_add: argument #2 'alpha': expected float32 scalar, got an undefined "
                  "tensor",
                  good());
}

TEST_F(BadCall, TooManyArgumentsEndingInAScalar) {
  expect_rejected([&] { k()(x_, y_, 2.0f, 1); }, ErrorKind::kTypeError,
                  "scale_add: expected 3 inputs (X, Y, alpha), got 4", good());
}

// ---- out= -------------------------------------------------------------------

class BadOut : public BadCall {
 protected:
  void call_with_out(const Tensor& out) {
    const Tensor outs[] = {out};
    CallOptions o;
    o.out = outs;
    const Arg args[] = {Arg(x_), Arg(y_), Arg(2.0f)};
    k().call(args, o);
  }
};

TEST_F(BadOut, WrongCount) {
  Tensor a = empty({3, 4}, DataType::float32()), b = empty({3, 4}, DataType::float32());
  const Tensor outs[] = {a, b};
  CallOptions o;
  o.out = outs;
  const Arg args[] = {Arg(x_), Arg(y_), Arg(2.0f)};
  expect_rejected([&] { k().call(args, o); }, ErrorKind::kValueError,
                  "scale_add: out= has 2 tensors; the kernel has 1 output", good());
}

TEST(BadOutCount, FewerThanTheOutputs) {
  // Found by the fuzzer: a short out= list must be rejected before any of
  // its entries is read.
  const Expr n = symbolic("n");
  const auto f = prim_func("two_out")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("A", {n}, DataType::float32())
                     .tensor("B", {n}, DataType::float32())
                     .grid({n})
                     .body("cpu", "A(bx) = X(bx) + 1; B(bx) = X(bx) + 2;")
                     .build();
  const Kernel k = jit(f, cpu_options({1, 2}));
  Tensor x = iota({3}), a = empty({3}, DataType::float32());
  const Tensor outs[] = {a};
  CallOptions o;
  o.out = outs;
  const Arg args[] = {Arg(x)};
  expect_rejected([&] { k.call(args, o); }, ErrorKind::kValueError,
                  "two_out: out= has 1 tensor; the kernel has 2 outputs", [&] {
                    Outputs out = k(x);
                    ASSERT_EQ(out.size(), 2u);
                    EXPECT_EQ(out[0].data_as<float>()[2], 3.f);
                    EXPECT_EQ(out[1].data_as<float>()[2], 4.f);
                  });
}

TEST_F(BadOut, WrongDtype) {
  Tensor out = empty({3, 4}, DataType::float64());
  expect_rejected([&] { call_with_out(out); }, ErrorKind::kTypeError,
                  "scale_add: out[0] 'Out': expected float32, got float64", good());
}

TEST_F(BadOut, WrongRank) {
  Tensor out = empty({12}, DataType::float32());
  expect_rejected([&] { call_with_out(out); }, ErrorKind::kValueError,
                  "scale_add: out[0] 'Out': expected shape [3, 4], got [12]", good());
}

TEST_F(BadOut, OnAnotherDevice) {
  float buf[12];
  Tensor out = view(buf, {3, 4}, DataType::float32(), Device::cuda(0));
  expect_rejected([&] { call_with_out(out); }, ErrorKind::kValueError,
                  "scale_add: out[0] 'Out': expected a tensor on cpu, got one on cuda:0", good());
}

TEST_F(BadOut, NotContiguous) {
  Tensor big = empty({4, 3}, DataType::float32());
  Tensor out = view(big.data(), {3, 4}, DataType::float32(), Device::cpu(), {1, 3});
  expect_rejected([&] { call_with_out(out); }, ErrorKind::kValueError,
                  "scale_add: out[0] 'Out': expected a contiguous tensor, got strides [1, 3] in "
                  "elements ([4, 12] in bytes) for shape [3, 4]",
                  good());
}

TEST_F(BadOut, AGoodOneIsWrittenInPlace) {
  Tensor out = empty({3, 4}, DataType::float32());
  call_with_out(out);
  check_result(out);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// ---- workspace= -------------------------------------------------------------

class BadWorkspace : public BadCall {
 protected:
  void call_with_workspace(const Tensor& w) {
    CallOptions o;
    o.workspace = w;
    const Arg args[] = {Arg(x_), Arg(y_), Arg(2.0f)};
    k().call(args, o);
  }
  // From the CPU allocator: 256-byte aligned.
  Tensor arena_ = empty({1024}, DataType::uint8());
};

TEST_F(BadWorkspace, TooSmall) {
  // W is 3 x 4 float32 = 48 bytes; arenas are whole 256-byte lines.
  const Arg args[] = {Arg(x_), Arg(y_), Arg(2.0f)};
  ASSERT_EQ(k().workspace_bytes(args), 256u);
  Tensor w = view(arena_.data(), {255}, DataType::uint8());
  expect_rejected([&] { call_with_workspace(w); }, ErrorKind::kValueError,
                  "scale_add: workspace=: needs 256 bytes, got a tensor of 255 bytes", good());
}

TEST_F(BadWorkspace, Misaligned) {
  Tensor w = view(arena_.data_as<uint8_t>() + 8, {512}, DataType::uint8());
  expect_rejected([&] { call_with_workspace(w); }, ErrorKind::kValueError,
                  "scale_add: workspace=: the data pointer is not 256-byte aligned (address % 256 "
                  "= 8); kernel.empty_workspace() with the call's inputs makes an arena of the "
                  "right size and alignment",
                  good());
}

TEST_F(BadWorkspace, OnAnotherDevice) {
  Tensor w = view(arena_.data(), {256}, DataType::uint8(), Device::cuda(0));
  expect_rejected([&] { call_with_workspace(w); }, ErrorKind::kValueError,
                  "scale_add: workspace=: expected a tensor on cpu, got one on cuda:0", good());
}

TEST_F(BadWorkspace, NotContiguous) {
  Tensor w = view(arena_.data(), {2, 256}, DataType::uint8(), Device::cpu(), {512, 1});
  expect_rejected([&] { call_with_workspace(w); }, ErrorKind::kValueError,
                  "scale_add: workspace=: expected a contiguous tensor, got strides [512, 1] in "
                  "elements ([512, 1] in bytes) for shape [2, 256]",
                  good());
}

TEST_F(BadWorkspace, AGoodOneIsUsedInsteadOfThePool) {
  const auto before = cpu_pool().stats();
  Tensor w = empty({64}, DataType::float32());  // 256 bytes, any dtype will do
  call_with_workspace(w);
  EXPECT_EQ(cpu_pool().stats().leases, before.leases);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(w.data_as<float>()[i], 2.f * float(i));  // W = 2 * X
}

// ---- shapes -------------------------------------------------------------------

// `n // m` with m bound to 0 by an empty input.
TEST(BadShapes, DivisionByZeroInAShape) {
  const Expr n = symbolic("n"), m = symbolic("m");
  const auto f = prim_func("ratio")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("M", {m}, DataType::uint8())
                     .tensor("Out", {floordiv(n, m)}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < Out.shape(0); ++i) Out(i) = X(i * m);")
                     .build();
  const Kernel k = jit(f, cpu_options({2}));
  Tensor x = iota({4}, 1.f);
  Tensor m0 = empty({0}, DataType::uint8()), m2 = empty({2}, DataType::uint8());
  expect_rejected([&] { k(x, m0); }, ErrorKind::kValueError,
                  "ratio: division by zero evaluating the shapes (n = 4, m = 0)", [&] {
                    Tensor out = k(x, m2);
                    ASSERT_EQ(out.shape_str(), "[2]");
                    EXPECT_EQ(out.data_as<float>()[0], 1.f);
                    EXPECT_EQ(out.data_as<float>()[1], 3.f);
                  });
}

TEST(BadShapes, NegativeGridExtent) {
  const Expr n = symbolic("n");
  const auto f = prim_func("tail")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Out", {n - 5}, DataType::float32())
                     .grid({n - 5})
                     .body("cpu", "Out(bx) = X(bx + 5);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  Tensor x3 = iota({3}), x8 = iota({8});
  expect_rejected([&] { k(x3); }, ErrorKind::kValueError,
                  "tail: grid extent 0 = n - 5 evaluates to -2 (n = 3 from X.shape[0]); every "
                  "grid extent must be positive",
                  [&] {
                    Tensor out = k(x8);
                    ASSERT_EQ(out.shape_str(), "[3]");
                    for (int i = 0; i < 3; ++i) EXPECT_EQ(out.data_as<float>()[i], float(i + 5));
                  });
}

TEST(BadShapes, NegativeWorkspaceExtent) {
  const Expr n = symbolic("n");
  const auto f = prim_func("ws_neg")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Out", {1}, DataType::float32())
                     .tensor("W", {n - 8}, DataType::float32())
                     .body("cpu", "W(0) = X(0); W(1) = X(1); Out(0) = W(0) + W(1);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  Tensor x5 = iota({5}), x10 = iota({10}, 3.f);
  expect_rejected([&] { k(x5); }, ErrorKind::kValueError,
                  "ws_neg: workspace 'W' dimension 0 = n - 8 evaluates to -3 (n = 5 from "
                  "X.shape[0]); extents must be non-negative",
                  [&] {
                    Tensor out = k(x10);
                    EXPECT_EQ(out.data_as<float>()[0], 3.f + 4.f);
                  });
}

TEST(BadShapes, AffineSymbolSolvesToANegativeValue) {
  const Expr s = symbolic("s");
  const auto f = prim_func("shifted")
                     .tensor("X", {s + 3}, DataType::float32())
                     .tensor("Out", {s}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < s; ++i) Out(i) = X(i + 3);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  Tensor x1 = iota({1}), x5 = iota({5});
  expect_rejected([&] { k(x1); }, ErrorKind::kValueError,
                  "shifted: symbol 's' = -2 from X.shape[0] is negative; shapes must be "
                  "non-negative",
                  [&] {
                    Tensor out = k(x5);
                    ASSERT_EQ(out.shape_str(), "[2]");
                    EXPECT_EQ(out.data_as<float>()[1], 4.f);
                  });
}

TEST(BadShapes, ZeroSizeOutputsAndWorkspacesNeedNoLease) {
  // Not an error: extents of 0 with a fixed grid run, lease nothing, and
  // return empty outputs.
  const Expr n = symbolic("n");
  const auto f = prim_func("zero_ok")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Out", {n}, DataType::float32())
                     .tensor("W", {n}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < n; ++i) W(i) = X(i), Out(i) = 2 * W(i);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  Tensor x0 = empty({0}, DataType::float32());
  const auto before = cpu_pool().stats();
  Tensor out0 = k(x0);
  EXPECT_EQ(out0.shape_str(), "[0]");
  EXPECT_EQ(cpu_pool().stats().leases, before.leases);
  Tensor x3 = iota({3});
  Tensor out3 = k(x3);
  EXPECT_EQ(out3.data_as<float>()[2], 4.f);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// Shapes whose byte sizes do not fit in 64 bits, from inputs whose data is
// never read (the call fails before the launch).
TEST(BadShapes, WorkspaceBytesOverflow) {
  const Expr n = symbolic("n");
  const auto f = prim_func("huge")
                     .tensor("X", {n}, DataType::uint8())
                     .tensor("Out", {1}, DataType::int64())
                     .tensor("W", {n, n}, DataType::float64())
                     .body("cpu", "W(n - 1, n - 1) = 1; Out(0) = n + int64_t(W(n - 1, n - 1));")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  uint8_t byte = 0;
  Tensor big = view(&byte, {int64_t{1} << 40}, DataType::uint8());
  Tensor x4 = empty({4}, DataType::uint8());
  auto good = [&] {
    Tensor out = k(x4);
    EXPECT_EQ(out.data_as<int64_t>()[0], 5);
  };
  const std::string too_large =
      "huge: workspace 'W': shape [n, n] = [1099511627776, 1099511627776] of float64 has more "
      "bytes than int64 can count (n = 1099511627776 from X.shape[0])";
  expect_rejected([&] { k(big); }, ErrorKind::kValueError, too_large, good);
  const Arg args[] = {Arg(big)};
  expect_rejected([&] { k.workspace_bytes(args); }, ErrorKind::kValueError, too_large, good);
}

TEST(BadShapes, OutputBytesOverflow) {
  const Expr n = symbolic("n");
  const auto f = prim_func("huge_out")
                     .tensor("X", {n}, DataType::uint8())
                     .tensor("Out", {n, n}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < n * n; ++i) Out.data()[i] = X(i % n);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  uint8_t byte = 0;
  Tensor x2 = empty({2}, DataType::uint8());
  x2.data_as<uint8_t>()[0] = 7;
  x2.data_as<uint8_t>()[1] = 9;
  auto good = [&] {
    Tensor out = k(x2);
    ASSERT_EQ(out.shape_str(), "[2, 2]");
    EXPECT_EQ(out.data_as<float>()[3], 9.f);
  };
  Tensor bytes_overflow = view(&byte, {int64_t{1} << 31}, DataType::uint8());
  // The call checks the bytes before any allocator sees the shape.
  expect_rejected([&] { k(bytes_overflow); }, ErrorKind::kValueError,
                  "huge_out: output #0 'Out': shape [n, n] = [2147483648, 2147483648] of float32 "
                  "has more bytes than int64 can count (n = 2147483648 from X.shape[0])",
                  good);
  Tensor count_overflow = view(&byte, {int64_t{1} << 32}, DataType::uint8());
  expect_rejected([&] { k(count_overflow); }, ErrorKind::kValueError,
                  "huge_out: output #0 'Out': shape [n, n] = [4294967296, 4294967296] of float32 "
                  "has more bytes than int64 can count (n = 4294967296 from X.shape[0])",
                  good);
}

TEST(BadShapes, WorkspaceOverThePoolLimit) {
  const Expr n = symbolic("n");
  const auto f = prim_func("big_ws")
                     .tensor("X", {n}, DataType::uint8())
                     .tensor("Out", {1}, DataType::int64())
                     .tensor("W", {n}, DataType::uint8())
                     .body("cpu", "W(n - 1) = 1; Out(0) = n + W(n - 1);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  Tensor small = empty({1000}, DataType::uint8());
  Tensor large = empty({1 << 20}, DataType::uint8());
  {
    ScopedPoolLimit limit(64 * 1024);
    expect_rejected([&] { k(large); }, ErrorKind::kOutOfMemoryError,
                    "workspace pool on cpu: cannot allocate 1048576 bytes: 0 bytes reserved (0 in "
                    "use), limit 65536 bytes (set TILEJIT_WORKSPACE_LIMIT or "
                    "WorkspacePool::set_limit)",
                    [&] { EXPECT_EQ(Tensor(k(small)).data_as<int64_t>()[0], 1001); });
  }
  // Once the limit is lifted the same call succeeds.
  EXPECT_EQ(Tensor(k(large)).data_as<int64_t>()[0], (1 << 20) + 1);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// ---- scalars ----------------------------------------------------------------

TEST(BadScalars, IntegerScalarsRejectFloatsAndOutOfRangeValues) {
  const Expr n = symbolic("n");
  const auto f = prim_func("scalars")
                     .tensor("X", {n}, DataType::float32())
                     .scalar("k", DataType::int64())
                     .scalar("j", DataType::int32())
                     .tensor("Out", {n}, DataType::float32())
                     .grid({n})
                     .body("cpu", "Out(bx) = X(bx) + float(k) + float(j);")
                     .build();
  const Kernel ks = jit(f, cpu_options({3}));
  Tensor x = iota({3});
  auto good = [&] {
    Tensor out = ks(x, int64_t{10}, -2);
    EXPECT_EQ(out.data_as<float>()[2], 10.f);
  };
  expect_rejected([&] { ks(x, 2.5, 1); }, ErrorKind::kTypeError,
                  "scalars: argument #1 'k': expected int64 scalar, got a float (2.5)", good);
  expect_rejected([&] { ks(x, 1, int64_t{-2147483649}); }, ErrorKind::kValueError,
                  "scalars: argument #2 'j': value -2147483649 does not fit in int32", good);
  expect_rejected([&] { ks(x, x, 1); }, ErrorKind::kTypeError,
                  "scalars: argument #1 'k': expected int64 scalar, got a float32 tensor of "
                  "shape [3]",
                  good);
}

}  // namespace
}  // namespace tilejit::reliability

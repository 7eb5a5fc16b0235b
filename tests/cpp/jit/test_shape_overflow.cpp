// Shape arithmetic never wraps (Note [Integer semantics] in expr.cpp): every
// form of overflow in a call is a ValueError naming the kernel, the shape as
// declared and the symbol values, no lease is left held, and the next good
// call succeeds.
#include <cstdint>
#include <limits>

#include "common/test_util.h"

namespace tilejit {
namespace {

using testing::cpu_options;
using testing::cpu_pool;
using testing::expect_error;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2To32 = int64_t{1} << 32;

// A tensor whose data is never read: the calls below fail before a launch.
Tensor huge_view(int64_t extent) {
  static uint8_t byte = 0;
  const int64_t shape[] = {extent};
  return Tensor::from_blob(&byte, shape, DataType::uint8(), Device::cpu());
}

TEST(ShapeOverflow, ScalarBoundOutputDimension) {
  const Expr m = symbolic("m");
  const auto f = prim_func("k")
                     .scalar("m", DataType::int64())
                     .tensor("Y", {m * m + 5}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < m * m + 5; ++i) Y(i) = float(i);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  const std::string overflow =
      "k: output 'Y' dimension 0 = m * m + 5 overflows int64 (m = 4294967296 from scalar #0 'm')";
  expect_error([&] { k(k2To32); }, ErrorKind::kValueError, overflow);
  const Arg args[] = {Arg(k2To32)};
  expect_error([&] { k.workspace_bytes(args); }, ErrorKind::kValueError, overflow);
  // The last value that fits, and one past it: 3037000499^2 + 5 < 2^63.
  const Arg last[] = {Arg(int64_t{3037000500})};
  expect_error([&] { k.workspace_layout(last); }, ErrorKind::kValueError,
               "k: output 'Y' dimension 0 = m * m + 5 overflows int64 (m = 3037000500 from "
               "scalar #0 'm')");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  Tensor y = k(int64_t{3});
  EXPECT_EQ(y.shape_str(), "[14]");
  EXPECT_EQ(y.data_as<float>()[13], 13.f);
}

TEST(ShapeOverflow, WorkspaceOfAFourthPower) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::uint8())
                     .tensor("Out", {1}, DataType::int64())
                     .tensor("W", {n * n * n * n}, DataType::uint8())
                     .body("cpu", "W(n * n * n * n - 1) = 1; Out(0) = n * n * n * n;")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  Tensor x = empty({65536}, DataType::uint8());
  expect_error([&] { k(x); }, ErrorKind::kValueError,
               "k: workspace 'W' dimension 0 = n * n * n * n overflows int64 (n = 65536 from "
               "X.shape[0])");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  Tensor small = empty({4}, DataType::uint8());
  EXPECT_EQ(Tensor(k(small)).data_as<int64_t>()[0], 256);
}

TEST(ShapeOverflow, InputDimensions) {
  // An affine binding is solved exactly: 2 * n + INT64_MIN = 4 has the
  // solution n = 2^62 + 2 although 4 - INT64_MIN does not fit in int64.
  const Expr n = symbolic("n");
  const auto wide = prim_func("k")
                        .tensor("X", {2 * n + kMin}, DataType::uint8())
                        .tensor("Out", {floordiv(n, Expr(int64_t{1} << 62))}, DataType::int64())
                        .body("cpu", "Out(0) = n;")
                        .build();
  const Kernel kw = jit(wide, cpu_options({1}));
  Tensor out = kw(huge_view(4));
  EXPECT_EQ(out.shape_str(), "[1]");
  EXPECT_EQ(out.data_as<int64_t>()[0], (int64_t{1} << 62) + 2);
  // And where the solution is past int64.
  const auto past = prim_func("k")
                        .tensor("X", {n - kMax}, DataType::uint8())
                        .tensor("Out", {n}, DataType::uint8())
                        .body("cpu", "")
                        .build();
  const Kernel kp = jit(past, cpu_options({1}));
  expect_error([&] { kp(huge_view(3)); }, ErrorKind::kValueError,
               "k: argument #0 'X': dimension 0 is 3, which is n - 9223372036854775807 only for "
               "n = 9223372036854775810, which overflows int64");
  // A dimension checked against a computed value that overflows.
  const Expr m = symbolic("m");
  const auto checked = prim_func("k")
                           .scalar("m", DataType::int64())
                           .tensor("X", {m * m}, DataType::uint8())
                           .tensor("Out", {1}, DataType::uint8())
                           .body("cpu", "Out(0) = 7;")
                           .build();
  const Kernel kc = jit(checked, cpu_options({2}));
  expect_error([&] { kc(k2To32, huge_view(0)); }, ErrorKind::kValueError,
               "k: argument #1 'X': dimension 0 = m * m overflows int64 (m = 4294967296 from "
               "scalar #0 'm')");
  EXPECT_EQ(Tensor(kc(int64_t{3}, huge_view(9))).data_as<uint8_t>()[0], 7);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(ShapeOverflow, GridAndSharedMemory) {
  const Expr m = symbolic("m");
  const auto f = prim_func("k")
                     .scalar("m", DataType::int64())
                     .tensor("Out", {m}, DataType::int32())
                     .grid({m, m * m * 2})
                     .body("cpu", "if (by == 0) Out(bx) = int32_t(bx);")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  // m = 2^31: the output (2^33 bytes) is never allocated; the grid fails
  // first, as every shape is evaluated before any allocation.
  expect_error([&] { k(int64_t{1} << 31); }, ErrorKind::kValueError,
               "k: grid extent 1 = m * m * 2 overflows int64 (m = 2147483648 from scalar #0 'm')");
  EXPECT_EQ(Tensor(k(int64_t{3})).data_as<int32_t>()[2], 2);

  const auto smem = prim_func("k")
                        .scalar("m", DataType::int64())
                        .tensor("Out", {1}, DataType::int32())
                        .dynamic_smem(m * m)
                        .body("cpu", "Out(0) = 1;")
                        .build();
  const Kernel ks = jit(smem, cpu_options({1}));
  expect_error([&] { ks(k2To32); }, ErrorKind::kValueError,
               "k: the dynamic shared memory size = m * m overflows int64 (m = 4294967296 from "
               "scalar #0 'm')");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(ShapeOverflow, BytesThatDoNotFitThoughTheElementsDo) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("n", DataType::int64())
                     .tensor("Out", {n}, DataType::float64())
                     .body("cpu", "for (int64_t i = 0; i < n; ++i) Out(i) = 2.0 * i;")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  // 2^60 elements fit; 2^63 bytes do not. No allocator is asked.
  expect_error([&] { k(int64_t{1} << 60); }, ErrorKind::kValueError,
               "k: output #0 'Out': shape [n] = [1152921504606846976] of float64 has more bytes "
               "than int64 can count (n = 1152921504606846976 from scalar #0 'n')");
  EXPECT_EQ(Tensor(k(int64_t{4})).data_as<double>()[3], 6.0);

  const auto ws = prim_func("k")
                      .scalar("n", DataType::int64())
                      .tensor("Out", {1}, DataType::int64())
                      .tensor("W", {n, 2}, DataType::float32())
                      .body("cpu", "W(n - 1, 1) = 1; Out(0) = n;")
                      .build();
  const Kernel kw = jit(ws, cpu_options({1}, {2}));
  const Arg args[] = {Arg(int64_t{1} << 60)};
  expect_error([&] { kw.workspace_bytes(args); }, ErrorKind::kValueError,
               "k: workspace 'W': shape [n, 2] = [1152921504606846976, 2] of float32 has more "
               "bytes than int64 can count (n = 1152921504606846976 from scalar #0 'n')");

  // Each workspace fits; the arena holding both does not.
  const auto arena = prim_func("k")
                         .scalar("n", DataType::int64())
                         .tensor("Out", {1}, DataType::int64())
                         .tensor("A", {n}, DataType::uint8())
                         .tensor("B", {n}, DataType::uint8())
                         .body("cpu", "Out(0) = n;")
                         .build();
  const Kernel ka = jit(arena, cpu_options({1}, {2, 3}));
  expect_error([&] { ka(int64_t{1} << 62); }, ErrorKind::kValueError,
               "k: the workspace arena has more bytes than int64 can count: workspace 'B' of "
               "4611686018427387904 bytes (shape [n] = [4611686018427387904] of uint8) starts at "
               "byte 4611686018427387904 (n = 4611686018427387904 from scalar #0 'n')");
  // 2^62 - 256 each: both fit, 256-aligned, with room for the rounding.
  const Arg fits[] = {Arg((int64_t{1} << 62) - 256)};
  EXPECT_EQ(ka.workspace_bytes(fits), (size_t{1} << 63) - 512);
  EXPECT_EQ(Tensor(ka(int64_t{5})).data_as<int64_t>()[0], 5);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(ShapeOverflow, ExtentsPastTheFastBoundAreCheckedExactly) {
  // Below plan.small_extents no output can overflow: 2^30 for two float32
  // extents (2^30 * 2^30 * 4 < 2^63); at or past it the exact check runs,
  // and errs only where the bytes do not fit.
  const Expr m = symbolic("m"), n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("m", DataType::int64())
                     .scalar("n", DataType::int64())
                     .tensor("Out", {m, n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({2}));
  EXPECT_EQ(k.plan().small_extents, uint64_t{1} << 30);
  const Arg fits[] = {Arg(int64_t{1} << 30), Arg((int64_t{1} << 31) - 1)};
  EXPECT_EQ(k.workspace_bytes(fits), 0u);  // 2^63 - 2^32 bytes: no error
  const Arg past[] = {Arg(int64_t{1} << 30), Arg(int64_t{1} << 31)};
  expect_error([&] { k.workspace_bytes(past); }, ErrorKind::kValueError,
               "k: output #0 'Out': shape [m, n] = [1073741824, 2147483648] of float32 has more "
               "bytes than int64 can count (m = 1073741824 from scalar #0 'm', n = 2147483648 "
               "from scalar #1 'n')");
  // The bound follows the largest rank and dtype among the outputs.
  const auto rank4 = prim_func("k4")
                         .scalar("m", DataType::int64())
                         .tensor("Out", {m, m, m, m}, DataType::bfloat16())
                         .body("cpu", "")
                         .build();
  EXPECT_EQ(jit(rank4, cpu_options({1})).plan().small_extents, uint64_t{1} << 15);
  const auto none = prim_func("k0").scalar("m", DataType::int64()).body("cpu", "").build();
  EXPECT_EQ(jit(none, cpu_options({})).plan().small_extents, uint64_t{1} << 62);
}

TEST(ShapeOverflow, OnlyInTheSimplifiedFormIsNoError) {
  // simplify() expands (m - n) * (m + n) + 1 to m * m - n * n + 1, whose
  // m * m overflows at m = n = 2^32; the shape as declared is 1.
  const Expr m = symbolic("m"), n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("m", DataType::int64())
                     .scalar("n", DataType::int64())
                     .tensor("Out", {(m - n) * (m + n) + 1}, DataType::int32())
                     .body("cpu", "Out(0) = 5;")
                     .build();
  const Kernel k = jit(f, cpu_options({2}));
  Tensor out = k(k2To32, k2To32);
  EXPECT_EQ(out.shape_str(), "[1]");
  EXPECT_EQ(out.data_as<int32_t>()[0], 5);
  // Where the declared form overflows too, it is named.
  expect_error([&] { k(k2To32, int64_t{0}); }, ErrorKind::kValueError,
               "k: output 'Out' dimension 0 = (m - n) * (m + n) + 1 overflows int64 (m = "
               "4294967296 from scalar #0 'm', n = 0 from scalar #1 'n')");
}

TEST(ShapeOverflow, TheFirstFailingShapeIsReported) {
  // Shapes are reported in the program's order: checks, outputs,
  // workspaces, grid; a division by zero keeps its own message.
  const Expr m = symbolic("m"), d = symbolic("d");
  const auto f = prim_func("k")
                     .scalar("m", DataType::int64())
                     .scalar("d", DataType::int64())
                     .tensor("Out", {floordiv(m, d)}, DataType::int32())
                     .tensor("W", {m * m}, DataType::uint8())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({2}, {3}));
  expect_error([&] { k(k2To32, int64_t{0}); }, ErrorKind::kValueError,
               "k: division by zero evaluating the shapes (m = 4294967296, d = 0)");
  expect_error([&] { k(k2To32, int64_t{1} << 40); }, ErrorKind::kValueError,
               "k: workspace 'W' dimension 0 = m * m overflows int64 (m = 4294967296 from "
               "scalar #0 'm')");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

}  // namespace
}  // namespace tilejit

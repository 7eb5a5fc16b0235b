// Bugs the fuzz target (tests/fuzz/fuzz_signature.cpp) found, each as the
// smallest call through the CPU backend that showed it (each was undefined
// behaviour or a crash before its fix), kept as regression tests.
#include <cstdint>
#include <limits>

#include "reliability/reliability_support.h"

namespace tilejit::reliability {
namespace {

// call_errors.cpp, symbol_values(): the grid (and output / workspace shapes)
// are printed as declared, but a symbol that simplification removed (m * 0)
// is not in plan.symbols, and the lookup loop runs off its end.
TEST(FuzzFindings, GridThatSimplifiesToZeroNamesNoMissingSymbol) {
  const Expr n = symbolic("n"), m = symbolic("m");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .grid({m * 0})
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({}));
  Tensor x = empty({4}, DataType::float32());
  EXPECT_EQ(error_message([&] { k(x); }, ErrorKind::kValueError),
            "k: grid extent 0 = m * 0 evaluates to 0; every grid extent must be positive");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// kernel.cpp, bind_inputs(): `extent - b.offset` overflows int64 for an
// affine extent with a large negative offset (signed overflow: undefined).
// Solved exactly since: the symbol would be 2^63 + 3, past int64.
TEST(FuzzFindings, AffineOffsetNearInt64MinIsAValueError) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n + std::numeric_limits<int64_t>::min()}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  Tensor x = empty({3}, DataType::float32());
  EXPECT_EQ(error_message([&] { k(x); }, ErrorKind::kValueError),
            "k: argument #0 'X': dimension 0 is 3, which is n + -9223372036854775808 only for "
            "n = 9223372036854775811, which overflows int64");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// kernel.cpp, layout_workspaces(): the arena size is rounded up to 256
// bytes without an overflow check. A workspace of 2^64 - 128 bytes (here
// from a scalar) rounds to 0: no arena is leased, the body gets W ==
// nullptr and writes through it (SIGSEGV).
TEST(FuzzFindings, WorkspaceJustUnder2To64BytesIsTooLarge) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("n", DataType::int64())
                     .tensor("Out", {1}, DataType::int32())
                     .tensor("W", {n, 16}, DataType::float64())
                     .body("cpu", "W(n - 1, 15) = 1; Out(0) = 1;")
                     .build();
  const Kernel k = jit(f, cpu_options({1}, {2}));
  const int64_t n_huge = (int64_t{1} << 57) - 1;  // 16 * 8 * n = 2^64 - 128 bytes
  const Arg args[] = {Arg(n_huge)};
  const std::string too_large =
      "k: workspace 'W': shape [n, 16] = [144115188075855871, 16] of float64 has more bytes "
      "than int64 can count (n = 144115188075855871 from scalar #0 'n')";
  EXPECT_EQ(error_message([&] { k.workspace_bytes(args); }, ErrorKind::kValueError), too_large);
  EXPECT_EQ(error_message([&] { k(n_huge); }, ErrorKind::kValueError), too_large);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// tensor.cpp, Tensor::from_blob() and contiguous_strides(): the element
// count and the row-major strides are int64 products without an overflow
// check (signed overflow: undefined). The strides multiply every extent, so
// a tensor with a zero extent overflows there too; the CPU TensorAllocator
// checks its element count first, but that count is 0 for such a shape.
TEST(FuzzFindings, TensorWhoseExtentsOverflowIsAValueError) {
  float x = 0;
  const int64_t big = int64_t{1} << 40;
  EXPECT_EQ(error_message([&] { view(&x, {big, big}, DataType::float32()); }, ErrorKind::kValueError),
            "tensor of shape [1099511627776, 1099511627776] has more elements than int64 can "
            "count");
  EXPECT_EQ(error_message([&] { view(&x, {0, big, big}, DataType::float32()); },
                     ErrorKind::kValueError),
            "tensor of shape [0, 1099511627776, 1099511627776] has more elements than int64 can "
            "count");
  // The same through a call: an output [m, n, n] with m = 0 (its bytes are
  // 0, so from_blob, in the allocator, is what refuses it; the call names
  // the output).
  const Expr m = symbolic("m"), n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("M", {m}, DataType::uint8())
                     .tensor("N", {n}, DataType::uint8())
                     .tensor("Out", {m, n, n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({2}));
  uint8_t byte = 0;
  Tensor m0 = view(&byte, {0}, DataType::uint8()), nbig = view(&byte, {big}, DataType::uint8());
  EXPECT_EQ(error_message([&] { k(m0, nbig); }, ErrorKind::kValueError),
            "k: output #0 'Out': tensor of shape [0, 1099511627776, 1099511627776] has more "
            "elements than int64 can count");
}

}  // namespace
}  // namespace tilejit::reliability

// The CPU device library (device/cpu/tilejit/cpu/*.h), included directly and
// checked against naive loops: gemm in every layout and dtype, with edge
// tiles; copies and fills with bounds; reductions of each kind; atomics
// under contention. This file is built twice: for the host's own ISA
// (-march=native, as kernels are) and for baseline x86-64, so that both the
// AVX-512 and the narrow-vector paths run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tilejit/cpu/atomic.h"
#include "tilejit/cpu/copy.h"
#include "tilejit/cpu/gemm.h"
#include "tilejit/cpu/reduce.h"

namespace tilejit::cpu {
namespace {

// Values exact in every dtype here (multiples of 1/8 in [-4, 4]), so that
// inputs convert without rounding and only the accumulation order differs.
template <typename T>
std::vector<T> random_tile(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-32, 32);
  std::vector<T> v(n);
  for (auto& x : v) x = convert<T>(float(d(gen)) / 8.f);
  return v;
}

// --- gemm ------------------------------------------------------------------

template <int M, int N, int K, bool kTA, bool kTB, typename TA, typename TB, typename TC>
void check_gemm(bool clear) {
  SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K << " ta=" << kTA
                                    << " tb=" << kTB << " clear=" << clear);
  const auto a = random_tile<TA>(size_t(M * K), 1);
  const auto b = random_tile<TB>(size_t(K * N), 2);
  auto c = random_tile<TC>(size_t(M * N), 3);
  std::vector<double> want(size_t(M * N));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double s = clear ? 0.0 : double(to_float(c[size_t(i * N + j)]));
      for (int k = 0; k < K; ++k) {
        const float x = to_float(kTA ? a[size_t(k * M + i)] : a[size_t(i * K + k)]);
        const float y = to_float(kTB ? b[size_t(j * K + k)] : b[size_t(k * N + j)]);
        s += double(x) * double(y);
      }
      want[size_t(i * N + j)] = s;
    }
  }
  gemm<M, N, K, kTA, kTB>(a.data(), b.data(), c.data(), clear);
  // Products of multiples of 1/8 summed in f32 are exact here (|sum| < 2^15
  // at 1/64 resolution fits 24 bits) unless the result rounds to a 16-bit C.
  const double tol = std::is_same_v<TC, float> ? 0.0 : 1e-2;
  for (int i = 0; i < M * N; ++i) {
    const double got = double(to_float(c[size_t(i)]));
    ASSERT_LE(std::abs(got - want[size_t(i)]), tol * std::max(1.0, std::abs(want[size_t(i)])))
        << "at " << i / N << "," << i % N << ": " << got << " vs " << want[size_t(i)];
  }
}

template <int M, int N, int K, typename TA, typename TB, typename TC>
void check_gemm_layouts() {
  for (bool clear : {true, false}) {
    check_gemm<M, N, K, false, false, TA, TB, TC>(clear);
    check_gemm<M, N, K, true, false, TA, TB, TC>(clear);
    check_gemm<M, N, K, false, true, TA, TB, TC>(clear);
    check_gemm<M, N, K, true, true, TA, TB, TC>(clear);
  }
}

TEST(CpuGemm, F32WholeBlocks) {
  check_gemm_layouts<128, 128, 64, float, float, float>();
  check_gemm_layouts<64, 64, 32, float, float, float>();
}

TEST(CpuGemm, F32EdgeBlocks) {
  // Rows not a multiple of the register block, columns not of a vector, and
  // the degenerate 1 x 1 x 1.
  check_gemm_layouts<13, 37, 5, float, float, float>();
  check_gemm_layouts<9, 48, 7, float, float, float>();
  check_gemm_layouts<1, 1, 1, float, float, float>();
  check_gemm_layouts<3, 20, 16, float, float, float>();
  check_gemm_layouts<16, 16, 16, float, float, float>();
}

TEST(CpuGemm, HalfInputsAccumulateInF32) {
  check_gemm_layouts<64, 64, 32, bfloat16, bfloat16, float>();
  check_gemm_layouts<64, 64, 32, float16, float16, float>();
  check_gemm_layouts<13, 37, 17, bfloat16, bfloat16, float>();
  check_gemm_layouts<13, 37, 17, float16, float16, float>();
  check_gemm_layouts<8, 32, 8, bfloat16, float, float>();
}

TEST(CpuGemm, HalfAccumulator) {
  check_gemm_layouts<16, 24, 8, float16, float16, float16>();
  check_gemm_layouts<16, 24, 8, bfloat16, bfloat16, bfloat16>();
}

// Operands that are slices of wider tiles: A = As[0:16, 8:24] of a 16 x 32
// tile, B = Bs[0:16, 0:40] of 16 x 48, C = Cs[0:16, 4:44] of 16 x 64.
TEST(CpuGemm, SlicesOfWiderTiles) {
  const auto as = random_tile<float>(16 * 32, 4);
  const auto bs = random_tile<float>(16 * 48, 5);
  std::vector<float> cs(16 * 64, 7.f);
  gemm<16, 40, 16, false, false, 32, 48, 64>(as.data() + 8, bs.data(), cs.data() + 4, true);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 64; ++j) {
      float want = 7.f;
      if (j >= 4 && j < 44) {
        want = 0.f;
        for (int k = 0; k < 16; ++k) want += as[size_t(i * 32 + 8 + k)] * bs[size_t(k * 48 + j - 4)];
      }
      ASSERT_EQ(cs[size_t(i * 64 + j)], want) << i << "," << j;
    }
  }
}

// --- copy and fill -----------------------------------------------------------

constexpr float kUntouched = -99.f;

// A 4 x 8 tile loaded from (row0, col0) of a 10 x 13 matrix of i * 100 + j.
void check_load(int64_t row0, int64_t col0) {
  SCOPED_TRACE(::testing::Message() << "at " << row0 << "," << col0);
  std::vector<float> m(10 * 13);
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 13; ++j) m[size_t(i * 13 + j)] = float(i * 100 + j);
  }
  std::vector<bfloat16> tile(4 * 8, bfloat16(kUntouched));
  copy<4, 8>(tile_rect<4, 8>(tile.data(), 0, 8), rect_in<const float>(m.data(), 13, 10, 13, row0, col0));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; ++c) {
      const int64_t i = row0 + r, j = col0 + c;
      const bool inside = i >= 0 && i < 10 && j >= 0 && j < 13;
      const float want = inside ? float(bfloat16(float(i * 100 + j))) : 0.f;
      EXPECT_EQ(float(tile[size_t(r * 8 + c)]), want) << r << "," << c;
    }
  }
}

TEST(CpuCopy, LoadReadsZeroOutsideTheTensor) {
  check_load(0, 0);     // whole
  check_load(8, 10);    // bottom-right corner: 2 x 3 inside
  check_load(-2, -5);   // top-left, before the start
  check_load(9, -7);    // one row, one column inside
  check_load(10, 0);    // nothing inside
  check_load(0, 13);
}

// A 4 x 8 tile of 1000 + r * 8 + c stored at (row0, col0) of a 10 x 13
// matrix: only inside elements are written.
void check_store(int64_t row0, int64_t col0) {
  SCOPED_TRACE(::testing::Message() << "at " << row0 << "," << col0);
  std::vector<float> tile(4 * 8);
  for (int i = 0; i < 32; ++i) tile[size_t(i)] = float(1000 + i);
  // One extra element on each side of the matrix: nothing may land there.
  std::vector<float16> storage(10 * 13 + 2, float16(kUntouched));
  float16* m = storage.data() + 1;
  copy<4, 8>(rect_in(m, 13, 10, 13, row0, col0), tile_rect<4, 8>(static_cast<const float*>(tile.data()), 0, 8));
  EXPECT_EQ(float(storage.front()), kUntouched);
  EXPECT_EQ(float(storage.back()), kUntouched);
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 13; ++j) {
      const int64_t r = i - row0, c = j - col0;
      const bool covered = r >= 0 && r < 4 && c >= 0 && c < 8;
      EXPECT_EQ(float(m[i * 13 + j]), covered ? float(1000 + r * 8 + c) : kUntouched) << i << "," << j;
    }
  }
}

TEST(CpuCopy, StoreWritesOnlyInsideTheTensor) {
  check_store(0, 0);
  check_store(8, 10);
  check_store(-2, -5);
  check_store(10, 13);
}

// Between two partial rectangles: dst exists on [1, 3) x [2, 7), src on
// [0, 2) x [4, 8); dst's existing elements outside src's get 0.
TEST(CpuCopy, BothSidesBounded) {
  std::vector<int32_t> src(4 * 8), dst(4 * 8, -1);
  for (int i = 0; i < 32; ++i) src[size_t(i)] = i;
  Rect<const int32_t> s{src.data(), 0, 8, 0, 2, 4, 8};
  Rect<int32_t> d{dst.data(), 0, 8, 1, 3, 2, 7};
  copy<4, 8>(d, s);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; ++c) {
      int want = -1;
      if (r >= 1 && r < 3 && c >= 2 && c < 7) want = (r < 2 && c >= 4) ? r * 8 + c : 0;
      EXPECT_EQ(dst[size_t(r * 8 + c)], want) << r << "," << c;
    }
  }
}

TEST(CpuCopy, EmptyRectReadsAsZeros) {
  std::vector<float> m(16, 5.f), tile(16, kUntouched);
  copy<4, 4>(tile_rect<4, 4>(tile.data(), 0, 4), empty_rect(rect_in<const float>(m.data(), 4, 4, 4, 0, 0)));
  for (float x : tile) EXPECT_EQ(x, 0.f);
  copy<4, 4>(empty_rect(rect_in(m.data(), 4, 4, 4, 0, 0)), tile_rect<4, 4>(static_cast<const float*>(tile.data()), 0, 4));
  for (float x : m) EXPECT_EQ(x, 5.f);
}

TEST(CpuFill, WholeAndPartial) {
  std::vector<float> tile(4 * 8, kUntouched);
  fill<2, 4>(tile_rect<2, 4>(tile.data(), 9, 8), 3);  // rows 1-2, cols 1-4 of the 4 x 8
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; ++c) {
      const bool in = r >= 1 && r < 3 && c >= 1 && c < 5;
      EXPECT_EQ(tile[size_t(r * 8 + c)], in ? 3.f : kUntouched) << r << "," << c;
    }
  }
  std::vector<bfloat16> m(3 * 5, bfloat16(kUntouched));
  fill<4, 4>(rect_in(m.data(), 5, 3, 5, 1, 3), 1.5);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(float(m[size_t(i * 5 + j)]), (i >= 1 && j >= 3) ? 1.5f : kUntouched) << i << "," << j;
    }
  }
}

// --- reductions --------------------------------------------------------------

template <ReduceKind kKind>
double naive(double acc, double x) {
  switch (kKind) {
    case ReduceKind::kSum: return acc + x;
    case ReduceKind::kMax: return std::max(acc, x);
    case ReduceKind::kMin: return std::min(acc, x);
    case ReduceKind::kAbsSum: return acc + std::abs(x);
    case ReduceKind::kAbsMax: return std::max(acc, std::abs(x));
  }
  return 0;
}

template <ReduceKind kKind>
double naive_identity() {
  if (kKind == ReduceKind::kMax) return -INFINITY;
  if (kKind == ReduceKind::kMin) return INFINITY;
  return 0;
}

template <ReduceKind kKind, int R, int C, int kDim, typename S>
void check_reduce() {
  SCOPED_TRACE(::testing::Message() << "kind " << int(kKind) << " " << R << "x" << C << " dim "
                                    << kDim);
  const auto src = random_tile<S>(size_t(R * C), 11);
  constexpr int n = kDim == 1 ? R : C;
  for (bool clear : {true, false}) {
    std::vector<float> dst(n), want(n);
    for (int i = 0; i < n; ++i) dst[size_t(i)] = float(i % 5) - 2.f;
    for (int i = 0; i < n; ++i) {
      double acc = naive_identity<kKind>();
      for (int k = 0; k < (kDim == 1 ? C : R); ++k) {
        const S x = kDim == 1 ? src[size_t(i * C + k)] : src[size_t(k * C + i)];
        acc = naive<kKind>(acc, double(to_float(x)));
      }
      const double old = double(dst[size_t(i)]);
      double kept = acc;  // without clear, dst's value combines as it is (not as |dst|)
      if (kKind == ReduceKind::kAbsSum) kept = old + acc;
      else if (kKind == ReduceKind::kAbsMax) kept = std::max(old, acc);
      else kept = naive<kKind>(old, acc);
      want[size_t(i)] = float(clear ? acc : kept);
    }
    reduce<kKind, R, C, kDim>(src.data(), dst.data(), clear);
    for (int i = 0; i < n; ++i) EXPECT_EQ(dst[size_t(i)], want[size_t(i)]) << i << " clear=" << clear;
  }
}

template <ReduceKind kKind>
void check_reduce_kind() {
  check_reduce<kKind, 8, 64, 1, float>();
  check_reduce<kKind, 5, 37, 1, float>();
  check_reduce<kKind, 5, 37, 0, float>();
  check_reduce<kKind, 16, 48, 0, float>();
  check_reduce<kKind, 3, 40, 1, bfloat16>();
  check_reduce<kKind, 1, 7, 1, float16>();  // a 1-D source
}

TEST(CpuReduce, Sum) { check_reduce_kind<ReduceKind::kSum>(); }
TEST(CpuReduce, Max) { check_reduce_kind<ReduceKind::kMax>(); }
TEST(CpuReduce, Min) { check_reduce_kind<ReduceKind::kMin>(); }
TEST(CpuReduce, AbsSum) { check_reduce_kind<ReduceKind::kAbsSum>(); }
TEST(CpuReduce, AbsMax) { check_reduce_kind<ReduceKind::kAbsMax>(); }

TEST(CpuReduce, ClearStartsFromTheIdentity) {
  const float src[2][3] = {{-5.f, -7.f, -6.f}, {1.f, 2.f, 3.f}};
  float dst[2] = {100.f, 100.f};
  reduce<ReduceKind::kMax, 2, 3, 1>(&src[0][0], dst, true);
  EXPECT_EQ(dst[0], -5.f);  // not 0, not the old 100
  EXPECT_EQ(dst[1], 3.f);
  reduce<ReduceKind::kMax, 2, 3, 1>(&src[0][0], dst, false);
  EXPECT_EQ(dst[0], -5.f);
  float lo[2] = {-100.f, 0.f};
  reduce<ReduceKind::kMin, 2, 3, 1>(&src[0][0], lo, false);
  EXPECT_EQ(lo[0], -100.f);
  EXPECT_EQ(lo[1], 0.f);
}

// Note [NaN in max and min]: a NaN first, in the middle or last of one
// output's elements makes that output NaN, in the vector lanes and in the
// scalar tail alike; the other outputs keep their values. Without clear, a
// NaN already in dst stays.
template <ReduceKind kKind, int R, int C, int kDim, typename S>
void check_nan_wins() {
  constexpr int n = kDim == 1 ? R : C, len = kDim == 1 ? C : R;
  constexpr int hit = n / 2;  // the output whose elements hold the NaN
  for (int at : {0, len / 2, len - 1}) {
    SCOPED_TRACE(::testing::Message() << "kind " << int(kKind) << " " << R << "x" << C << " dim "
                                      << kDim << " NaN at " << at);
    auto src = random_tile<S>(size_t(R * C), 17);
    src[size_t(kDim == 1 ? hit * C + at : at * C + hit)] = convert<S>(NAN);
    std::vector<float> dst(n, 0.f);
    reduce<kKind, R, C, kDim>(src.data(), dst.data(), true);
    for (int i = 0; i < n; ++i) {
      if (i == hit) {
        EXPECT_TRUE(std::isnan(dst[size_t(i)])) << dst[size_t(i)];
        continue;
      }
      double want = naive_identity<kKind>();
      for (int k = 0; k < len; ++k) {
        want = naive<kKind>(want, double(to_float(src[size_t(kDim == 1 ? i * C + k : k * C + i)])));
      }
      EXPECT_EQ(dst[size_t(i)], float(want)) << i;
    }
  }
  std::vector<float> dst(n, 0.f);
  dst[0] = NAN;
  reduce<kKind, R, C, kDim>(random_tile<S>(size_t(R * C), 18).data(), dst.data(), false);
  EXPECT_TRUE(std::isnan(dst[0])) << dst[0];
  EXPECT_FALSE(std::isnan(dst[1])) << dst[1];
}

template <ReduceKind kKind>
void check_nan_wins_kind() {
  check_nan_wins<kKind, 8, 64, 1, float>();   // vector lanes only
  check_nan_wins<kKind, 5, 37, 1, float>();   // lanes and a scalar tail
  check_nan_wins<kKind, 6, 7, 1, float>();    // too short for lanes
  check_nan_wins<kKind, 37, 5, 0, float>();
  check_nan_wins<kKind, 16, 48, 0, float>();
  check_nan_wins<kKind, 3, 40, 1, bfloat16>();
  check_nan_wins<kKind, 40, 3, 0, float16>();
}

TEST(CpuReduce, MaxKeepsNaN) { check_nan_wins_kind<ReduceKind::kMax>(); }
TEST(CpuReduce, MinKeepsNaN) { check_nan_wins_kind<ReduceKind::kMin>(); }
TEST(CpuReduce, AbsMaxKeepsNaN) { check_nan_wins_kind<ReduceKind::kAbsMax>(); }

// The scalar T.max / T.min the generated code calls.
TEST(CpuMaximum, NaNFromEitherSide) {
  EXPECT_TRUE(std::isnan(maximum(NAN, 1.f)));
  EXPECT_TRUE(std::isnan(maximum(1.f, NAN)));
  EXPECT_TRUE(std::isnan(minimum(double(NAN), 1.0)));
  EXPECT_TRUE(std::isnan(minimum(1.0, double(NAN))));
  EXPECT_EQ(maximum(-INFINITY, 2.f), 2.f);
  EXPECT_EQ(minimum(-INFINITY, 2.f), -INFINITY);
  EXPECT_EQ(maximum<int64_t>(-3, 4), 4);
  EXPECT_EQ(minimum<int64_t>(-3, 4), -3);
}

// --- atomics -----------------------------------------------------------------

template <typename T>
T contended_sum(int threads, int adds, float each) {
  T total = convert<T>(0.f);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = 0; i < adds; ++i) atomic_add(&total, each);
    });
  }
  for (auto& th : pool) th.join();
  return total;
}

TEST(CpuAtomic, ConcurrentAddsAllLand) {
  EXPECT_EQ(contended_sum<float>(4, 20000, 1.f), 80000.f);
  EXPECT_EQ(contended_sum<double>(4, 20000, 0.5f), 40000.0);
  EXPECT_EQ(contended_sum<int32_t>(4, 20000, 3.f), 240000);
  EXPECT_EQ(contended_sum<int64_t>(4, 20000, 1.f), 80000);
  EXPECT_EQ(float(contended_sum<bfloat16>(4, 32, 1.f)), 128.f);  // exact in bf16
  EXPECT_EQ(float(contended_sum<float16>(4, 256, 1.f)), 1024.f);
}

TEST(CpuAtomic, RectAddsOnlyInside) {
  std::vector<float> m(3 * 5, 1.f);
  const float tile[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  atomic_add<2, 4>(rect_in(m.data(), 5, 3, 5, 2, 3), &tile[0][0]);  // (2,3), (2,4) inside
  for (int i = 0; i < 15; ++i) {
    const float want = i == 13 ? 2.f : i == 14 ? 3.f : 1.f;
    EXPECT_EQ(m[size_t(i)], want) << i;
  }
}

}  // namespace
}  // namespace tilejit::cpu

// Running CPU kernels: block indices over 3-D grids, scalars, the body's
// `return`, exceptions, bfloat16/float16 conversions, the thread count, and
// concurrent launches from many threads.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "backend/cpu_test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::cpu::testing {
namespace {

using ir::Expr;

// Out[z, y, x, :] = (bx, by, bz, runs of this block, grid_dim.x * 100 + ...).
ir::PrimFunc block_index_func() {
  Expr x = Expr::var("x"), y = Expr::var("y"), z = Expr::var("z");
  return ir::prim_func("block_index")
      .tensor("Out", {z, y, x, 5}, DataType::int64())
      .grid({x, y, z})
      .body("cpu",
            "Out(bz, by, bx, 0) = bx;\n"
            "Out(bz, by, bx, 1) = by;\n"
            "Out(bz, by, bx, 2) = bz;\n"
            "Out(bz, by, bx, 3) += 1;\n"
            "Out(bz, by, bx, 4) = grid_dim.x * 10000 + grid_dim.y * 100 + grid_dim.z;\n")
      .build();
}

void check_block_indices(runtime::Module& m, int64_t gx, int64_t gy, int64_t gz) {
  std::vector<int64_t> out(size_t(gx * gy * gz * 5), 0);
  launch(m, {out.data()}, {gx, gy, gz}, {gx, gy, gz});
  for (int64_t k = 0; k < gz; ++k) {
    for (int64_t j = 0; j < gy; ++j) {
      for (int64_t i = 0; i < gx; ++i) {
        const int64_t* e = &out[size_t(((k * gy + j) * gx + i) * 5)];
        ASSERT_EQ(e[0], i) << i << "," << j << "," << k;
        ASSERT_EQ(e[1], j) << i << "," << j << "," << k;
        ASSERT_EQ(e[2], k) << i << "," << j << "," << k;
        ASSERT_EQ(e[3], 1) << "block ran " << e[3] << " times: " << i << "," << j << "," << k;
        ASSERT_EQ(e[4], gx * 10000 + gy * 100 + gz);
      }
    }
  }
}

TEST(CpuLaunch, EveryBlockOfA3DGridRunsOnce) {
  auto m = build(block_index_func(), {"x", "y", "z"});
  ScopedThreads threads(4);  // several workers even on a small machine
  check_block_indices(*m, 1, 1, 1);
  check_block_indices(*m, 7, 1, 1);
  check_block_indices(*m, 5, 3, 7);
  check_block_indices(*m, 37, 11, 3);
  check_block_indices(*m, 1, 1, 19);
  std::vector<int64_t> none;
  launch(*m, {none.data()}, {0, 4, 4}, {0, 4, 4});  // no blocks, nothing runs
}

TEST(CpuLaunch, OneThreadRunsBlocksInOrderOnTheCaller) {
  ScopedThreads threads(1);
  EXPECT_EQ(num_threads(), 1);
  // A static counter in the body numbers the blocks in the order they run.
  ir::PrimFunc f = ir::prim_func("order")
                       .tensor("Seq", {3, 4, 5}, DataType::int64())
                       .grid({5, 4, 3})
                       .body("cpu",
                             "static int64_t counter = 0;\n"
                             "Seq(bz, by, bx) = counter++;\n")
                       .build();
  auto m = build(f);
  std::vector<int64_t> seq(60, -1);
  launch(*m, {seq.data()}, {}, {5, 4, 3});
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(seq[size_t(i)], i) << "x must vary fastest";
  check_block_indices(*build(block_index_func(), {"x", "y", "z"}), 6, 5, 4);
}

TEST(CpuLaunch, NumThreads) {
  const int before = num_threads();
  EXPECT_GE(before, 1);
  {
    ScopedThreads threads(3);
    EXPECT_EQ(num_threads(), 3);
    set_num_threads(2);  // while idle, twice in a row
    EXPECT_EQ(num_threads(), 2);
  }
  EXPECT_EQ(num_threads(), before);
  try {
    set_num_threads(0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValueError);
    EXPECT_EQ(e.message(), "set_num_threads: 0 threads; expected at least 1");
  }
  EXPECT_EQ(num_threads(), before);
}

TEST(CpuLaunch, NumThreadsFromTheEnvironment) {
  EXPECT_EQ(parse_num_threads(nullptr, 6), 6);
  EXPECT_EQ(parse_num_threads("", 6), 6);
  EXPECT_EQ(parse_num_threads("3", 6), 3);
  for (const char* bad : {"0", "-2", "4x", "many", "99999999999"}) {
    try {
      parse_num_threads(bad, 6);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kValueError);
      EXPECT_EQ(e.message(), "TILEJIT_NUM_THREADS='" + std::string(bad) +
                                 "' is not a positive integer");
    }
  }
}

// Every chunk, on workers and on the launching thread alike, is refused.
void try_resize(void* context, int64_t, int64_t) {
  try {
    set_num_threads(2);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kValueError &&
        e.message() ==
            "set_num_threads: called from inside a CPU launch; call it between launches") {
      static_cast<std::atomic<int>*>(context)->fetch_add(1);
    }
  }
}

TEST(CpuLaunch, NoResizeFromInsideALaunch) {
  for (int threads : {1, 3}) {
    ScopedThreads scoped(threads);
    std::atomic<int> refused{0};
    ThreadPool::global().run(64, try_resize, &refused);
    EXPECT_EQ(refused.load(), threads == 1 ? 1 : 12) << "4 chunks per thread";
    EXPECT_EQ(num_threads(), threads);
  }
}

TEST(CpuLaunch, InvalidGrid) {
  auto m = build(block_index_func(), {"x", "y", "z"});
  try {
    launch(*m, {nullptr}, {1, 1, 1}, {2, -1, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValueError);
    EXPECT_EQ(e.message(), "cpu launch: invalid grid (2, -1, 1)");
  }
  try {
    launch(*m, {nullptr}, {1, 1, 1}, {int64_t(1) << 40, int64_t(1) << 40, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "cpu launch: invalid grid (1099511627776, 1099511627776, 1)");
  }
}

TEST(CpuLaunch, Scalars) {
  Expr n = Expr::var("n");
  ir::PrimFunc f = ir::prim_func("axpy")
                       .tensor("X", {n}, DataType::float32())
                       .tensor("Y", {n}, DataType::float64())
                       .scalar("alpha", DataType::float32())
                       .scalar("k", DataType::int32())
                       .scalar("m", DataType::int64())
                       .grid({ir::ceildiv(n, 16)})
                       .body("cpu",
                             "for (int64_t i = bx * 16; i < tilejit::min(n, bx * 16 + 16); ++i)\n"
                             "  Y(i) = double(alpha * X(i)) + k + m;\n")
                       .build();
  auto m = build(f, {"n"});
  for (int64_t len : {1, 16, 17, 1000}) {
    std::vector<float> x(static_cast<size_t>(len));
    std::vector<double> y(size_t(len), -1);
    for (int64_t i = 0; i < len; ++i) x[size_t(i)] = float(i) * 0.5f;
    float alpha = 3.0f;
    int32_t k = -7;
    int64_t big = int64_t(1) << 40;
    launch(*m, {x.data(), y.data(), &alpha, &k, &big}, {len}, {(len + 15) / 16, 1, 1});
    for (int64_t i = 0; i < len; ++i) {
      ASSERT_EQ(y[size_t(i)], double(3.0f * x[size_t(i)]) - 7 + double(big)) << len << " " << i;
    }
  }
}

TEST(CpuLaunch, ReturnEndsOnlyTheCurrentBlock) {
  ir::PrimFunc f = ir::prim_func("early_return")
                       .tensor("Out", {64}, DataType::int32())
                       .grid({64})
                       .body("cpu", "if (bx % 3 == 1) return;\nOut(bx) = 1;\n")
                       .build();
  auto m = build(f);
  for (int threads : {1, 4}) {
    ScopedThreads scoped(threads);
    std::vector<int32_t> out(64, 0);
    launch(*m, {out.data()}, {}, {64, 1, 1});
    for (int i = 0; i < 64; ++i) EXPECT_EQ(out[size_t(i)], i % 3 == 1 ? 0 : 1) << i;
  }
}

TEST(CpuLaunch, ExceptionFromABodyReachesTheCaller) {
  ir::PrimFunc f = ir::prim_func("thrower")
                       .tensor("Out", {256}, DataType::int32())
                       .grid({256})
                       .body("cpu",
                             "if (bx == 200) throw std::runtime_error(\"block \" + "
                             "std::to_string(bx));\nOut(bx) = 1;\n")
                       .build();
  auto m = build(f);
  for (int threads : {1, 4}) {
    ScopedThreads scoped(threads);
    std::vector<int32_t> out(256, 0);
    EXPECT_EQ(error_message([&] { launch(*m, {out.data()}, {}, {256, 1, 1}); },
                            ErrorKind::kRuntimeError),
              "thrower: block (200, 0, 0) threw std::runtime_error: block 200")
        << threads << " threads";
    // The pool is usable afterwards (a grid of 100 has no block 200).
    std::vector<int32_t> again(256, 0);
    EXPECT_NO_THROW(launch(*m, {again.data()}, {}, {100, 1, 1}));
    for (int i = 0; i < 256; ++i) EXPECT_EQ(again[size_t(i)], i < 100 ? 1 : 0) << i;
  }
}

// The error a 4 x 2 x 2 grid gives when block (3, 1, 1), and only it, runs
// `statement`; `prelude` goes before the body (a class the body throws).
std::string block_error(const std::string& statement, ErrorKind kind,
                        const std::string& prelude = "") {
  ir::PrimFunc f = ir::prim_func("k")
                       .tensor("Out", {2, 2, 4}, DataType::int32())
                       .grid({4, 2, 2})
                       .body("cpu", prelude + "if (bx == 3 && by == 1 && bz == 1) { " + statement +
                                        " }\nOut(bz, by, bx) = 1;\n")
                       .build();
  auto m = build(f);
  std::vector<int32_t> out(16, 0);
  return error_message([&] { launch(*m, {out.data()}, {}, {4, 2, 2}); }, kind);
}

TEST(CpuLaunch, BodyExceptionsMapToErrorKinds) {
  // The user's errors: a ValueError for a bad value...
  EXPECT_EQ(block_error("throw std::invalid_argument(\"alpha must be positive\");",
                        ErrorKind::kValueError),
            "k: block (3, 1, 1) threw std::invalid_argument: alpha must be positive");
  EXPECT_EQ(block_error("throw std::out_of_range(\"index 9\");", ErrorKind::kValueError),
            "k: block (3, 1, 1) threw std::out_of_range: index 9");
  EXPECT_EQ(block_error("throw std::domain_error(\"log of -1\");", ErrorKind::kValueError),
            "k: block (3, 1, 1) threw std::domain_error: log of -1");
  // ... a RuntimeError for any other std::exception, by its dynamic type ...
  EXPECT_EQ(block_error("throw std::runtime_error(\"boom\");", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw std::runtime_error: boom");
  EXPECT_EQ(block_error("throw std::overflow_error(\"too big\");", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw std::overflow_error: too big");
  EXPECT_EQ(block_error("throw std::logic_error(\"bad state\");", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw std::logic_error: bad state");
  EXPECT_EQ(block_error("(void)std::string(\"ab\").at(5);", ErrorKind::kValueError),
            "k: block (3, 1, 1) threw std::out_of_range: basic_string::at: __n (which is 5) >= "
            "this->size() (which is 2)");
  // ... and a class of the body's own, derived from one of them, keeps its
  // kind and shows its name.
  EXPECT_EQ(block_error("throw my_error(\"mine\");", ErrorKind::kValueError,
                        "struct my_error : std::invalid_argument {\n"
                        "  using std::invalid_argument::invalid_argument;\n};\n"),
            "k: block (3, 1, 1) threw my_error: mine");
  EXPECT_EQ(block_error("throw std::runtime_error(\"\");", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw std::runtime_error");
  // Anything else is a RuntimeError that says what it was.
  EXPECT_EQ(block_error("throw 42;", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw a non-standard exception of type int");
  EXPECT_EQ(block_error("throw \"text\";", ErrorKind::kRuntimeError),
            "k: block (3, 1, 1) threw a non-standard exception of type char const*");
  EXPECT_EQ(block_error("throw token{};", ErrorKind::kRuntimeError, "struct token {};\n"),
            "k: block (3, 1, 1) threw a non-standard exception of type token");
}

// --- bfloat16 and float16 -----------------------------------------------------

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16 decoded from first principles.
float half_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 31 ? (m ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity())
            : e == 0 ? std::ldexp(float(m), -24)
                     : std::ldexp(float(1024 + m), e - 25);
  return (h & 0x8000) ? -v : v;
}

TEST(CpuLaunch, Bfloat16AndFloat16Conversions) {
  Expr n = Expr::var("n");
  ir::PrimFunc f =
      ir::prim_func("convert")
          .tensor("F", {n}, DataType::float32())
          .tensor("Bf", {n}, DataType::bfloat16())
          .tensor("Hf", {n}, DataType::float16())
          .tensor("BfIn", {65536}, DataType::bfloat16())
          .tensor("HfIn", {65536}, DataType::float16())
          .tensor("BfOut", {65536}, DataType::float32())
          .tensor("HfOut", {65536}, DataType::float32())
          .body("cpu",
                "for (int64_t i = 0; i < F.size(); ++i) { Bf(i) = F(i); Hf(i) = F(i); }\n"
                "for (int64_t i = 0; i < 65536; ++i) { BfOut(i) = BfIn(i); HfOut(i) = HfIn(i); }\n"
                "tilejit::bfloat16 acc = 1.0f; acc += 2.0f; acc *= 2.0f;\n"
                "if (float(acc) != 6.0f) throw 1;\n")
          .build();
  auto m = build(f, {"n"});

  // Inputs: for each format, every finite value, the midpoint between each
  // pair of neighbours (ties go to the even one) and the floats just either
  // side of it; then specials. Expected outputs alongside.
  std::vector<float> in;
  std::vector<int> want_bf, want_hf;
  constexpr int kSkip = -1;  // not checked for that format
  constexpr int kNan = -2;   // any NaN
  auto add = [&](float v, int bf, int hf) {
    in.push_back(v);
    want_bf.push_back(bf);
    want_hf.push_back(hf);
  };
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t h = 0; h < 0x7f80; ++h) {  // bfloat16: the top half of a float
      const uint32_t even = (h & 1) ? h + 1 : h;
      add(float_of((sign | h) << 16), int(sign | h), kSkip);
      const uint32_t mid = ((sign | h) << 16) | 0x8000u;
      add(float_of(mid), int(sign | even), kSkip);
      add(float_of(mid - 1), int(sign | h), kSkip);
      add(float_of(mid + 1), int(sign | (h + 1)), kSkip);
    }
    for (uint32_t h = 0; h < 0x7c00; ++h) {  // float16; 0x7c00 stands for 65536
      const float lo = half_value(uint16_t(h));
      const float hi = h + 1 == 0x7c00 ? 65536.0f : half_value(uint16_t(h + 1));
      const float mid = (lo + hi) / 2;  // exact: 12 significant bits
      const uint32_t even = (h & 1) ? h + 1 : h;
      const float s = sign ? -1.0f : 1.0f;
      add(s * lo, kSkip, int(sign | h));
      add(s * mid, kSkip, int(sign | even));
      add(s * std::nextafter(mid, 0.0f), kSkip, int(sign | h));
      add(s * std::nextafter(mid, 1e30f), kSkip, int(sign | (h + 1)));
    }
    const float s = sign ? -1.0f : 1.0f;
    const float inf = std::numeric_limits<float>::infinity();
    add(s * inf, int(sign | 0x7f80), int(sign | 0x7c00));
    add(s * std::numeric_limits<float>::max(), int(sign | 0x7f80), int(sign | 0x7c00));
    add(s * 1e10f, kSkip, int(sign | 0x7c00));
    add(s * std::numeric_limits<float>::denorm_min(), int(sign), int(sign));
    add(s * std::ldexp(1.0f, -25), kSkip, int(sign));  // a tie between 0 and 2^-24
    add(s * std::ldexp(1.0f, -26), kSkip, int(sign));
    add(s * std::ldexp(3.0f, -26), kSkip, int(sign | 1));
  }
  add(std::numeric_limits<float>::quiet_NaN(), kNan, kNan);
  add(-std::numeric_limits<float>::quiet_NaN(), kNan, kNan);
  add(float_of(0x7f800001u), kNan, kNan);  // signalling NaN, payload in the low bits
  add(float_of(0x7fc00000u | 0x2000u), kNan, kNan);

  const int64_t count = int64_t(in.size());
  std::vector<uint16_t> bf(in.size()), hf(in.size()), all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  std::vector<float> bf_out(65536), hf_out(65536);
  launch(*m, {in.data(), bf.data(), hf.data(), all.data(), all.data(), bf_out.data(),
              hf_out.data()},
         {count}, {1, 1, 1});

  int failures = 0;
  for (size_t i = 0; i < in.size() && failures < 20; ++i) {
    for (auto [got, want, is_bf] : {std::tuple{int(bf[i]), want_bf[i], true},
                                    std::tuple{int(hf[i]), want_hf[i], false}}) {
      if (want == kSkip) continue;
      const bool nan = is_bf ? ((got & 0x7f80) == 0x7f80 && (got & 0x7f))
                             : ((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
      const bool ok = want == kNan ? nan : got == want;
      if (!ok) {
        ++failures;
        ADD_FAILURE() << (is_bf ? "bfloat16" : "float16") << "(" << in[i] << " = 0x" << std::hex
                      << bits_of(in[i]) << ") = 0x" << got << ", expected 0x" << want;
      }
    }
  }
  for (uint32_t h = 0; h < 65536 && failures < 40; ++h) {
    const bool bf_nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (bf_nan ? !std::isnan(bf_out[h]) : bits_of(bf_out[h]) != h << 16) {
      ++failures;
      ADD_FAILURE() << "float(bfloat16 0x" << std::hex << h << ") = " << bf_out[h];
    }
    const float want = half_value(uint16_t(h));
    if (std::isnan(want) ? !std::isnan(hf_out[h]) : bits_of(hf_out[h]) != bits_of(want)) {
      ++failures;
      ADD_FAILURE() << "float(float16 0x" << std::hex << h << ") = " << hf_out[h] << ", expected "
                    << want;
    }
  }
}

// --- concurrency ----------------------------------------------------------------

TEST(CpuLaunch, ConcurrentLaunchesFromManyThreads) {
  constexpr int kKernels = 8, kLaunches = 200;
  ScopedThreads threads(4);
  Expr n = Expr::var("n");
  // Compiled concurrently as well: each compile has its own directory.
  std::vector<std::future<std::unique_ptr<runtime::Module>>> pending;
  for (int k = 0; k < kKernels; ++k) {
    pending.push_back(std::async(std::launch::async, [k, n] {
      ir::PrimFunc f = ir::prim_func("add" + std::to_string(k))
                           .tensor("X", {n}, DataType::float32())
                           .tensor("Y", {n}, DataType::float32())
                           .grid({ir::ceildiv(n, 64)})
                           .body("cpu",
                                 "for (int64_t i = bx * 64; i < tilejit::min(n, bx * 64 + 64); "
                                 "++i)\n  Y(i) = X(i) + " +
                                     std::to_string(k) + ".0f;\n")
                           .build();
      return build(f, {"n"});
    }));
  }
  std::vector<std::unique_ptr<runtime::Module>> modules;
  for (auto& p : pending) modules.push_back(p.get());

  std::vector<std::thread> callers;
  std::vector<int> bad(kKernels, 0);
  for (int t = 0; t < kKernels; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int i = 0; i < kLaunches; ++i) {
        // Alternate between this thread's kernel and a neighbour's, so that
        // the same module is also launched from two threads at once.
        const int k = (i % 2) ? t : (t + 1) % kKernels;
        const int64_t len = 1 + int64_t(rng() % 5000);
        std::vector<float> x(static_cast<size_t>(len)), y(static_cast<size_t>(len), -1.0f);
        for (int64_t j = 0; j < len; ++j) x[size_t(j)] = float(j % 1000);
        launch(*modules[size_t(k)], {x.data(), y.data()}, {len}, {(len + 63) / 64, 1, 1});
        for (int64_t j = 0; j < len; ++j) {
          if (y[size_t(j)] != float(j % 1000) + float(k)) {
            ++bad[size_t(t)];
            break;
          }
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  for (int t = 0; t < kKernels; ++t) EXPECT_EQ(bad[size_t(t)], 0) << "thread " << t;
}

TEST(CpuLaunch, ForkedChildLaunchesAndExits) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not start threads after a multi-threaded fork";
#endif
#if defined(__SANITIZE_ADDRESS__)
  // The child of a fork from many threads hung once in CI under ASan (its
  // runtime's locks are not all fork-safe); the plain build runs this test.
  GTEST_SKIP() << "AddressSanitizer: a child forked from many threads may hang in the runtime";
#endif
  Expr n = Expr::var("n");
  ir::PrimFunc f = ir::prim_func("iota")
                       .tensor("Y", {n}, DataType::int32())
                       .grid({n})
                       .body("cpu", "Y(bx) = int32_t(bx);\n")
                       .build();
  auto m = build(f, {"n"});
  ScopedThreads threads(4);
  std::vector<int32_t> y(1000, -1);
  launch(*m, {y.data()}, {1000}, {1000, 1, 1});  // the parent's workers are running
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child has none of those workers: it must neither wait for them
    // nor hang joining them in exit().
    std::vector<int32_t> z(1000, -1);
    launch(*m, {z.data()}, {1000}, {1000, 1, 1});
    bool ok = true;
    for (int i = 0; i < 1000; ++i) ok = ok && z[size_t(i)] == i;
    std::exit(ok ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && (done = ::waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the forked child hung";
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CpuLaunch, ResizeWhileOtherThreadsLaunch) {
  Expr n = Expr::var("n");
  ir::PrimFunc f = ir::prim_func("fill")
                       .tensor("Y", {n}, DataType::int32())
                       .grid({n})
                       .body("cpu", "Y(bx) = int32_t(bx);\n")
                       .build();
  auto m = build(f, {"n"});
  ScopedThreads threads(3);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      while (!done.load()) {
        std::vector<int32_t> y(300, -1);
        launch(*m, {y.data()}, {300}, {300, 1, 1});
        for (int i = 0; i < 300; ++i) bad += y[size_t(i)] != i;
      }
    });
  }
  for (int i = 0; i < 30; ++i) set_num_threads(1 + i % 4);
  done = true;
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace tilejit::cpu::testing

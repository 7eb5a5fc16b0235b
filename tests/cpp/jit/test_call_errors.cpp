// Every validation error of a call: kind, exact message, no lease left held,
// and the next good call succeeds.
#include <limits>

#include "common/test_util.h"

namespace tilejit {
namespace {

using testing::cpu_options;
using testing::cpu_pool;
using testing::expect_error;

class CallErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Expr b = symbolic("b"), s = symbolic("s"), s_kv = symbolic("s_kv");
    const auto f = prim_func("sparse_attention_fwd")
                       .tensor("Q", {b, s, 4, 8}, DataType::bfloat16())
                       .tensor("KV", {b, s_kv, 8}, DataType::bfloat16())
                       .tensor("Indices", {b, s, 16}, DataType::int32())
                       .tensor("Output", {b, s, 4, 8}, DataType::bfloat16())
                       .tensor("ws", {b * s, 16, 8}, DataType::bfloat16())
                       .grid({b * s})
                       .body("cpu", "Output(bx / s, bx % s, 0, 0) = Q(bx / s, bx % s, 0, 0);")
                       .build();
    kernel_ = new Kernel(jit(f, cpu_options({3}, {4})));
  }
  static void TearDownTestSuite() { delete kernel_; }

  void SetUp() override {
    q_ = empty({2, 3, 4, 8}, DataType::bfloat16());
    kv_ = empty({2, 5, 8}, DataType::bfloat16());
    idx_ = empty({2, 3, 16}, DataType::int32());
  }

  // After an error: nothing leased, and a good call works.
  void expect_clean() {
    EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
    Tensor out = (*kernel_)(q_, kv_, idx_);
    EXPECT_EQ(out.shape_str(), "[2, 3, 4, 8]");
  }

  static Kernel* kernel_;
  Tensor q_, kv_, idx_;
};

Kernel* CallErrors::kernel_ = nullptr;

TEST_F(CallErrors, Arity) {
  expect_error([&] { (*kernel_)(q_, kv_); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 2: missing "
               "parameter #2 'Indices' (a parameter in neither out_idx nor workspace_idx is an "
               "input)");
  Tensor extra = empty({2, 3, 4, 8}, DataType::bfloat16());
  expect_error([&] { (*kernel_)(q_, kv_, idx_, extra); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 4");
  expect_error([&] { (*kernel_)(); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: expected 3 inputs (Q, KV, Indices), got 0: missing "
               "parameters #0 'Q', #1 'KV', #2 'Indices' (a parameter in neither out_idx nor "
               "workspace_idx is an input)");
  expect_clean();
}

TEST_F(CallErrors, Dtype) {
  Tensor idx64 = empty({2, 3, 16}, DataType::int64());
  expect_error([&] { (*kernel_)(q_, kv_, idx64); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: argument #2 'Indices': expected int32, got int64");
  Tensor q32 = empty({2, 3, 4, 8}, DataType::float32());
  expect_error([&] { (*kernel_)(q32, kv_, idx_); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: argument #0 'Q': expected bfloat16, got float32");
  expect_clean();
}

TEST_F(CallErrors, Rank) {
  Tensor q3 = empty({2, 3, 4}, DataType::bfloat16());
  expect_error([&] { (*kernel_)(q3, kv_, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #0 'Q': expected 4 dimensions [b, s, 4, 8], got 3 "
               "[2, 3, 4]");
  expect_clean();
}

TEST_F(CallErrors, StaticDim) {
  Tensor q = empty({2, 3, 5, 8}, DataType::bfloat16());
  expect_error([&] { (*kernel_)(q, kv_, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #0 'Q': dimension 2 must be 4, got 5 (shape "
               "[2, 3, 5, 8])");
  Tensor idx = empty({2, 3, 15}, DataType::int32());
  expect_error([&] { (*kernel_)(q_, kv_, idx); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #2 'Indices': dimension 2 must be 16, got 15 "
               "(shape [2, 3, 15])");
  expect_clean();
}

TEST_F(CallErrors, SymbolDisagrees) {
  Tensor idx = empty({1, 3, 16}, DataType::int32());
  expect_error([&] { (*kernel_)(q_, kv_, idx); }, ErrorKind::kValueError,
               "sparse_attention_fwd: symbol 'b': Q.shape[0] = 2 but Indices.shape[0] = 1");
  Tensor kv = empty({3, 5, 8}, DataType::bfloat16());
  expect_error([&] { (*kernel_)(q_, kv, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: symbol 'b': Q.shape[0] = 2 but KV.shape[0] = 3");
  Tensor idx_s = empty({2, 4, 16}, DataType::int32());
  expect_error([&] { (*kernel_)(q_, kv_, idx_s); }, ErrorKind::kValueError,
               "sparse_attention_fwd: symbol 's': Q.shape[1] = 3 but Indices.shape[1] = 4");
  expect_clean();
}

TEST_F(CallErrors, NotContiguous) {
  const int64_t shape[] = {2, 5, 8};
  const int64_t strides[] = {80, 16, 2};
  Tensor kv = Tensor::from_blob(kv_.data(), shape, DataType::bfloat16(), Device::cpu(), nullptr,
                                nullptr, strides);
  expect_error([&] { (*kernel_)(q_, kv, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #1 'KV': expected a contiguous tensor, got strides "
               "[80, 16, 2] in elements ([160, 32, 4] in bytes) for shape [2, 5, 8]");
  expect_clean();
}

TEST_F(CallErrors, Device) {
  const int64_t qshape[] = {2, 3, 4, 8};
  Tensor q_gpu = Tensor::from_blob(q_.data(), qshape, DataType::bfloat16(), Device::cuda(0));
  expect_error([&] { (*kernel_)(q_gpu, kv_, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #0 'Q': expected a tensor on cpu (target 'cpu'), "
               "got one on cuda:0");
  const int64_t kvshape[] = {2, 5, 8};
  Tensor kv_gpu = Tensor::from_blob(kv_.data(), kvshape, DataType::bfloat16(), Device::cuda(1));
  expect_error([&] { (*kernel_)(q_, kv_gpu, idx_); }, ErrorKind::kValueError,
               "sparse_attention_fwd: argument #1 'KV': is on cuda:1 but argument #0 'Q' is on "
               "cpu; all tensors must be on one device");
  expect_clean();
}

TEST_F(CallErrors, NotATensor) {
  expect_error([&] { (*kernel_)(q_, 3, idx_); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: argument #1 'KV': expected a bfloat16 tensor, got an "
               "integer (3)");
  const Arg args[] = {Arg(q_), Arg(), Arg(idx_)};
  expect_error([&] { kernel_->call(args); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: argument #1 'KV': expected a bfloat16 tensor, got None");
  Tensor undefined;
  expect_error([&] { (*kernel_)(q_, kv_, undefined); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: argument #2 'Indices': expected an int32 tensor, got an "
               "undefined tensor");
  expect_clean();
}

TEST_F(CallErrors, SuppliedOutAndWorkspace) {
  Tensor wrong = empty({2, 3, 4, 9}, DataType::bfloat16());
  const Tensor outs[] = {wrong};
  CallOptions o;
  o.out = outs;
  const Arg args[] = {Arg(q_), Arg(kv_), Arg(idx_)};
  expect_error([&] { kernel_->call(args, o); }, ErrorKind::kValueError,
               "sparse_attention_fwd: out[0] 'Output': expected shape [2, 3, 4, 8], got "
               "[2, 3, 4, 9]");
  Tensor wrong_dtype = empty({2, 3, 4, 8}, DataType::float32());
  const Tensor outs2[] = {wrong_dtype};
  o.out = outs2;
  expect_error([&] { kernel_->call(args, o); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: out[0] 'Output': expected bfloat16, got float32");
  CallOptions w;
  w.workspace = empty({100}, DataType::uint8());
  expect_error([&] { kernel_->call(args, w); }, ErrorKind::kValueError,
               "sparse_attention_fwd: workspace=: needs 1536 bytes, got a tensor of 100 bytes");
  expect_clean();
}

// Kernels with a symbol in an affine, a computed or a scalar position.
TEST(CallErrorsShapes, AffineGridOutputScalar) {
  const Expr n = symbolic("n"), s = symbolic("s");
  const auto affine = prim_func("k")
                          .tensor("X", {2 * s}, DataType::float32())
                          .tensor("Y", {s}, DataType::float32())
                          .body("cpu", "")
                          .build();
  const Kernel ka = jit(affine, cpu_options({1}));
  Tensor x7 = empty({7}, DataType::float32());
  expect_error([&] { ka(x7); }, ErrorKind::kValueError,
               "k: argument #0 'X': dimension 0 is 7, which is not 2 * s for any integer s");
  Tensor x8 = empty({8}, DataType::float32());
  EXPECT_EQ(Tensor(ka(x8)).shape(0), 4);

  const auto computed = prim_func("k")
                            .tensor("X", {n}, DataType::float32())
                            .tensor("Y", {2 * n}, DataType::float32())
                            .tensor("Z", {n - 8}, DataType::float32())
                            .grid({ceildiv(n, 4)})
                            .body("cpu", "")
                            .build();
  const Kernel kc = jit(computed, cpu_options({2}));
  Tensor x4 = empty({4}, DataType::float32());
  Tensor y7 = empty({7}, DataType::float32());
  expect_error([&] { kc(x4, y7); }, ErrorKind::kValueError,
               "k: argument #1 'Y': dimension 0 must be 2 * n = 8 (n = 4 from X.shape[0]), got 7");
  Tensor x0 = empty({0}, DataType::float32());
  Tensor y0 = empty({0}, DataType::float32());
  expect_error([&] { kc(x0, y0); }, ErrorKind::kValueError,
               "k: grid extent 0 = ceildiv(n, 4) evaluates to 0 (n = 0 from X.shape[0]); every "
               "grid extent must be positive");
  Tensor x5 = empty({5}, DataType::float32());
  Tensor y10 = empty({10}, DataType::float32());
  expect_error([&] { kc(x5, y10); }, ErrorKind::kValueError,
               "k: output 'Z' dimension 0 = n - 8 evaluates to -3 (n = 5 from X.shape[0]); extents "
               "must be non-negative");

  const auto scalars = prim_func("k")
                           .tensor("X", {n}, DataType::float32())
                           .scalar("m", DataType::int32())
                           .scalar("alpha", DataType::float32())
                           .tensor("Y", {n}, DataType::float32())
                           .body("cpu", "")
                           .build();
  const Kernel ks = jit(scalars, cpu_options({-1}));
  Tensor x = empty({3}, DataType::float32());
  expect_error([&] { ks(x, 1.5, 2.0); }, ErrorKind::kTypeError,
               "k: argument #1 'm': expected int32 scalar, got a float (1.5)");
  expect_error([&] { ks(x, int64_t{1} << 40, 2.0); }, ErrorKind::kValueError,
               "k: argument #1 'm': value 1099511627776 does not fit in int32");
  expect_error([&] { ks(x, 1, x); }, ErrorKind::kTypeError,
               "k: argument #2 'alpha': expected float32 scalar, got a float32 tensor of shape [3]");
  EXPECT_EQ(Tensor(ks(x, 1, 2)).shape(0), 3);  // an int is a fine float32
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(CallErrorsShapes, AWorkspaceLeftOutOfWorkspaceIdxIsAnInput) {
  // Five workspaces declared, four listed: the fifth is an input.
  const Expr b = symbolic("b"), s = symbolic("s");
  const auto f = prim_func("sparse_attention_fwd")
                     .tensor("Q", {b, s, 4, 8}, DataType::float32())
                     .tensor("KV", {b, s, 8}, DataType::float32())
                     .tensor("Indices", {b, s, 16}, DataType::int32())
                     .tensor("Output", {b, s, 4, 8}, DataType::float32())
                     .tensor("ws_kv", {b * s, 8}, DataType::float32())
                     .tensor("ws_s", {b * s, 8}, DataType::float32())
                     .tensor("ws_p", {b * s, 8}, DataType::float32())
                     .tensor("ws_o", {b * s, 8}, DataType::float32())
                     .tensor("ws_extra", {b * s, 8}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({3}, {4, 5, 6, 7}));
  Tensor q = empty({2, 3, 4, 8}, DataType::float32());
  Tensor kv = empty({2, 3, 8}, DataType::float32());
  Tensor idx = empty({2, 3, 16}, DataType::int32());
  expect_error([&] { k(q, kv, idx); }, ErrorKind::kTypeError,
               "sparse_attention_fwd: expected 4 inputs (Q, KV, Indices, ws_extra), got 3: "
               "missing parameter #8 'ws_extra' (a parameter in neither out_idx nor "
               "workspace_idx is an input)");
}

TEST(CallErrorsShapes, Float32ScalarThatOverflowsToInfinity) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .scalar("alpha", DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .body("cpu", "for (int64_t i = 0; i < n; ++i) Y(i) = alpha;")
                     .build();
  const Kernel k = jit(f, cpu_options({-1}));
  Tensor x = empty({2}, DataType::float32());
  expect_error([&] { k(x, 1e40); }, ErrorKind::kValueError,
               "k: argument #1 'alpha': value 1e+40 does not fit in float32");
  expect_error([&] { k(x, -1e39); }, ErrorKind::kValueError,
               "k: argument #1 'alpha': value -1e+39 does not fit in float32");
  // Infinity asked for is infinity; the largest float32 still fits.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Tensor(k(x, inf)).data_as<float>()[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(Tensor(k(x, 3.4028234663852886e38)).data_as<float>()[0],
            std::numeric_limits<float>::max());
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(CallErrorsShapes, ScalarBindsNegativeSymbol) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .scalar("n", DataType::int64())
                     .tensor("Y", {n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({1}));
  expect_error([&] { k(-2); }, ErrorKind::kValueError,
               "k: symbol 'n' = -2 from scalar #0 'n' is negative; shapes must be non-negative");
  EXPECT_EQ(Tensor(k(6)).shape(0), 6);
}

TEST(CallErrorsShapes, SingleOutputConversion) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .tensor("Z", {n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  const Kernel k = jit(f, cpu_options({1, 2}));
  Tensor x = empty({3}, DataType::float32());
  expect_error([&] { Tensor t = k(x); (void)t; }, ErrorKind::kTypeError,
               "the call returned 2 outputs; a single Tensor needs exactly one (index the "
               "Outputs instead)");
}

}  // namespace
}  // namespace tilejit

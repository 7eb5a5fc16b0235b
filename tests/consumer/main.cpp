// Declares a kernel with an output and a workspace, calls it with its input
// alone, and checks the result: exits non-zero on any mismatch.
#include <tilejit/tilejit.h>

#include <cstdio>

int main() {
  using namespace tilejit;
  const Expr n = symbolic("n");
  const PrimFunc f = prim_func("prefix_sum")
                         .tensor("X", {n}, DataType::float32())
                         .tensor("Y", {n}, DataType::float32())
                         .tensor("scratch", {n + 1}, DataType::float32())
                         .body("cpu", R"(
scratch(0) = 0.f;
for (int64_t i = 0; i < n; ++i) scratch(i + 1) = scratch(i) + X(i);
for (int64_t i = 0; i < n; ++i) Y(i) = scratch(i + 1);
)")
                         .build();
  JitOptions options;
  options.out_idx = {1};
  options.workspace_idx = {2};
  options.target = "cpu";
  const Kernel k = jit(f, options);
  Tensor x = empty({100}, DataType::float32());
  for (int i = 0; i < 100; ++i) x.data_as<float>()[i] = float(i);
  Tensor y = k(x);
  for (int i = 0; i < 100; ++i) {
    if (y.data_as<float>()[i] != float(i * (i + 1) / 2)) {
      std::printf("consumer: mismatch at %d\n", i);
      return 1;
    }
  }
  std::printf("consumer: find_package(tilejit) works; prefix sum of 100 values matches\n");
  return 0;
}

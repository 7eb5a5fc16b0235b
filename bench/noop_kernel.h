// The benchmarks' no-op kernel: inputs A [m, n], B [n], C [m]; output
// D [m, n]; workspaces W1 [m], W2 [n], W3 [m, n], W4 [64] (int32); two
// dynamic symbols; one block with an empty body for the CPU and for CUDA
// (128 threads). bench_call_overhead.cpp and bench_cuda_call.cpp call it;
// bench_python.py declares the same signature for the Python benchmarks.
#pragma once

#include <string>

#include "tilejit/tilejit.h"

namespace tilejit::bench {

/// The symbols' values in every benchmark: m = 64, n = 32.
inline constexpr int64_t kM = 64, kN = 32;

inline ir::PrimFunc noop_kernel() {
  const Expr m = symbolic("m"), n = symbolic("n");
  return prim_func("noop")
      .tensor("A", {m, n}, DataType::float32())
      .tensor("B", {n}, DataType::float32())
      .tensor("C", {m}, DataType::float32())
      .tensor("D", {m, n}, DataType::float32())
      .tensor("W1", {m}, DataType::float32())
      .tensor("W2", {n}, DataType::float32())
      .tensor("W3", {m, n}, DataType::float32())
      .tensor("W4", {64}, DataType::int32())
      .threads(128)
      .body("cpu", "")
      .body("cuda", "")
      .build();
}

/// D the output, W1..W4 the workspaces, on `target`.
inline JitOptions noop_options(const std::string& target) {
  JitOptions o;
  o.out_idx = {3};
  o.workspace_idx = {4, 5, 6, 7};
  o.target = target;
  return o;
}

}  // namespace tilejit::bench

// The CUDA backend's code generation for tile-IR bodies, over the printer
// both targets share (backend/common/tile_codegen.h); the tile ops are the
// shared lowering's calls of the CUDA tile library (device/cuda/tilejit/
// cuda/*.h), whose functions have the CPU library's names and meaning.
//
// Note [CUDA lowering of tile IR]
// A T.Kernel is one __global__ entry (tilejit_kernel, tilejit_kernel_1, ...
// for the kernels of one function, launched in order on one stream), with
// the kernel's `threads` as a 1-D block; the block indices are blockIdx.
//
// Every thread runs the body's statements in order: outside T.Parallel
// loops the code is uniform, the same for every thread of the block.
//  - Shared and fragment buffers live in the block's dynamic shared memory,
//    one buffer planned here: each tile at the next 128-byte boundary (the
//    alignment ldmatrix, cp.async and the swizzles need). The total is the
//    launch's shared memory in the KernelAbi, and the module raises the
//    kernel's limit above 48 KiB when it needs more. A fragment is thus one
//    block-wide array as on the CPU, which every thread can read.
//  - Local buffers are per-thread arrays (registers).
//  - A T.Parallel nest is one loop over all its iterations that the
//    block's threads share (iteration f on thread f % threads); loops inside
//    it run on their thread.
//  - Tile ops are library calls that the block's threads make together;
//    inside a T.Parallel nest, where TileLang writes T.atomic_add or T.print
//    of one element, the op is the calling thread's alone.
//  - A store outside a T.Parallel loop into a shared, fragment or global
//    buffer is made by thread 0 alone (the value is the same on every
//    thread); a store into a local buffer by every thread.
//  - __syncthreads() goes before and after each tile op, T.Parallel nest
//    and thread-0 store (never twice in a row): data handed from one
//    thread to another through shared memory is always behind a barrier.
//  - T.Pipelined is a plain loop; T.unroll carries #pragma unroll.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "backend/common/tile_codegen.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cuda {

/// The most dynamic shared memory a block may have on the GPUs tilejit
/// targets (227 KiB on sm_90).
inline constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The unit for a PrimFunc with a tile body.
runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request);

class CudaTileCodegen final : public backend::TileCodegen {
 public:
  CudaTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                  std::ostream& os, int threads)
      : TileCodegen(func, symbols, os, "CUDA"), threads_(threads) {}

  std::string lib() const override { return "tilejit::cuda"; }
  // Inside a T.Parallel nest an op is its thread's alone.
  const char* thread_index() const override {
    return parallel_depth_ > 0 ? nullptr : "tilejit_tid";
  }
  const char* thread_count() const override {
    return parallel_depth_ > 0 ? nullptr : "tilejit_nthreads";
  }
  std::string gemm_template_tail() const override { return ", " + std::to_string(threads_); }
  std::string math(const char* fn, const char* ct,
                   const std::vector<std::string>& args) const override;

  /// The shared memory the body's tiles take, known once emitted.
  int64_t smem_bytes() const { return smem_bytes_; }

 private:
  void emit_alloc(const ir::AllocStmt& op) override;
  void emit_for(const ir::ForStmt& op) override;
  void emit_store(const ir::StoreStmt& op) override;
  void emit_tile_op(const ir::Stmt& s) override;

  void emit_parallel_nest(const ir::ForStmt& op);
  /// __syncthreads(), unless the last line written was one.
  void sync();

  int threads_;
  int parallel_depth_ = 0;
  int64_t smem_bytes_ = 0;
  int64_t synced_at_ = -1;  // lines_written() after the last barrier
};

}  // namespace tilejit::cuda

// Tile-language kernels written with the C++ builder (ir::TileBuilder), the
// same programs as TileLang's examples: elementwise add, GEMM, split-K GEMM,
// RMSNorm and row softmax. Each function returns the PrimFunc; the comments
// show the TileLang program it builds. Shapes are symbolic where TileLang's
// examples take them as arguments, so one kernel serves every size, tiles
// that do not divide them included.
#pragma once

#include <tilejit/ir/tile_builder.h>
#include <tilejit/tilejit.h>

#include <string>

namespace examples::tile {

using tilejit::DataType;
using tilejit::ir::Buffer;
using tilejit::ir::corner;
using tilejit::ir::Expr;
using tilejit::ir::ForKind;
using tilejit::ir::load;
using tilejit::ir::Range;
using tilejit::ir::ReduceKind;
using tilejit::ir::Scope;
using tilejit::ir::TileBuilder;
using tilejit::ir::whole;

/// C = A + B on [M, N] tensors, in block_m x block_n tiles:
///
///   with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
///       A_s = T.alloc_shared((bm, bn), dtype); B_s = ...; C_l = T.alloc_fragment(...)
///       T.copy(A[by * bm, bx * bn], A_s)
///       T.copy(B[by * bm, bx * bn], B_s)
///       for i, j in T.Parallel(bm, bn):
///           C_l[i, j] = A_s[i, j] + B_s[i, j]
///       T.copy(C_l, C[by * bm, bx * bn])
inline tilejit::PrimFunc elementwise_add(DataType dtype, int64_t bm = 32, int64_t bn = 64) {
  TileBuilder b("elementwise_add");
  const Expr M = tilejit::ir::symbolic("M"), N = tilejit::ir::symbolic("N");
  const Buffer A = b.tensor_param("A", {M, N}, dtype);
  const Buffer B = b.tensor_param("B", {M, N}, dtype);
  const Buffer C = b.tensor_param("C", {M, N}, dtype);
  const auto blk = b.begin_kernel({tilejit::ir::ceildiv(N, bn), tilejit::ir::ceildiv(M, bm)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_s", {bm, bn}, dtype, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {bm, bn}, dtype, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {bm, bn}, dtype, Scope::kFragment);
  b.copy(corner(A, {by * bm, bx * bn}), whole(A_s));
  b.copy(corner(B, {by * bm, bx * bn}), whole(B_s));
  const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
  b.store(C_l, {i, j}, load(A_s, {i, j}) + load(B_s, {i, j}));
  b.end_for();
  b.end_for();
  b.copy(whole(C_l), corner(C, {by * bm, bx * bn}));
  b.end_kernel();
  return b.finish();
}

/// C = A + B on [N] tensors straight from global memory (no tiles): the
/// accesses past N in the last block are guarded by transform::predicate.
///
///   with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
///       for i in T.Parallel(block):
///           C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
inline tilejit::PrimFunc elementwise_add_1d(int64_t block = 256) {
  TileBuilder b("elementwise_add_1d");
  const Expr N = tilejit::ir::symbolic("N");
  const Buffer A = b.tensor_param("A", {N}, DataType::float32());
  const Buffer B = b.tensor_param("B", {N}, DataType::float32());
  const Buffer C = b.tensor_param("C", {N}, DataType::float32());
  const Expr bx = b.begin_kernel({tilejit::ir::ceildiv(N, block)}, {128})[0];
  const Expr i = b.begin_for("i", 0, block, ForKind::kParallel);
  const Expr g = bx * block + i;
  b.store(C, {g}, load(A, {g}) + load(B, {g}));
  b.end_for();
  b.end_kernel();
  return b.finish();
}

struct GemmConfig {
  int64_t block_m = 128, block_n = 128, block_k = 64;
  DataType in = DataType::float32();
  DataType accum = DataType::float32();
  DataType out = DataType::float32();
  int stages = 3;
};

/// C[M, N] = A[M, K] @ B[K, N], TileLang's README GEMM:
///
///   with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
///       A_s = T.alloc_shared((bm, bk), dtype); B_s = T.alloc_shared((bk, bn), dtype)
///       C_l = T.alloc_fragment((bm, bn), accum_dtype)
///       T.clear(C_l)
///       for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
///           T.copy(A[by * bm, ko * bk], A_s)
///           T.copy(B[ko * bk, bx * bn], B_s)
///           T.gemm(A_s, B_s, C_l)
///       T.copy(C_l, C[by * bm, bx * bn])
inline tilejit::PrimFunc gemm(const GemmConfig& cfg) {
  TileBuilder b("gemm");
  const Expr M = tilejit::ir::symbolic("M"), N = tilejit::ir::symbolic("N"),
             K = tilejit::ir::symbolic("K");
  const Buffer A = b.tensor_param("A", {M, K}, cfg.in);
  const Buffer B = b.tensor_param("B", {K, N}, cfg.in);
  const Buffer C = b.tensor_param("C", {M, N}, cfg.out);
  const auto blk = b.begin_kernel(
      {tilejit::ir::ceildiv(N, cfg.block_n), tilejit::ir::ceildiv(M, cfg.block_m)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_s", {cfg.block_m, cfg.block_k}, cfg.in, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {cfg.block_k, cfg.block_n}, cfg.in, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {cfg.block_m, cfg.block_n}, cfg.accum, Scope::kFragment);
  b.fill(whole(C_l), 0);
  const Expr ko = b.begin_for("ko", 0, tilejit::ir::ceildiv(K, cfg.block_k), ForKind::kPipelined,
                              cfg.stages);
  b.copy(corner(A, {by * cfg.block_m, ko * cfg.block_k}), whole(A_s));
  b.copy(corner(B, {ko * cfg.block_k, bx * cfg.block_n}), whole(B_s));
  b.gemm(whole(A_s), whole(B_s), whole(C_l));
  b.end_for();
  b.copy(whole(C_l), corner(C, {by * cfg.block_m, bx * cfg.block_n}));
  b.end_kernel();
  return b.finish();
}

struct AutotuneGemmConfig {
  int64_t block_m = 128, block_n = 256, block_k = 64;
  int stages = 3, threads = 256;
  bool enable_rasteration = true;
  DataType dtype = DataType::float16();
  DataType accum = DataType::float32();
  // TileLang's example always rasterises in rows; the order is here so that
  // tests reach both.
  tilejit::ir::RasterOrder order = tilejit::ir::RasterOrder::kRow;
};

/// C[M, N] = A[M, K] @ B[N, K]^T, the GEMM of TileLang's autotuning example
/// (examples/tile/gemm.py):
///
///   with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=thread_num) as (bx, by):
///       A_s = T.alloc_shared((bm, bk), dtype); B_s = T.alloc_shared((bn, bk), dtype)
///       C_l = T.alloc_fragment((bm, bn), accum_dtype)
///       C_s = T.alloc_shared((bm, bn), dtype)
///       T.use_swizzle(panel_size=10, enable=enable_rasteration)
///       T.clear(C_l)
///       for k in T.Pipelined(T.ceildiv(K, bk), num_stages=num_stages):
///           T.copy(A[by * bm, k * bk], A_s)
///           T.copy(B[bx * bn, k * bk], B_s)
///           T.gemm(A_s, B_s, C_l, transpose_B=True)
///       T.copy(C_l, C_s)
///       T.copy(C_s, C[by * bm, bx * bn])
inline tilejit::PrimFunc gemm_autotune(const AutotuneGemmConfig& cfg) {
  TileBuilder b("gemm_autotune");
  const Expr M = tilejit::ir::symbolic("M"), N = tilejit::ir::symbolic("N"),
             K = tilejit::ir::symbolic("K");
  const Buffer A = b.tensor_param("A", {M, K}, cfg.dtype);
  const Buffer B = b.tensor_param("B", {N, K}, cfg.dtype);
  const Buffer C = b.tensor_param("C", {M, N}, cfg.dtype);
  const auto blk = b.begin_kernel(
      {tilejit::ir::ceildiv(N, cfg.block_n), tilejit::ir::ceildiv(M, cfg.block_m)},
      {cfg.threads});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_shared", {cfg.block_m, cfg.block_k}, cfg.dtype, Scope::kShared);
  const Buffer B_s = b.alloc("B_shared", {cfg.block_n, cfg.block_k}, cfg.dtype, Scope::kShared);
  const Buffer C_l = b.alloc("C_local", {cfg.block_m, cfg.block_n}, cfg.accum, Scope::kFragment);
  const Buffer C_s = b.alloc("C_shared", {cfg.block_m, cfg.block_n}, cfg.dtype, Scope::kShared);
  b.use_swizzle(10, cfg.order, cfg.enable_rasteration);
  b.fill(whole(C_l), 0);
  const Expr k = b.begin_for("k", 0, tilejit::ir::ceildiv(K, cfg.block_k), ForKind::kPipelined,
                             cfg.stages);
  b.copy(corner(A, {by * cfg.block_m, k * cfg.block_k}), whole(A_s));
  b.copy(corner(B, {bx * cfg.block_n, k * cfg.block_k}), whole(B_s));
  b.gemm(whole(A_s), whole(B_s), whole(C_l), false, true);
  b.end_for();
  b.copy(whole(C_l), whole(C_s));
  b.copy(whole(C_s), corner(C, {by * cfg.block_m, bx * cfg.block_n}));
  b.end_kernel();
  return b.finish();
}

/// Split-K GEMM with the partial sums in a workspace parameter,
/// Partial[split_k, M, N] (jit option workspace_idx = {3}): each block takes
/// one output tile, computes the partial product of each of the split_k
/// slices of K into Partial[s], then reduces the slices into C.
///
///   with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
///       ...
///       for s in T.serial(split_k):
///           T.clear(C_l)
///           for ko in T.Pipelined(T.ceildiv(T.ceildiv(K, split_k), bk)):
///               T.copy(A[by * bm, s * chunk + ko * bk], A_s)   # chunk = ceildiv(K, split_k)
///               T.copy(B[s * chunk + ko * bk, bx * bn], B_s)
///               T.gemm(A_s, B_s, C_l)
///           T.copy(C_l, Partial[s, by * bm, bx * bn])
///       T.clear(C_l)
///       for s in T.serial(split_k):
///           T.copy(Partial[s, by * bm, bx * bn], P_s)
///           for i, j in T.Parallel(bm, bn):
///               C_l[i, j] += P_s[i, j]
///       T.copy(C_l, C[by * bm, bx * bn])
///
/// A slice's last K tile may reach into the next slice: the copies mask at
/// the slice's end with `if` on the k index, so each K element is summed in
/// exactly one slice.
///
/// With `alloc_global`, Partial is not a parameter but
/// `Partial = T.alloc_global((split_k, M, N), "float32")`: a workspace the
/// signature does not show, leased from the same pool (jit options then
/// have no workspace_idx).
inline tilejit::PrimFunc splitk_gemm(int64_t split_k, bool alloc_global = false,
                                     int64_t bm = 64, int64_t bn = 64, int64_t bk = 32) {
  TileBuilder b(alloc_global ? "splitk_gemm_global" : "splitk_gemm");
  const Expr M = tilejit::ir::symbolic("M"), N = tilejit::ir::symbolic("N"),
             K = tilejit::ir::symbolic("K");
  const DataType f32 = DataType::float32();
  const Buffer A = b.tensor_param("A", {M, K}, f32);
  const Buffer B = b.tensor_param("B", {K, N}, f32);
  const Buffer C = b.tensor_param("C", {M, N}, f32);
  const Buffer P = alloc_global ? b.alloc_global("Partial", {Expr(split_k), M, N}, f32)
                                : b.tensor_param("Partial", {Expr(split_k), M, N}, f32);
  const auto blk = b.begin_kernel({tilejit::ir::ceildiv(N, bn), tilejit::ir::ceildiv(M, bm)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_s", {bm, bk}, f32, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {bk, bn}, f32, Scope::kShared);
  const Buffer P_s = b.alloc("P_s", {bm, bn}, f32, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {bm, bn}, f32, Scope::kFragment);
  const Expr chunk = b.let("chunk", tilejit::ir::ceildiv(K, split_k));
  const Expr s = b.begin_for("s", 0, split_k);
  b.fill(whole(C_l), 0);
  const Expr k_end = b.let("k_end", tilejit::ir::min(s * chunk + chunk, K));
  const Expr ko = b.begin_for("ko", 0, tilejit::ir::ceildiv(chunk, bk), ForKind::kPipelined, 2);
  const Expr k0 = b.let("k0", s * chunk + ko * bk);
  b.copy(corner(A, {by * bm, k0}), whole(A_s));
  b.copy(corner(B, {k0, bx * bn}), whole(B_s));
  // Zero what lies past this slice (it belongs to the next one).
  const Expr kk = b.begin_for("kk", 0, bk, ForKind::kParallel);
  b.begin_if(tilejit::ir::ge(k0 + kk, k_end));
  {
    const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    b.store(A_s, {i, kk}, tilejit::ir::make_float(0.0, f32));
    b.end_for();
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    b.store(B_s, {kk, j}, tilejit::ir::make_float(0.0, f32));
    b.end_for();
  }
  b.end_if();
  b.end_for();
  b.gemm(whole(A_s), whole(B_s), whole(C_l));
  b.end_for();
  b.copy(whole(C_l), corner(P, {s, by * bm, bx * bn}));
  b.end_for();
  b.fill(whole(C_l), 0);
  const Expr s2 = b.begin_for("s", 0, split_k);
  b.copy(corner(P, {s2, by * bm, bx * bn}), whole(P_s));
  const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
  b.store(C_l, {i, j}, load(C_l, {i, j}) + load(P_s, {i, j}));
  b.end_for();
  b.end_for();
  b.end_for();
  b.copy(whole(C_l), corner(C, {by * bm, bx * bn}));
  b.end_kernel();
  return b.finish();
}

/// Split-K GEMM with the partial sums in a workspace the compiler makes,
/// T.alloc_global((split_k, M, N)), and a per-tile counter in a zero_once
/// workspace: each slice's partial is written, then counted with
/// T.atomic_add; the block that sees the count reach split_k reduces the
/// partials into C and re-arms the counter to 0, so the next call finds it
/// zeroed without the arena being cleared again.
///
///   Partial = T.alloc_global((split_k, M, N), "float32")
///   Count = T.alloc_global((T.ceildiv(M, bm), T.ceildiv(N, bn)), "int32", init="zero_once")
///   with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
///       ...
///       for s in T.serial(split_k):
///           T.clear(C_l)
///           for ko in T.Pipelined(chunk // bk):   # chunk: ceildiv(K, split_k) rounded up to bk
///               T.copy(A[by * bm, s * chunk + ko * bk], A_s)
///               T.copy(B[s * chunk + ko * bk, bx * bn], B_s)
///               T.gemm(A_s, B_s, C_l)
///           T.copy(C_l, Partial[s, by * bm, bx * bn])
///           if T.get_thread_binding() == 0:   # a scalar atomic is each thread's
///               T.atomic_add(Count[by, bx], 1)
///       if Count[by, bx] == split_k:
///           T.clear(C_l)
///           for s in T.serial(split_k):
///               T.copy(Partial[s, by * bm, bx * bn], P_s)
///               for i, j in T.Parallel(bm, bn):
///                   C_l[i, j] += P_s[i, j]
///           T.copy(C_l, C[by * bm, bx * bn])
///           Count[by, bx] = 0
///
/// One block walks all the slices of its tile: the tile language has no
/// atomic that returns the previous value with acquire/release ordering, and
/// the CPU backend runs one T.Kernel per function, so the slices cannot yet
/// be spread over blocks that hand their partials to the last one. The slices
/// are whole K tiles (chunk is a multiple of bk), so no tile straddles two
/// slices and the copies' bounds checks alone mask K's end.
inline tilejit::PrimFunc splitk_gemm_counted(int64_t split_k, int64_t bm = 64, int64_t bn = 64,
                                             int64_t bk = 32) {
  TileBuilder b("splitk_gemm_counted");
  const Expr M = tilejit::ir::symbolic("M"), N = tilejit::ir::symbolic("N"),
             K = tilejit::ir::symbolic("K");
  const DataType f32 = DataType::float32();
  const Buffer A = b.tensor_param("A", {M, K}, f32);
  const Buffer B = b.tensor_param("B", {K, N}, f32);
  const Buffer C = b.tensor_param("C", {M, N}, f32);
  const Buffer P = b.alloc_global("Partial", {Expr(split_k), M, N}, f32);
  const Buffer count = b.alloc_global(
      "Count", {tilejit::ir::ceildiv(M, bm), tilejit::ir::ceildiv(N, bn)}, DataType::int32(),
      tilejit::WorkspaceInit::kZeroOnce);
  const auto blk = b.begin_kernel({tilejit::ir::ceildiv(N, bn), tilejit::ir::ceildiv(M, bm)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_s", {bm, bk}, f32, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {bk, bn}, f32, Scope::kShared);
  const Buffer P_s = b.alloc("P_s", {bm, bn}, f32, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {bm, bn}, f32, Scope::kFragment);
  const Expr chunk =
      b.let("chunk", tilejit::ir::ceildiv(tilejit::ir::ceildiv(K, split_k), bk) * bk);
  const Expr s = b.begin_for("s", 0, split_k);
  b.fill(whole(C_l), 0);
  const Expr ko = b.begin_for("ko", 0, tilejit::ir::ceildiv(chunk, bk), ForKind::kPipelined, 2);
  const Expr k0 = b.let("k0", s * chunk + ko * bk);
  b.copy(corner(A, {by * bm, k0}), whole(A_s));
  b.copy(corner(B, {k0, bx * bn}), whole(B_s));
  b.gemm(whole(A_s), whole(B_s), whole(C_l));
  b.end_for();
  b.copy(whole(C_l), corner(P, {s, by * bm, bx * bn}));
  // Note [Thread semantics]: a scalar atomic add is each thread's; one
  // thread counts the block's slice.
  b.begin_if(tilejit::ir::eq(b.thread_binding(0), Expr(0)));
  b.atomic_add(tilejit::ir::region(count, {Range{by, Expr(1)}, Range{bx, Expr(1)}}),
               tilejit::ir::make_int(1, DataType::int32()));
  b.end_if();
  b.end_for();
  b.begin_if(
      tilejit::ir::eq(load(count, {by, bx}), tilejit::ir::make_int(split_k, DataType::int32())));
  {
    b.fill(whole(C_l), 0);
    const Expr s2 = b.begin_for("s", 0, split_k);
    b.copy(corner(P, {s2, by * bm, bx * bn}), whole(P_s));
    const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    b.store(C_l, {i, j}, load(C_l, {i, j}) + load(P_s, {i, j}));
    b.end_for();
    b.end_for();
    b.end_for();
    b.copy(whole(C_l), corner(C, {by * bm, bx * bn}));
    b.store(count, {by, bx}, tilejit::ir::make_int(0, DataType::int32()));
  }
  b.end_if();
  b.end_kernel();
  return b.finish();
}

/// B = A * rsqrt(mean(A^2, axis=1) + eps) on [M, N] rows (N fixed), TileLang's
/// rms_norm example:
///
///   with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
///       A_s = T.alloc_shared((blk_m, N), dtype); A_l = T.alloc_fragment((blk_m, N), dtype)
///       A_pow = T.alloc_fragment((blk_m, N), dtype); A_sum = T.alloc_fragment((blk_m,), dtype)
///       T.copy(A[bx * blk_m:(bx + 1) * blk_m, :], A_s)
///       T.copy(A_s, A_l)
///       for i, j in T.Parallel(blk_m, N): A_pow[i, j] = A_l[i, j] * A_l[i, j]
///       T.reduce_sum(A_pow, A_sum, dim=1)
///       for i in T.Parallel(blk_m): A_sum[i] = T.rsqrt(A_sum[i] / N + 1e-12)
///       for i, j in T.Parallel(blk_m, N): A_l[i, j] *= A_sum[i]
///       T.copy(A_l, B[bx * blk_m:(bx + 1) * blk_m, :])
inline tilejit::PrimFunc rms_norm(int64_t n, int64_t blk_m = 8) {
  TileBuilder b("rms_norm");
  const DataType f32 = DataType::float32();
  const Expr M = tilejit::ir::symbolic("M");
  const Buffer A = b.tensor_param("A", {M, Expr(n)}, f32);
  const Buffer B = b.tensor_param("B", {M, Expr(n)}, f32);
  const Expr bx = b.begin_kernel({tilejit::ir::ceildiv(M, blk_m)}, {128})[0];
  const Buffer A_s = b.alloc("A_s", {blk_m, n}, f32, Scope::kShared);
  const Buffer A_l = b.alloc("A_l", {blk_m, n}, f32, Scope::kFragment);
  const Buffer A_pow = b.alloc("A_pow", {blk_m, n}, f32, Scope::kFragment);
  const Buffer A_sum = b.alloc("A_sum", {blk_m}, f32, Scope::kFragment);
  b.copy(tilejit::ir::region(A, {Range{bx * blk_m, Expr(blk_m)}, Range{Expr(0), Expr(n)}}),
         whole(A_s));
  b.copy(whole(A_s), whole(A_l));
  {
    const Expr i = b.begin_for("i", 0, blk_m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(A_pow, {i, j}, load(A_l, {i, j}) * load(A_l, {i, j}));
    b.end_for();
    b.end_for();
  }
  b.reduce(ReduceKind::kSum, whole(A_pow), whole(A_sum), 1);
  {
    const Expr i = b.begin_for("i", 0, blk_m, ForKind::kParallel);
    b.store(A_sum, {i},
            tilejit::ir::call_intrinsic(
                tilejit::ir::Intrinsic::kRsqrt,
                {tilejit::ir::div(load(A_sum, {i}), tilejit::ir::make_float(double(n), f32)) +
                 tilejit::ir::make_float(1e-12, f32)}));
    b.end_for();
  }
  {
    const Expr i = b.begin_for("i", 0, blk_m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(A_l, {i, j}, load(A_l, {i, j}) * load(A_sum, {i}));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(A_l),
         tilejit::ir::region(B, {Range{bx * blk_m, Expr(blk_m)}, Range{Expr(0), Expr(n)}}));
  b.end_kernel();
  return b.finish();
}

/// Y = softmax(X, axis=1) on [M, N] rows (N fixed):
///
///   with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
///       X_l = T.alloc_fragment((blk_m, N), dtype)
///       row_max = T.alloc_fragment((blk_m,), dtype); row_sum = ...
///       T.copy(X[bx * blk_m, 0], X_l)
///       T.reduce_max(X_l, row_max, dim=1, clear=True)
///       for i, j in T.Parallel(blk_m, N): X_l[i, j] = T.exp(X_l[i, j] - row_max[i])
///       T.reduce_sum(X_l, row_sum, dim=1)
///       for i, j in T.Parallel(blk_m, N): X_l[i, j] = X_l[i, j] / row_sum[i]
///       T.copy(X_l, Y[bx * blk_m, 0])
inline tilejit::PrimFunc softmax(int64_t n, int64_t blk_m = 4) {
  TileBuilder b("softmax");
  const DataType f32 = DataType::float32();
  const Expr M = tilejit::ir::symbolic("M");
  const Buffer X = b.tensor_param("X", {M, Expr(n)}, f32);
  const Buffer Y = b.tensor_param("Y", {M, Expr(n)}, f32);
  const Expr bx = b.begin_kernel({tilejit::ir::ceildiv(M, blk_m)}, {128})[0];
  const Buffer X_l = b.alloc("X_l", {blk_m, n}, f32, Scope::kFragment);
  const Buffer mx = b.alloc("row_max", {blk_m}, f32, Scope::kFragment);
  const Buffer sm = b.alloc("row_sum", {blk_m}, f32, Scope::kFragment);
  b.copy(corner(X, {bx * blk_m, Expr(0)}), whole(X_l));
  b.reduce(ReduceKind::kMax, whole(X_l), whole(mx), 1, true);
  {
    const Expr i = b.begin_for("i", 0, blk_m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(X_l, {i, j},
            tilejit::ir::call_intrinsic(tilejit::ir::Intrinsic::kExp,
                                        {load(X_l, {i, j}) - load(mx, {i})}));
    b.end_for();
    b.end_for();
  }
  b.reduce(ReduceKind::kSum, whole(X_l), whole(sm), 1);
  {
    const Expr i = b.begin_for("i", 0, blk_m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(X_l, {i, j}, tilejit::ir::div(load(X_l, {i, j}), load(sm, {i})));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(X_l), corner(Y, {bx * blk_m, Expr(0)}));
  b.end_kernel();
  return b.finish();
}

}  // namespace examples::tile

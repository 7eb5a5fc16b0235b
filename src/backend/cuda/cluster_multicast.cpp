// Note [Cluster multicast] in cluster_multicast.h.
#include "backend/cuda/cluster_multicast.h"

#include <string>

#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Measured on the H200 (TileLang's GEMMs, 128 x 128 x 32 tiles): a grid of
// 64 blocks ran 2-6% slower in pairs, grids of 1024 and more 7-35% faster.
constexpr int64_t kMinBlocks = 256;
// Measured there too: 128 x 128 tiles (64 multiply-adds per element loaded)
// gained, TileLang's benchmark GEMM's 128 x 256 tiles (85) did not (763-786
// TFLOP/s in pairs against 728-796 alone at 8192^3, 694-696 against
// 699-708 at 4096^3): their loads are not what they wait for.
constexpr int64_t kMaxReuse = 64;

// Whether the region of `copy` as the prefetch issues it reads `var`.
bool region_reads(const ir::CopyOp* copy, const PipelinePlan& pipelines, uint64_t var) {
  return ir::reads_var(pipelines.issued(copy).src, var);
}

// Why half of `whole`'s rows cannot be loaded apart ("" when they can).
std::string unsplittable(const ir::CopyOp* c, const TmaCopy& whole, const TensorMaps& maps) {
  const int64_t elem = c->dst.buffer.dtype().bytes();
  const int64_t half_bytes = whole.rows / 2 * whole.panel_cols * elem;
  const int64_t align = maps.args[size_t(whole.map)].tensor_map.swizzle > 0 ? 1024 : 128;
  if (whole.rows % 2 == 0 && half_bytes % align == 0) return "";
  return "half of " + c->dst.buffer.name() + "'s " + str(whole.rows) + " rows is " +
         str(half_bytes) + " bytes a panel, not a multiple of " + str(align);
}

}  // namespace

ClusterPlan plan_cluster(const ir::KernelStmt& kernel, const WarpSpecialization& ws,
                         const PipelinePlan& pipelines, const TmaPlan& tma, bool enabled,
                         TensorMaps* maps) {
  ClusterPlan plan;
  if (ws.loop == nullptr) return plan;
  auto refuse = [&](const std::string& why) {
    plan.refused = "no cluster: " + why;
    return plan;
  };
  // Pairs are for GEMM main loops: of other loops nothing is said.
  if (ws.body.size() != 1 || ws.body[0].as<ir::GemmOp>() == nullptr ||
      !ws.schedule.groups.empty()) {
    return plan;
  }
  if (!enabled) return refuse("turned off (tl.disable_cluster_multicast)");
  // The gemm's multiply-adds per element its tiles load: rows x columns /
  // (rows + columns) of its accumulator.
  const ir::Buffer& acc = ws.body[0].as<ir::GemmOp>()->c.buffer;
  if (acc.rank() != 2 || !acc.shape()[0].is_const() || !acc.shape()[1].is_const()) {
    return refuse("the gemm's accumulator is not 2-D of a constant shape");
  }
  const int64_t rows = acc.shape()[0].int_value(), cols = acc.shape()[1].int_value();
  if (rows * cols > kMaxReuse * (rows + cols)) {
    return refuse("a " + str(rows) + " x " + str(cols) + " tile reuses each loaded element " +
                  str(rows * cols / (rows + cols)) + " times, over " + str(kMaxReuse));
  }
  int64_t blocks = 1;
  for (const ir::Expr& e : kernel.grid) blocks *= e.is_const() ? e.int_value() : kMinBlocks;
  if (blocks < kMinBlocks) {
    return refuse("a grid of " + str(blocks) + " blocks, under " + str(kMinBlocks));
  }
  std::string why;
  // Blocks 2i and 2i + 1 of the hardware's grid dimension `hw`, which run
  // with block indices that differ in `index` alone.
  auto pair = [&](int hw, const ir::Expr& index) {
    if (ir::reads_var(ws.loop->min, index.var_id()) ||
        ir::reads_var(ws.loop->extent, index.var_id())) {
      if (why.empty()) why = "the loop's bounds read " + index.var_name();
      return false;
    }
    for (const ir::CopyOp* c : pipelines.loops.begin()->second) {
      if (region_reads(c, pipelines, index.var_id())) continue;
      const TmaCopy& whole = tma.copies.at(c);
      if (std::string no = unsplittable(c, whole, *maps); !no.empty()) {
        if (why.empty()) why = no;
        continue;
      }
      runtime::AbiArg half_map = maps->args[size_t(whole.map)];
      half_map.tensor_map.box[whole.rows_box] = uint32_t(whole.rows / 2);
      plan.halves.emplace(c, maps->replace(whole.map, half_map));
    }
    if (plan.halves.empty()) {
      if (why.empty()) why = "every tile of the loop depends on " + index.var_name();
      return false;
    }
    plan.dim = hw;
    return true;
  };
  auto even = [](const ir::Expr& e) { return e.is_const() && e.int_value() % 2 == 0; };
  if (kernel.raster.enabled() && kernel.block_vars.size() >= 2) {
    // T.use_swizzle (rasterize.h): under row order, hardware blocks x and
    // x + 1 (x even) run (bx, by) and (bx, by + 1) where the grid's x
    // extent, the panel's rows and the last panel's rows are even; under
    // column order, (bx, by) and (bx + 1, by) where the x extent, the
    // panel's columns and the last panel's columns are.
    const ir::Expr &gx = kernel.grid[0], &gy = kernel.grid[1];
    const int64_t panel = kernel.raster.panel_size;
    const bool rows = kernel.raster.order == ir::RasterOrder::kRow;
    const ir::Expr& along = rows ? gy : gx;
    if (even(gx) && gy.is_const() && panel % 2 == 0 && along.int_value() % panel % 2 == 0) {
      if (pair(0, kernel.block_vars[rows ? 1 : 0])) return plan;
    } else {
      why = "T.use_swizzle(" + str(panel) + ") does not keep blocks 2i and 2i + 1 in one " +
            (rows ? "column" : "row") + " of tiles";
    }
    return refuse(why);
  }
  for (size_t d = 0; d < 2 && d < kernel.block_vars.size() && d < kernel.grid.size(); ++d) {
    if (!even(kernel.grid[d])) {
      if (why.empty()) {
        why = "the grid's " + std::string(d == 0 ? "x" : "y") + " extent " +
              ir::to_string(kernel.grid[d]) + " is not a constant even number";
      }
      continue;
    }
    if (pair(int(d), kernel.block_vars[d])) return plan;
  }
  return refuse(why.empty() ? "a grid of one dimension that cannot be paired" : why);
}

}  // namespace tilejit::cuda

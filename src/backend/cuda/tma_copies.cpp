// Note [TMA copies] in tma_copies.h.
#include "backend/cuda/tma_copies.h"

#include <algorithm>
#include <set>

#include "backend/common/accesses.h"

namespace tilejit::cuda {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The copy's TmaCopy, or why it has none (a map added to `maps` then).
std::string plan_copy(const ir::CopyOp& op, int swizzle, const std::vector<std::string>& symbols,
                      const std::set<uint64_t>& written, TensorMaps* maps, TmaCopy* out) {
  const ir::Buffer& src = op.src.buffer;
  const ir::Buffer& dst = op.dst.buffer;
  if (op.disable_tma) return "not tma: T.copy(..., disable_tma=True)";
  if (src.param() < 0) return "not tma: " + src.name() + " is not a tensor parameter";
  if (written.count(src.id())) return "not tma: the kernel writes " + src.name();
  if (src.dtype() != dst.dtype()) return "not tma: a dtype conversion";
  const int rank = int(src.rank());
  if (rank < 2 || rank > runtime::AbiTensorMap::kMaxRank) {
    return "not tma: " + src.name() + " has " + str(rank) + " dimensions (TMA reads 2 to 5 here)";
  }
  if (dst.rank() != 2 || !dst.shape()[0].is_const() || !dst.shape()[1].is_const()) {
    return "not tma: the tile is not 2-D of a constant shape";
  }
  const int64_t rows = dst.shape()[0].int_value(), cols = dst.shape()[1].int_value();
  const int64_t elem = dst.dtype().bytes();
  if (int64_t(op.src.ranges.size()) != rank) return "not tma: the region's rank";
  // The region is the tile: the innermost extent its columns, one other its
  // rows, every other 1.
  int rows_dim = -1;
  for (int d = 0; d < rank; ++d) {
    const ir::Expr& e = op.src.ranges[size_t(d)].extent;
    if (!e.is_const()) return "not tma: a region of a symbolic extent";
    const int64_t n = e.int_value();
    if (d == rank - 1) {
      if (n != cols) return "not tma: the region's rows are not the tile's";
    } else if (n == rows && rows_dim < 0 && n != 1) {
      rows_dim = d;
    } else if (n != 1) {
      return "not tma: the region is not the tile";
    }
  }
  if (rows_dim < 0) return "not tma: the region is not the tile";
  if (rows > 256) return "not tma: " + str(rows) + " rows (a TMA box has at most 256)";
  const int64_t panel_cols = swizzle / elem;
  if (cols % panel_cols != 0) return "not tma: the tile's rows are not whole panels";
  if (rows * swizzle % 1024 != 0) {
    return "not tma: a panel of " + str(rows) + " rows of " + str(swizzle) +
           " bytes does not keep the next one 1024-aligned";
  }
  runtime::AbiArg a;
  a.kind = runtime::AbiArgKind::kTensorMap;
  a.name = src.name();
  a.source = src.param();
  a.dtype = src.dtype();
  a.size = 128;
  a.align = 64;
  runtime::AbiTensorMap& t = a.tensor_map;
  t.rank = uint8_t(rank);
  t.swizzle = uint8_t(swizzle);
  // Each pitch (the bytes of the dimensions inside) must be a multiple of
  // 16: its constant factors' product must be, whatever the symbols are.
  int64_t pitch = elem;
  std::string symbols_inside;
  for (int d = 0; d < rank; ++d) {
    const ir::Expr& e = src.shape()[size_t(rank - 1 - d)];  // innermost first
    if (d > 0 && pitch % 16 != 0) {
      if (!symbols_inside.empty()) {
        return "not tma: a pitch of " + src.name() + " is " + str(pitch) + " bytes times " +
               symbols_inside + ", which need not be a multiple of 16 bytes";
      }
      return "not tma: a row of " + src.name() + " is " + str(pitch) +
             " bytes, not a multiple of 16";
    }
    if (e.is_const()) {
      t.dims[d] = e.int_value();
    } else if (e.is_var()) {
      auto it = std::find(symbols.begin(), symbols.end(), e.var_name());
      if (it == symbols.end()) return "not tma: " + src.name() + "'s extent is not a symbol";
      t.dims[d] = -1 - int64_t(it - symbols.begin());
    } else {
      return "not tma: " + src.name() + "'s extent " + ir::to_string(e) + " is an expression";
    }
    const int sd = rank - 1 - d;  // the source dimension
    t.box[d] = uint32_t(d == 0 ? panel_cols : sd == rows_dim ? rows : 1);
    if (e.is_const()) {
      pitch *= e.int_value();
    } else {
      symbols_inside += (symbols_inside.empty() ? "" : " * ") + ir::to_string(e);
    }
  }
  out->map = maps->add(a);
  out->panel_cols = panel_cols;
  out->panels = int(cols / panel_cols);
  out->rows = rows;
  out->cols = cols;
  out->bytes = rows * cols * elem;
  return "";
}

}  // namespace

int TensorMaps::add(const runtime::AbiArg& a) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == a) return int(i);
  }
  args.push_back(a);
  return int(args.size()) - 1;
}

TmaPlan plan_tma(const ir::KernelStmt& kernel,
                 const std::vector<std::string>& symbols, const PipelinePlan& pipelines,
                 const FragmentChoice& choice, bool enabled, TensorMaps* maps) {
  TmaPlan plan;
  if (!enabled || pipelines.loops.empty()) return plan;
  backend::Accessed written;  // its writes: the buffers the kernel writes
  written.visit(kernel.body);
  for (const auto& [loop, copies] : pipelines.loops) {
    for (const ir::CopyOp* copy : copies) {
      auto sw = choice.swizzled.find(copy->dst.buffer.id());
      if (sw == choice.swizzled.end()) continue;
      TmaCopy c;
      std::string why = plan_copy(*copy, sw->second, symbols, written.writes, maps, &c);
      if (why.empty()) {
        plan.copies.emplace(copy, c);
      } else {
        plan.refused.emplace(copy, std::move(why));
      }
    }
  }
  return plan;
}

}  // namespace tilejit::cuda

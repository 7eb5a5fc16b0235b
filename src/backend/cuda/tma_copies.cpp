// Note [TMA copies] in tma_copies.h.
#include "backend/cuda/tma_copies.h"

#include <algorithm>
#include <set>

#include "backend/common/accesses.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The TmaCopy of a copy between the tensor `global` (a region of it) and
// the 2-D shared `tile` in panels `swizzle` bytes wide (0: one unswizzled
// box of the tile's rows), or why it has none (a map added to `maps` then).
std::string plan_box(const ir::Region& global, const ir::Buffer& tile, int swizzle,
                     const std::vector<std::string>& symbols, TensorMaps* maps, TmaCopy* out) {
  const ir::Buffer& src = global.buffer;
  if (src.param() < 0) return "not tma: " + src.name() + " is not a tensor parameter";
  if (src.dtype() != tile.dtype()) return "not tma: a dtype conversion";
  const int rank = int(src.rank());
  if (rank < 2 || rank > runtime::AbiTensorMap::kMaxRank) {
    return "not tma: " + src.name() + " has " + str(rank) + " dimensions (TMA reads 2 to 5 here)";
  }
  if (tile.rank() != 2 || !tile.shape()[0].is_const() || !tile.shape()[1].is_const()) {
    return "not tma: the tile is not 2-D of a constant shape";
  }
  const int64_t rows = tile.shape()[0].int_value(), cols = tile.shape()[1].int_value();
  const int64_t elem = tile.dtype().bytes();
  if (int64_t(global.ranges.size()) != rank) return "not tma: the region's rank";
  // The region is the tile: the innermost extent its columns, one other its
  // rows, every other 1.
  int rows_dim = -1;
  for (int d = 0; d < rank; ++d) {
    const ir::Expr& e = global.ranges[size_t(d)].extent;
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
  const int64_t panel_cols = swizzle > 0 ? swizzle / elem : cols;
  if (swizzle > 0) {
    if (cols % panel_cols != 0) return "not tma: the tile's rows are not whole panels";
    if (rows * swizzle % 1024 != 0) {
      return "not tma: a panel of " + str(rows) + " rows of " + str(swizzle) +
             " bytes does not keep the next one 1024-aligned";
    }
  } else {
    if (cols > 256) return "not tma: " + str(cols) + " columns (a TMA box has at most 256)";
    if (cols * elem % 16 != 0) {
      return "not tma: a row of the tile is " + str(cols * elem) + " bytes, not a multiple of 16";
    }
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
  out->rows_box = rank - 1 - rows_dim;
  out->panel_cols = panel_cols;
  out->panels = int(cols / panel_cols);
  out->rows = rows;
  out->cols = cols;
  out->bytes = rows * cols * elem;
  return "";
}

// A load's TmaCopy (Note [TMA copies]), or why it has none.
std::string plan_load(const ir::CopyOp& op, int swizzle, const std::vector<std::string>& symbols,
                      const std::set<uint64_t>& written, TensorMaps* maps, TmaCopy* out) {
  if (op.disable_tma) return "not tma: T.copy(..., disable_tma=True)";
  const ir::Buffer& src = op.src.buffer;
  if (src.param() >= 0 && written.count(src.id())) return "not tma: the kernel writes " + src.name();
  return plan_box(op.src, op.dst.buffer, swizzle, symbols, maps, out);
}

// The copies from a shared tile to a tensor parameter, each a TMA store or
// refused with its reason (Note [TMA stores]).
struct Stores : ir::IRVisitor {
  const std::set<uint64_t>* staged = nullptr;  // the pipelines' stage tiles
  const std::set<uint64_t>* read = nullptr;    // the buffers the kernel reads
  const std::vector<std::string>* symbols = nullptr;
  TensorMaps* maps = nullptr;
  TmaPlan* plan = nullptr;
  const transform::ThreadUniformity* uniformity = nullptr;
  int per_thread = 0;  // inside T.Parallel, or where the threads go different ways
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    const bool own = op->for_kind == ir::ForKind::kParallel || uniformity->divergent(s);
    per_thread += own;
    ir::IRVisitor::visit_for(op, s);
    per_thread -= own;
  }
  void visit_if(const ir::IfStmt* op, const ir::Stmt& s) override {
    const bool own = uniformity->divergent(s);
    per_thread += own;
    ir::IRVisitor::visit_if(op, s);
    per_thread -= own;
  }
  void visit_while(const ir::WhileStmt* op, const ir::Stmt& s) override {
    const bool own = uniformity->divergent(s);
    per_thread += own;
    ir::IRVisitor::visit_while(op, s);
    per_thread -= own;
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    const ir::Buffer& tile = op->src.buffer;
    const ir::Buffer& dst = op->dst.buffer;
    if (tile.scope() != ir::Scope::kShared || dst.scope() != ir::Scope::kGlobal ||
        dst.param() < 0 || per_thread > 0 ||
        transform::ThreadUniformity::per_thread_op(s)) {
      return;
    }
    std::string why;
    TmaCopy c;
    const uint64_t id = tile.id();
    if (op->disable_tma) {
      why = "not tma: T.copy(..., disable_tma=True)";
    } else if ((tile->layout.kind() != ir::Layout::Kind::kRowMajor && swizzle_of(tile) == 0) ||
               rows_padded(tile) || staged->count(id)) {
      why = "not tma: " + tile.name() + " is not a plain row-major or swizzled tile";
    } else if (read->count(dst.id())) {
      why = "not tma: the kernel reads " + dst.name();
    } else {
      // Note [Swizzled store tiles]: a box per panel.
      why = plan_box(op->dst, tile, swizzle_of(tile), *symbols, maps, &c);
    }
    if (why.empty()) {
      plan->stores.emplace(op, c);
    } else {
      plan->refused.emplace(op, "not tma_store: " + why.substr(std::string("not tma: ").size()));
    }
  }
};

}  // namespace

int TensorMaps::add(const runtime::AbiArg& a) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == a) {
      ++users[i];
      return int(i);
    }
  }
  args.push_back(a);
  users.push_back(1);
  return int(args.size()) - 1;
}

int TensorMaps::replace(int map, const runtime::AbiArg& a) {
  if (users[size_t(map)] == 1) {
    args[size_t(map)] = a;
    return map;
  }
  --users[size_t(map)];
  return add(a);
}

TmaPlan plan_tma(const ir::KernelStmt& kernel,
                 const std::vector<std::string>& symbols, const PipelinePlan& pipelines,
                 const transform::ThreadUniformity& uniformity,
                 bool enabled, TensorMaps* maps) {
  TmaPlan plan;
  if (!enabled) return plan;
  backend::Accessed accessed;  // the buffers the kernel reads and writes
  accessed.visit(kernel.body);
  std::set<uint64_t> staged;
  for (const auto& [loop, copies] : pipelines.loops) {
    for (const ir::CopyOp* copy : copies) staged.insert(copy->dst.buffer.id());
  }
  Stores stores;
  stores.uniformity = &uniformity;
  stores.staged = &staged;
  stores.read = &accessed.reads;
  stores.symbols = &symbols;
  stores.maps = maps;
  stores.plan = &plan;
  stores.visit(kernel.body);
  for (const auto& [loop, copies] : pipelines.loops) {
    for (const ir::CopyOp* copy : copies) {
      const int swizzle = swizzle_of(copy->dst.buffer);
      if (swizzle == 0) continue;
      TmaCopy c;
      std::string why = plan_load(*copy, swizzle, symbols, accessed.writes, maps, &c);
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

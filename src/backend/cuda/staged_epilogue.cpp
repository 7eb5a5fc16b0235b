// Note [Staged epilogues] in staged_epilogue.h.
#include "backend/cuda/staged_epilogue.h"

#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/fragment_uses.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

bool is_16bit_float(DataType t) { return t == DataType::bfloat16() || t == DataType::float16(); }

}  // namespace

bool stores_accumulator(const ir::CopyOp& c, uint64_t acc) {
  const ir::Buffer& src = c.src.buffer;
  if (src.id() != acc || src.rank() != 2 || dim(src, 0) <= 0 || dim(src, 1) <= 0 ||
      !is_whole(c.src) || c.dst.buffer.scope() != ir::Scope::kGlobal) {
    return false;
  }
  std::vector<int64_t> tile;
  for (const ir::Range& r : c.dst.ranges) {
    if (!r.extent.is_const()) return false;
    if (r.extent.int_value() != 1) tile.push_back(r.extent.int_value());
  }
  return tile == std::vector<int64_t>{dim(src, 0), dim(src, 1)};
}

namespace {

class Stage : public ir::IRMutator {
 public:
  Stage(size_t index, uint64_t acc) : index_(index), acc_(acc) {}
  /// The shared tile it stages the store through; 0 where none.
  uint64_t tile() const { return tile_; }
  /// Why the accumulator's store was not staged ("" when it was or none).
  const std::string& why() const { return why_; }

 private:
  ir::Stmt visit_kernel(const ir::KernelStmt* op, const ir::Stmt& s) override {
    if (kernels_++ != index_ || op->body.kind() != ir::StmtKind::kSeq) return s;
    std::vector<ir::Stmt> stmts = op->body.as<ir::SeqStmt>()->stmts;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const auto* c = stmts[i].as<ir::CopyOp>();
      if (c == nullptr || !stores_accumulator(*c, acc_)) continue;
      if (!is_16bit_float(c->dst.buffer.dtype())) {
        why_ = "not staged: a " + c->dst.buffer.dtype().name() +
               " tensor (Note [Staged epilogues] stages stores to bf16 and fp16 ones)";
        continue;
      }
      const ir::Span span = stmts[i].span();
      const ir::Buffer& acc = c->src.buffer;
      // Row-major, as transform::lower left every tile (Note [Layouts]).
      const ir::Buffer tile = ir::Buffer::make(acc.name() + "_staged", acc.shape(),
                                               c->dst.buffer.dtype(), ir::Scope::kShared, span)
                                  .with_layout(ir::Layout::row_major());
      stmts[i] = ir::make_stmt<ir::SeqStmt>(
          std::vector<ir::Stmt>{
              ir::make_stmt<ir::CopyOp>(c->src, whole_slices(tile), span, c->disable_tma),
              ir::make_stmt<ir::CopyOp>(whole_slices(tile), c->dst, span, c->disable_tma)},
          span);
      // (declared with the kernel's other tiles, Note [Allocations are the kernel's])
      stmts.insert(stmts.begin(), ir::make_stmt<ir::AllocStmt>(tile, span));
      tile_ = tile.id();
      break;
    }
    if (tile_ == 0) return s;
    return ir::make_stmt<ir::KernelStmt>(op->grid, op->block_vars, op->threads, op->thread_vars,
                                         ir::make_stmt<ir::SeqStmt>(std::move(stmts),
                                                                    op->body.span()),
                                         op->span, op->raster);
  }

  size_t index_;
  uint64_t acc_;
  size_t kernels_ = 0;
  uint64_t tile_ = 0;
  std::string why_;
};

}  // namespace

std::optional<ir::PrimFunc> stage_epilogue(const ir::PrimFunc& f, size_t index,
                                           StagedEpilogue* epilogue) {
  Stage stage(index, epilogue->acc);
  ir::TileBody body = *f.tile();
  body.stmt = stage.mutate(body.stmt);
  epilogue->tile = stage.tile();
  if (epilogue->tile == 0) {
    epilogue->refused = stage.why();
    return std::nullopt;
  }
  ir::PrimFunc out = f;
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::cuda

#include "tilejit/ir/stmt.h"

#include <iterator>

#include "tilejit/ir/prim_func.h"

namespace tilejit::ir {

const char* stmt_kind_name(StmtKind k) {
  static constexpr const char* kNames[] = {
      "Kernel", "Alloc", "Seq",  "For",  "If",     "While",     "Break", "Continue", "Store",
      "Let",    "Evaluate", "Sync", "Copy", "Gemm", "Fill", "Reduce", "AtomicAdd", "Print"};
  static_assert(std::size(kNames) == size_t(StmtKind::kPrint) + 1);
  return size_t(k) < std::size(kNames) ? kNames[size_t(k)] : "?";
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kUnroll: return "unroll";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kPipelined: return "pipelined";
  }
  return "?";
}

const char* raster_order_name(RasterOrder order) {
  return order == RasterOrder::kColumn ? "col" : "row";
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kAbsSum: return "abssum";
    case ReduceKind::kAbsMax: return "absmax";
  }
  return "?";
}

Stmt seq(std::vector<Stmt> stmts, Span span) {
  if (stmts.size() == 1) return std::move(stmts[0]);
  return make_stmt<SeqStmt>(std::move(stmts), std::move(span));
}

std::vector<const KernelStmt*> TileBody::kernels() const {
  std::vector<const KernelStmt*> out;
  if (const KernelStmt* k = stmt.as<KernelStmt>()) {
    out.push_back(k);
  } else if (const SeqStmt* s = stmt.as<SeqStmt>()) {
    for (const Stmt& x : s->stmts) {
      if (const KernelStmt* k = x.as<KernelStmt>()) out.push_back(k);
    }
  }
  return out;
}

}  // namespace tilejit::ir

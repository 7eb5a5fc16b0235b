// The tile ops of the CUDA lowering (tile_codegen.h): the shared lowering's
// library calls (backend/common/lower_tile_ops.cpp) for operands in memory,
// this file's for operands in registers (Note [Register accumulators]), and
// the pipelined loops' prefetches (Note [Software pipelining]).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/common/accesses.h"
#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/tile_memory.h"
#include "backend/cuda/warpgroup_gemms.h"
#include "core/string_literal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"

namespace tilejit::cuda {

using backend::Accessed;
using backend::meets;
namespace {

using ir::Expr;

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

// The group's barrier, which also makes what the threads wrote to global
// memory before it visible to the block's threads after it.
void CudaTileCodegen::emit_sync(const ir::Stmt& s) {
  if (parallel_depth_ > 0) sync_in_parallel(s);
  line("// T.sync_threads()");
  sync();
}

void CudaTileCodegen::emit_tile_op(const ir::Stmt& s) {
  // A thread's own op (Note [Thread semantics]): a scalar atomic, an op into
  // a local buffer, and in a T.Parallel nest T.atomic_add / T.print of one
  // element: the thread makes all of it, with no barrier.
  const bool own = transform::ThreadUniformity::per_thread_op(s) ||
                   (own_code() && (s.kind() == ir::StmtKind::kAtomicAdd ||
                                   s.kind() == ir::StmtKind::kPrint));
  if (own) {
    if (!own_code()) {
      Accessed a;
      a.visit(s);
      enter(a.reads, a.writes);
    }
    per_thread_ += 1;
    switch (s.kind()) {
      case ir::StmtKind::kCopy: backend::lower_copy(*this, *s.as<ir::CopyOp>()); break;
      case ir::StmtKind::kGemm: backend::lower_gemm(*this, *s.as<ir::GemmOp>()); break;
      case ir::StmtKind::kFill: backend::lower_fill(*this, *s.as<ir::FillOp>()); break;
      case ir::StmtKind::kReduce: backend::lower_reduce(*this, *s.as<ir::ReduceOp>()); break;
      case ir::StmtKind::kAtomicAdd: backend::lower_atomic_add(*this, *s.as<ir::AtomicAddOp>()); break;
      case ir::StmtKind::kPrint: backend::lower_print(*this, *s.as<ir::PrintOp>()); break;
      default: ir::unhandled_stmt("CUDA tile codegen", s);
    }
    per_thread_ -= 1;
    return;
  }
  if (own_code()) {
    fail(ErrorKind::kValueError, s.span(), "tile op",
         "a tile op inside a T.Parallel loop; the CUDA backend runs T.copy, T.gemm, T.fill and "
         "the reductions on the whole block (only T.atomic_add and T.print may take one "
         "element in a T.Parallel loop)");
  }
  Accessed a;
  a.visit(s);
  // A row reduction across warps, through the scratch next in turn.
  const FragmentLayout* across =
      s.kind() == ir::StmtKind::kReduce ? scratch_layout(*s.as<ir::ReduceOp>()) : nullptr;
  const uint64_t scratch = kScratchIds[next_scratch_];
  if (across != nullptr) a.writes.insert(scratch);
  enter(a.reads, a.writes);
  if (emit_register_op(s)) {
    if (across != nullptr) barrier_inside(a.reads, a.writes, scratch, across->threads());
    return;
  }
  if (s.kind() == ir::StmtKind::kCopy && async_copy(*s.as<ir::CopyOp>())) {
    pending_async_ = true;  // copy.h uses cp.async
  }
  switch (s.kind()) {
    case ir::StmtKind::kCopy: emit_copy(*s.as<ir::CopyOp>()); break;
    case ir::StmtKind::kGemm: backend::lower_gemm(*this, *s.as<ir::GemmOp>()); break;
    case ir::StmtKind::kFill: backend::lower_fill(*this, *s.as<ir::FillOp>()); break;
    case ir::StmtKind::kReduce: backend::lower_reduce(*this, *s.as<ir::ReduceOp>()); break;
    case ir::StmtKind::kAtomicAdd:
      backend::lower_atomic_add(*this, *s.as<ir::AtomicAddOp>());
      break;
    case ir::StmtKind::kPrint:
      line("if (tilejit_tid == " + str(group_.first) + ") {");
      indent();
      backend::lower_print(*this, *s.as<ir::PrintOp>());
      dedent();
      line("}");
      break;
    default: ir::unhandled_stmt("CUDA tile codegen", s);
  }
}

void CudaTileCodegen::emit_prefetch(const ir::ForStmt& op,
                                    const std::vector<const ir::CopyOp*>& copies,
                                    const std::string& iteration, const std::string& stage,
                                    const std::string& guard) {
  // The copies read the loop variable as `iteration` and write `stage`;
  // values their regions read that the loop computes are recomputed for
  // `iteration` (Note [Prefetched addresses]), under `guard` as the copy is.
  const std::string k = var_name(op.var);
  line("{");
  indent();
  const std::string it = fresh(k + "_ahead");
  line("[[maybe_unused]] const int64_t " + it + " = " + iteration + ";");
  line("if (" + guard + ") {");
  indent();
  bind_var(op.var, it);
  auto stage_tile = [&](const ir::Buffer& dst) {
    const auto& [base, stride] = staged_.at(dst.id());
    return "(" + base + " + (" + stage + ") * " + str(stride) + ")";
  };
  // Note [TMA copies]: one thread issues them, each on its stage's barrier.
  if (!tma_bars_.empty()) {
    line("if (tilejit_tid == 0) {");
    indent();
    for (const ir::CopyOp* copy : copies) {
      auto t = tma_.copies.find(copy);
      if (t == tma_.copies.end()) continue;
      const std::string bar = "&" + tma_bars_.at(copy) + "[" + stage + "]";
      line("tilejit::cuda::mbar_expect_tx(" + bar + ", " + str(t->second.bytes) + ");");
      emit_tma_copy(pipelines_.issued(copy), t->second, stage_tile(copy->dst.buffer), bar);
    }
    dedent();
    line("}");
  }
  bool async = false;
  for (const ir::CopyOp* copy : copies) {
    if (tma_.copies.count(copy)) continue;
    async = true;
    const ir::Buffer& dst = copy->dst.buffer;
    backend::BufferAccess a = access(dst, copy->span, "T.copy");
    const backend::BufferAccess saved = a;
    a.name = a.data = stage_tile(dst);
    set_access(dst, a);
    emit_copy(pipelines_.issued(copy));
    set_access(dst, saved);
  }
  bind_var(op.var, k);
  dedent();
  line("}");
  if (async) line("tilejit::cuda::async_commit();");
  dedent();
  line("}");
}

void CudaTileCodegen::emit_mbar_wait(const std::string& bars, const std::string& stage,
                                     const std::string& parity) {
  const std::string bar = "&" + bars + "[" + stage + "], " + parity;
  if (!debug_bounds) {
    line("tilejit::cuda::mbar_wait(" + bar + ");");
    return;
  }
  line("tilejit::cuda::mbar_wait_checked(" + bar + ", " + c_string_literal(func().name) + ", " +
       c_string_literal(bars) + ");");
}

void CudaTileCodegen::emit_tma_copy(const ir::CopyOp& copy, const TmaCopy& how,
                                    const std::string& tile, const std::string& bar,
                                    int half_map, const std::string& rank) {
  const bool half = half_map >= 0;
  line("// T.copy(" + ir::to_string(copy.src) + ", " + ir::to_string(copy.dst) + "): tma, " +
       str(how.panels) + (how.panels == 1 ? " box" : " boxes") +
       (half ? ", this block's half of the rows into both blocks of the pair" : ""));
  const std::vector<ir::Range>& ranges = copy.src.ranges;
  std::vector<std::string> coords;  // innermost first
  for (size_t d = ranges.size(); d-- > 0;) coords.push_back("int(" + expr(ranges[d].min) + ")");
  // Note [Cluster multicast]: rows [rank * R/2, (rank + 1) * R/2).
  const std::string row0 = half ? "int(" + rank + ") * " + str(how.rows / 2) : "";
  for (int p = 0; p < how.panels; ++p) {
    std::string dst = tile + (p > 0 ? " + " + str(p * how.rows * how.panel_cols) : "");
    if (half) dst += " + " + row0 + " * " + str(how.panel_cols);
    std::string args = dst + ", &tilejit_args.tmaps[" + str(half ? half_map : how.map) + "], " + bar;
    if (half) args += ", 3";  // both blocks of the pair
    for (size_t d = 0; d < coords.size(); ++d) {
      args += ", " + coords[d];
      if (d == 0 && p > 0) args += " + " + str(p * how.panel_cols);
      if (half && int(d) == how.rows_box) args += " + " + row0;
    }
    line(std::string(half ? "tilejit::cuda::tma_load_multicast(" : "tilejit::cuda::tma_load(") +
         args + ");");
  }
}

// Note [TMA stores]: the barrier before (the copy reads the tile) fences
// the threads' writes for the async proxy.
void CudaTileCodegen::emit_tma_store(const ir::CopyOp& op, const TmaCopy& how) {
  TILEJIT_ICHECK(!own_code() && group_args().empty())
      << func().name << ": a TMA store of " << op.src.buffer.name() << " that is not the block's";
  const backend::BufferAccess& tile = access(op.src.buffer, op.span, "T.copy");
  line("// T.copy(" + ir::to_string(op.src) + ", " + ir::to_string(op.dst) + "): tma_store" +
       (how.panels > 1 ? ", " + str(how.panels) + " boxes" : ""));
  std::vector<std::string> coords;  // innermost first
  const std::vector<ir::Range>& ranges = op.dst.ranges;
  for (size_t d = ranges.size(); d-- > 0;) coords.push_back("int(" + expr(ranges[d].min) + ")");
  auto box = [&](int p) {
    std::string args = "&tilejit_args.tmaps[" + str(how.map) + "], " + tile.data +
                       (p > 0 ? " + " + str(p * how.rows * how.panel_cols) : "");
    for (size_t d = 0; d < coords.size(); ++d) {
      args += ", " + coords[d] + (d == 0 && p > 0 ? " + " + str(p * how.panel_cols) : "");
    }
    return args;
  };
  if (how.panels == 1) {
    line("if (tilejit_tid == 0) tilejit::cuda::tma_store(" + box(0) + ");");
    return;
  }
  // Note [Swizzled store tiles]: a box per panel, then one wait.
  line("if (tilejit_tid == 0) {");
  indent();
  for (int p = 0; p < how.panels; ++p) line("tilejit::cuda::tma_store_box(" + box(p) + ");");
  line("tilejit::cuda::tma_store_issued();");
  dedent();
  line("}");
}

void CudaTileCodegen::emit_pipelined(const ir::ForStmt& op,
                                     const std::vector<const ir::CopyOp*>& copies) {
  if (&op == ws_.loop) {
    emit_consumer_loop(op, copies);
    sync();  // the stages' bytes may be another tile's past the loop
    return;
  }
  const int stages = pipelines_.stages.at(copies.front()->dst.buffer.id());
  const std::string k = var_name(op.var);
  const std::string lo = expr(op.min);
  const std::string end = loop_end(k, op, lo);
  sync();
  line("// T.Pipelined(num_stages=" + str(stages) + "): " + str(int64_t(copies.size())) +
       " tile loads through " + str(stages) + " stages");
  tma_bars_.clear();
  for (const ir::CopyOp* copy : copies) {
    if (tma_.copies.count(copy)) tma_bars_[copy] = fresh(copy->dst.buffer.name() + "_landed");
  }
  const bool async = tma_bars_.size() < copies.size();
  if (!tma_bars_.empty()) {
    // Note [TMA copies]: a barrier per copy and stage, set up afresh each
    // time the loop starts (the barrier after the previous run ended its
    // waits).
    // (In program order: the map's order is the pointers'.)
    for (const ir::CopyOp* copy : copies) {
      if (tma_bars_.count(copy)) line("__shared__ uint64_t " + tma_bars_.at(copy) + "[" + str(stages) + "];");
    }
    line("if (tilejit_tid == 0) {");
    indent();
    for (const ir::CopyOp* copy : copies) {
      if (!tma_bars_.count(copy)) continue;
      for (int s = 0; s < stages; ++s) {
        line("tilejit::cuda::mbar_init(&" + tma_bars_.at(copy) + "[" + str(s) + "], 1);");
      }
    }
    line("tilejit::cuda::mbar_init_fence();");
    dedent();
    line("}");
    line("__syncthreads();");
  }
  for (int s = 0; s + 1 < stages; ++s) {
    emit_prefetch(op, copies, lo + " + " + str(s), str(s), lo + " + " + str(s) + " < " + end);
  }
  line("for (int64_t " + k + " = " + lo + "; " + k + " < " + end + "; ++" + k + ") {");
  indent();
  const std::string rel = "(" + k + " - " + lo + ")";
  // Iteration k's cp.async group has landed once at most stages - 2 newer
  // ones are in flight; the barrier shows it to every thread, and orders
  // the previous iteration's reads of the stage this one's prefetch
  // overwrites. Its TMA copies are waited for where the body first reads
  // them, below.
  if (async) line("tilejit::cuda::async_wait_group<" + str(stages - 2) + ">();");
  if (async_proxy_reads()) line("tilejit::cuda::async_proxy_fence();");  // Note [Warpgroup gemms]
  line("__syncthreads();");
  synced_at_ = lines_written();
  read_since_.clear();
  written_since_.clear();
  pending_keys_.clear();
  pending_async_ = false;
  emit_prefetch(op, copies, k + " + " + str(stages - 1),
                "(" + rel + " + " + str(stages - 1) + ") % " + str(stages),
                k + " + " + str(stages - 1) + " < " + end);
  // The body reads stage (k - lo) % stages.
  const std::map<uint64_t, backend::BufferAccess> saved =
      bind_stages(copies, rel + " % " + str(stages));
  // Note [TMA copies]: a copy's stage has landed once its barrier completed
  // the phase of the iteration's parity; each thread waits before the
  // first statement that reads the tile (flash attention's V while Q K^T
  // runs), and at the end for a tile the body does not read.
  std::map<const ir::CopyOp*, std::string> unwaited = tma_bars_;
  auto wait = [&](const ir::CopyOp* copy) {
    emit_mbar_wait(unwaited.at(copy), rel + " % " + str(stages),
                   "unsigned(" + rel + " / " + str(stages) + ") & 1u");
    unwaited.erase(copy);
  };
  for (const ir::Stmt& s : flatten(op.body)) {
    bool skip = false;
    for (const ir::CopyOp* copy : copies) skip = skip || s.get() == static_cast<const ir::StmtNode*>(copy);
    if (skip) continue;
    if (!unwaited.empty()) {
      Accessed a;
      a.visit(s);
      for (const ir::CopyOp* copy : copies) {
        const uint64_t id = copy->dst.buffer.id();
        if (unwaited.count(copy) && (a.reads.count(id) || a.ids.count(id))) wait(copy);
      }
    }
    emit_stmt(s);
  }
  for (const ir::CopyOp* copy : copies) {
    if (unwaited.count(copy)) wait(copy);
  }
  for (const ir::CopyOp* copy : copies) set_access(copy->dst.buffer, saved.at(copy->dst.buffer.id()));
  dedent();
  line("}");
  line("tilejit::cuda::async_wait_all();");
  sync();
}

void CudaTileCodegen::emit_copy(const ir::CopyOp& op) {
  if (auto store = tma_.stores.find(&op); store != tma_.stores.end()) {
    emit_tma_store(op, store->second);
    return;
  }
  if (const int from = swizzle_of(op.src.buffer); from != 0) {
    // Note [Swizzled store tiles]: a store TMA did not take.
    TILEJIT_ICHECK(!own_code() && group_args().empty())
        << func().name << ": a copy from the swizzled tile " << op.src.buffer.name()
        << " that is not the block's";
    const backend::BufferAccess& src = access(op.src.buffer, op.span, "T.copy");
    line("// T.copy(" + ir::to_string(op.src) + ", " + ir::to_string(op.dst) + "): from swizzled");
    line("tilejit::cuda::copy_from_swizzled<" + str(from) + ", " + str(src.static_shape[0]) + ", " +
         str(src.static_shape[1]) + ", " + str(threads_) + ">(" + src.data + ", " +
         backend::copy_side_rect(*this, op, false) + ");");
    return;
  }
  const int swizzle = swizzle_of(op.dst.buffer);
  if (swizzle == 0) {
    backend::lower_copy(*this, op);
    return;
  }
  // Note [Warpgroup gemms]: the whole tile, written as wgmma reads it.
  TILEJIT_ICHECK(!own_code() && group_args().empty())
      << func().name << ": a copy into the swizzled tile " << op.dst.buffer.name()
      << " that is not the block's";
  const backend::BufferAccess& dst = access(op.dst.buffer, op.span, "T.copy");
  line("// T.copy(" + ir::to_string(op.src) + ", " + ir::to_string(op.dst) + "): swizzled");
  line("tilejit::cuda::copy_swizzled<" + str(swizzle) + ", " + str(dst.static_shape[0]) + ", " +
       str(dst.static_shape[1]) + copy_template_tail(op) + ">(" + dst.data + ", " +
       backend::copy_side_rect(*this, op, true) + ");");
}

void CudaTileCodegen::emit_warpgroup_gemm(const ir::GemmOp& op, const FragmentLayout& c) {
  const WarpgroupGemm g = warpgroup_gemm(op);
  const backend::BufferAccess& a = access(op.a.buffer, op.span, "T.gemm");
  const backend::BufferAccess& b = access(op.b.buffer, op.span, "T.gemm");
  const std::string acc = access(op.c.buffer, op.span, "T.gemm").name;
  const std::string tb = op.trans_b ? "true" : "false";
  const std::string clear = op.clear_accum ? "true" : "false";
  const std::string head = "// T.gemm(" + ir::to_string(op.a) + ", " + ir::to_string(op.b) + ", " +
                           ir::to_string(op.c) + "): ";
  // choose_fragments gives the warpgroup layout only to accumulators whose
  // every gemm runs on wgmma.
  TILEJIT_ICHECK(g.columns > 0) << func().name << ": a gemm into the warpgroup layout of "
                                << op.c.buffer.name() << " off wgmma: " << g.why;
  wgmma_columns_.insert(g.columns);
  const int swb = swizzle_of(op.b.buffer);
  const std::string b_tail = str(b.static_shape[0]) + ", " + str(swb) + ", " + str(g.columns);
  issued_pin_.clear();
  if (g.a_in_registers) {
    const FragmentLayout* la = register_layout(op.a.buffer);
    if (gemm_issue_only_) {
      const std::string af = fresh(op.a.buffer.name() + "_operand");
      line(head + "wgmma, A from registers, left running");
      line("tilejit::cuda::RsOperand<" + layout_type(c) + ", " + str(la->n) + "> " + af + ";");
      line("tilejit::cuda::acc_gemm_wg_rs_issue<" + layout_type(c) + ", " + str(la->n) + ", " + tb +
           ", " + b_tail + ">(" + acc + ", " + a.name + ", " + b.data + ", " + clear + ", " + af +
           ");");
      issued_pin_ = af + ".pin();";
      return;
    }
    line(head + "wgmma, A from registers");
    line("tilejit::cuda::acc_gemm_wg_rs<" + layout_type(c) + ", " + str(la->n) + ", " + tb + ", " +
         b_tail + ">(" + acc + ", " + a.name + ", " + b.data + ", " + clear + ");");
    return;
  }
  const int64_t k = op.trans_a ? a.static_shape[0] : a.static_shape[1];
  line(head + (gemm_issue_only_ ? "wgmma, left running" : "wgmma"));
  line(std::string("tilejit::cuda::") + (gemm_issue_only_ ? "acc_gemm_wg_issue<" : "acc_gemm_wg<") +
       layout_type(c) + ", " + str(k) + ", " +
       (op.trans_a ? "true" : "false") + ", " + tb + ", " + str(a.static_shape[0]) + ", " +
       str(swizzle_of(op.a.buffer)) + ", " + b_tail + ">(" + acc + ", " + a.data +
       ", " + b.data + ", " + clear + ");");
}

// The copy of a whole 16-bit shared tile into an A operand in registers
// of the same dtype, whose rows ldmatrix can read (16-byte aligned).
// The region is its whole 2-D buffer of constant shape: no ranges, or each
// range from 0 over the dimension.
static bool covers_whole_tile(const ir::Region& r) {
  if (r.is_whole()) return true;
  if (r.ranges.size() != 2) return false;
  for (size_t d = 0; d < 2; ++d) {
    const ir::Range& g = r.ranges[d];
    const ir::Expr& dim = r.buffer.shape()[d];
    if (!g.min.is_const() || g.min.int_value() != 0 || !g.extent.defined() || !g.extent.is_const() ||
        !dim.is_const() ||
        g.extent.int_value() != dim.int_value()) {
      return false;
    }
  }
  return true;
}

bool CudaTileCodegen::operand_from_shared(const ir::CopyOp& op, const FragmentLayout& to) {
  const ir::Buffer& src = op.src.buffer;
  if (to.part() || to.rows() || to.wn != 1 || to.m_real != 0 || to.n % 16 != 0 ||
      src.scope() != ir::Scope::kShared || src.dtype() != op.dst.buffer.dtype() ||
      src.dtype().bytes() != 2 || src.rank() != 2 || !src.shape()[0].is_const() ||
      src.shape()[0].int_value() != to.m || !src.shape()[1].is_const() ||
      src.shape()[1].int_value() != to.n) {
    return false;
  }
  if (!covers_whole_tile(op.src)) return false;
  const backend::BufferAccess& a = access(src, op.span, "T.copy");
  return a.static_shape.size() == 2 && a.static_shape[1] % 8 == 0 && !staged_.count(src.id());
}

bool CudaTileCodegen::accumulator_to_shared(const ir::CopyOp& op, const FragmentLayout& from) {
  // operand_from_shared's inverse (stmatrix), for any warps per row: the
  // whole 16-bit tile, rows of whole 16 x 16 blocks, row-major or swizzled
  // (Note [Swizzled store tiles]).
  const ir::Buffer& dst = op.dst.buffer;
  if (dst.scope() != ir::Scope::kShared ||
      (dst.dtype() != DataType::float16() && dst.dtype() != DataType::bfloat16()) ||
      dst.rank() != 2 || !dst.shape()[0].is_const() || !dst.shape()[1].is_const() ||
      !stmatrix_layout(from, dst.shape()[0].int_value(), dst.shape()[1].int_value()) ||
      rows_padded(dst) || !covers_whole_tile(op.dst)) {
    return false;
  }
  const backend::BufferAccess& a = access(dst, op.span, "T.copy");
  return a.static_shape.size() == 2 && a.static_shape[1] == from.n && a.static_shape[1] % 8 == 0 &&
         !staged_.count(dst.id());
}

bool CudaTileCodegen::emit_register_op(const ir::Stmt& s) {
  static const char* const kKinds[] = {"kSum", "kMax", "kMin", "kAbsSum", "kAbsMax"};
  switch (s.kind()) {
    case ir::StmtKind::kFill: {
      const auto* op = s.as<ir::FillOp>();
      const FragmentLayout* l = register_layout(op->dst.buffer);
      if (l == nullptr) return false;
      line("// T.fill(" + ir::to_string(op->dst) + ", " + ir::to_string(op->value) + ")");
      line("tilejit::cuda::acc_fill<" + layout_type(*l) + ">(" + access(op->dst.buffer, s.span(), "T.fill").name +
           ", " + expr(op->value) + ");");
      return true;
    }
    case ir::StmtKind::kGemm: {
      const auto* op = s.as<ir::GemmOp>();
      const FragmentLayout* l = register_layout(op->c.buffer);
      if (l == nullptr) return false;
      if (l->il_rows) {
        emit_warpgroup_gemm(*op, *l);
        return true;
      }
      const backend::BufferAccess& a = access(op->a.buffer, s.span(), "T.gemm");
      const backend::BufferAccess& b = access(op->b.buffer, s.span(), "T.gemm");
      const std::string c = access(op->c.buffer, s.span(), "T.gemm").name;
      const std::string tb = op->trans_b ? "true" : "false";
      const std::string clear = op->clear_accum ? "true" : "false";
      line("// T.gemm(" + ir::to_string(op->a) + ", " + ir::to_string(op->b) + ", " +
           ir::to_string(op->c) + "): tensor cores into registers" +
           (register_layout(op->a.buffer) ? ", A from registers" : ""));
      if (const FragmentLayout* la = register_layout(op->a.buffer)) {
        line("tilejit::cuda::acc_gemm_rs<" + layout_type(*l) + ", " + str(la->n) + ", " + tb + ", " +
             str(b.static_shape[1]) + ">(" + c + ", " + a.name + ", " + b.data + ", " + clear +
             ");");
        return true;
      }
      const int64_t k = op->trans_a ? a.static_shape[0] : op->a.buffer.shape()[1].int_value();
      line("tilejit::cuda::acc_gemm<" + layout_type(*l) + ", " + str(k) + ", " +
           (op->trans_a ? "true" : "false") + ", " + tb + ", " + str(a.static_shape[1]) + ", " +
           str(b.static_shape[1]) + ">(" + c + ", " + a.data + ", " + b.data + ", " + clear + ");");
      return true;
    }
    case ir::StmtKind::kCopy: {
      const auto* op = s.as<ir::CopyOp>();
      const FragmentLayout* from = register_layout(op->src.buffer);
      const FragmentLayout* to = register_layout(op->dst.buffer);
      if (from == nullptr && to == nullptr) return false;
      line("// T.copy(" + ir::to_string(op->src) + ", " + ir::to_string(op->dst) + ")");
      const std::string src = access(op->src.buffer, s.span(), "T.copy").name;
      const std::string dst = access(op->dst.buffer, s.span(), "T.copy").name;
      if (from != nullptr && to != nullptr) {
        line("tilejit::cuda::acc_convert<" + layout_type(*from) + ">(" + src + ", " + dst + ");");
      } else if (from != nullptr && from->rows()) {
        // A row vector: row 0 of the Rect, or a strided column of it.
        bool column = false;
        const std::string rect = backend::copy_side_rect(*this, *op, false, &column);
        line("tilejit::cuda::rows_store<" + layout_type(*from) + (column ? ", true" : "") + ">(" + src +
             ", " + rect + ");");
      } else if (from != nullptr && accumulator_to_shared(*op, *from)) {
        const backend::BufferAccess& a = access(op->dst.buffer, s.span(), "T.copy");
        const int sw = swizzle_of(op->dst.buffer);
        line("tilejit::cuda::acc_store_shared<" + layout_type(*from) + ", " + str(a.static_shape[1]) +
             (sw > 0 ? ", " + str(sw) : "") + ">(" + src + ", " + a.data + ");");
      } else if (from != nullptr) {
        const char* fn = from->repl ? "rows_store<" : from->part() ? "part_store<" : "acc_store<";
        // Note [Copies inside their tensor]: an accumulator's every element
        // has its place, with no edge checks.
        const bool inside = fn == std::string("acc_store<") && inside_copies_.count(op) != 0;
        line(std::string("tilejit::cuda::") + fn + layout_type(*from) + (inside ? ", true" : "") +
             ">(" + src + ", " + backend::copy_side_rect(*this, *op, false) + ");");
      } else if (to->rows()) {
        bool column = false;
        const std::string rect = backend::copy_side_rect(*this, *op, true, &column);
        line("tilejit::cuda::rows_load<" + layout_type(*to) + (column ? ", true" : "") + ">(" + dst +
             ", " + rect + ");");
      } else if (operand_from_shared(*op, *to)) {
        // A whole shared tile into a 16-bit A operand: ldmatrix gives the
        // registers as the gemm takes them.
        const backend::BufferAccess& a = access(op->src.buffer, s.span(), "T.copy");
        line("tilejit::cuda::acc_load_shared<" + layout_type(*to) + ", " + str(a.static_shape[1]) +
             ">(" + dst + ", " + a.data + ");");
      } else {
        const char* fn = to->repl ? "rows_load<" : to->part() ? "part_load<" : "acc_load<";
        line(std::string("tilejit::cuda::") + fn + layout_type(*to) + ">(" + dst + ", " +
             backend::copy_side_rect(*this, *op, true) + ");");
      }
      return true;
    }
    case ir::StmtKind::kReduce: {
      const auto* op = s.as<ir::ReduceOp>();
      const FragmentLayout* l = register_layout(op->src.buffer);
      if (l == nullptr) return false;
      const backend::BufferAccess& dst = access(op->dst.buffer, s.span(), "T.reduce");
      const std::string src = access(op->src.buffer, s.span(), "T.reduce").name;
      const std::string kind = std::string("tilejit::cuda::ReduceKind::") + kKinds[int(op->reduce_kind)];
      const std::string clear = op->clear ? "true" : "false";
      line(std::string("// T.reduce_") + ir::reduce_kind_name(op->reduce_kind) + "(" +
           ir::to_string(op->src) + ", " + ir::to_string(op->dst) + ", dim=" + str(op->dim) +
           ")");
      std::string scratch = "nullptr";
      if (l->scratch_floats() > 0) {
        // One scratch (or two, taken in turn: Note [Alternating reduction
        // scratch]) for every row reduction of the kernel, as large as the
        // largest needs.
        if (scratch_offset_ < 0) {
          scratch_offset_ = take_shared(scratch_bytes_ * scratch_copies_, s.span(),
                                        "the row reductions' scratch");
        }
        scratch = "reinterpret_cast<float*>(tilejit_smem + " +
                  str(scratch_offset_ + next_scratch_ * scratch_bytes_) + ")";
        next_scratch_ = (next_scratch_ + 1) % scratch_copies_;
      }
      const std::string prefix = l->part() ? "tilejit::cuda::part_" : "tilejit::cuda::acc_";
      if (register_layout(op->dst.buffer) != nullptr) {
        line(prefix + "reduce_rows_to<" + kind + ", " + layout_type(*l) + ">(" + src + ", " + dst.name +
             ", " + clear + ", " + scratch + ");");
        return true;
      }
      line(prefix + "reduce_rows<" + kind + ", " + layout_type(*l) + ">(" + src + ", " + dst.data + ", " +
           clear + ", " + scratch + ");");
      return true;
    }
    default: return false;
  }
}

}  // namespace tilejit::cuda

// The CUDA lowering report (op_report.h).
#include "backend/cuda/op_report.h"

#include <string>
#include <vector>

#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/tile_memory.h"
#include "backend/cuda/warpgroup_gemms.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

namespace {

using ir::Expr;
using runtime::Diagnostic;

std::string str(int64_t v) { return std::to_string(v); }

bool is_16bit(DataType t) { return t == DataType::bfloat16() || t == DataType::float16(); }

// The extents of a region: a whole buffer's shape, a slice's extents; -1
// where symbolic; empty for a corner (its extents are the other side's).
std::vector<int64_t> extents(const ir::Region& r) {
  std::vector<int64_t> out;
  if (r.is_corner()) return out;
  const std::vector<Expr>& es = r.is_whole() ? r.buffer.shape() : r.extents();
  for (const Expr& e : es) out.push_back(e.is_const() ? e.int_value() : -1);
  return out;
}

// Whether the region's innermost non-unit extent is its last dimension (the
// rectangle path of lower_copy: its rows are contiguous).
bool rows_contiguous(const std::vector<int64_t>& ext) {
  for (size_t d = ext.size(); d-- > 0;) {
    if (ext[d] != 1) return d + 1 == ext.size();
  }
  return true;
}

// The elements per row of the copy (its innermost non-unit extent).
int64_t columns(const std::vector<int64_t>& ext) {
  for (size_t d = ext.size(); d-- > 0;) {
    if (ext[d] != 1) return ext[d];
  }
  return 1;
}


Diagnostic copy_record(const ir::CopyOp& op, int threads, bool prefetched) {
  Diagnostic d{"T.copy", op.span, "", ""};
  if (register_layout(op.src.buffer) || register_layout(op.dst.buffer)) {
    d.path = "registers";  // acc_load / acc_store / acc_convert through the layout
    return d;
  }
  const std::vector<int64_t> src = extents(op.src), dst = extents(op.dst);
  const DataType dt = op.dst.buffer.dtype(), st = op.src.buffer.dtype();
  d.path = "elementwise";
  if (!rows_contiguous(src) || !rows_contiguous(dst)) {
    d.reason = "a column copy: the rows of " +
               std::string(rows_contiguous(src) ? "the destination " : "the source ") +
               "are not contiguous, so each element is copied on its own";
    return d;
  }
  if (dt != st) {
    d.reason = "dtype conversion (" + st.name() + " to " + dt.name() +
               "): elements are converted one by one";
    return d;
  }
  // copy.h's vectors: the widest of 16, 8, 4 bytes whose element count
  // divides the tile's row and whose vectors per row the threads split into
  // whole columns (vectors_fit); at run time, narrower where a side's first
  // address or row stride is aligned to less.
  const int64_t bytes = dt.bytes(), cols = columns(dst.empty() ? src : dst);
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) {
    d.reason = str(bytes) + "-byte elements: vectors take 1-, 2-, 4- or 8-byte ones";
    return d;
  }
  auto divides = [&](int64_t width) {
    return width >= bytes && cols > 0 && cols % (width / bytes) == 0;
  };
  auto fits = [&](int64_t width) {
    if (!divides(width)) return false;
    const int64_t per_row = cols / (width / bytes);
    return threads % per_row == 0 || per_row % threads == 0;
  };
  const std::string split_no_row = str(threads) + " threads split no row of " + str(cols) +
                                   " elements into whole columns of ";
  int64_t width = fits(16) ? 16 : fits(8) ? 8 : fits(4) ? 4 : 0;
  if (width == 0) {
    d.reason = divides(4) || divides(8) || divides(16)
                   ? split_no_row + "16-, 8- or 4-byte vectors"
                   : "an unaligned row: " +
                         (cols < 0 ? std::string("a symbolic number of") : str(cols)) +
                         " elements per row is not a whole number of 4-byte vectors";
    return d;
  }
  std::string why;  // why narrower than 16 bytes
  if (width < 16) {
    why = str(cols) + " elements per row is not a whole number of 16-byte vectors";
    if (divides(16)) why = split_no_row + "16-byte vectors";
  }
  // A global tensor's row of a constant length narrows the vectors of every
  // copy that steps through its rows (a row of 1004 halves: 8 bytes).
  for (const ir::Region* side : {&op.src, &op.dst}) {
    const ir::Buffer& b = side->buffer;
    if (b.scope() != ir::Scope::kGlobal || b.shape().size() < 2) continue;
    const Expr& last = b.shape().back();
    if (!last.is_const()) continue;
    const int64_t row_bytes = last.int_value() * bytes;
    if (row_bytes % width == 0) continue;
    // copy.h narrows 16-byte vectors to 8 bytes, and no further.
    width = width == 16 && row_bytes % 8 == 0 && fits(8) ? 8 : 0;
    int64_t unaligned = width == 0 ? 4 : 2 * width;  // the narrowest width the row breaks
    while (row_bytes % unaligned == 0) unaligned *= 2;
    why = "a row of " + b.name() + " is " + str(last.int_value()) + " elements (" +
          str(row_bytes) + " bytes), not a multiple of " + str(unaligned) + " bytes";
    if (width == 0) {
      d.reason = "an unaligned row: " + why;
      if (row_bytes % 8 == 0 && !fits(8)) d.reason += ", and " + split_no_row + "8-byte vectors";
      return d;
    }
  }
  const std::string named = width < 16 ? str(width) + "-byte vectors: " + why : "";
  const ir::Scope ds = op.dst.buffer.scope();
  const bool async = op.src.buffer.scope() == ir::Scope::kGlobal &&
                     (ds == ir::Scope::kShared || ds == ir::Scope::kFragment);
  auto join = [&](const std::string& more) {
    return named.empty() ? more : more.empty() ? named : named + "; " + more;
  };
  if (async && threads > 1) {
    d.path = "cp_async";
    d.reason = join("");
    return d;
  }
  d.path = "vector";
  d.reason = join(threads == 1 ? "a thread's own copy: cp.async serves the block's copies"
                  : async      ? ""
                               : "vectors through registers: cp.async moves global memory "
                                 "into shared memory only");
  return d;
}

Diagnostic gemm_record(const ir::GemmOp& op, const LayoutReasons& reasons, int threads) {
  Diagnostic d{"T.gemm", op.span, "mma", ""};
  const ir::Buffer &a = op.a.buffer, &b = op.b.buffer, &c = op.c.buffer;
  if (const FragmentLayout* l = register_layout(c)) {  // tensor cores into registers
    if (l->il_rows) {
      // Note [Warpgroup gemms]: the layout's gemms all are; A from shared
      // memory (SS) or from registers (RS, flash attention's P).
      d.path = register_layout(a) != nullptr ? "wgmma_rs" : "wgmma_ss";
    } else if (auto why = reasons.not_warpgroup.find(c.id()); why != reasons.not_warpgroup.end()) {
      d.reason = "not wgmma: " + why->second;
    }
    return d;
  }
  // The library's gemm on a C in shared memory (tilejit/cuda/gemm.h): mma
  // where its static conditions hold, SIMT otherwise.
  const std::vector<int64_t> ea = extents(op.a), eb = extents(op.b);
  auto at = [](const std::vector<int64_t>& e, size_t i) { return i < e.size() ? e[i] : -1; };
  const int64_t m = op.trans_a ? at(ea, 1) : at(ea, 0), k = op.trans_a ? at(ea, 0) : at(ea, 1);
  const int64_t n = op.trans_b ? at(eb, 0) : at(eb, 1);
  std::string why;
  if (!is_16bit(a.dtype()) || a.dtype() != b.dtype()) {
    why = "A and B are " + a.dtype().name() + " and " + b.dtype().name() +
          ", not 16-bit floats of one dtype";
  } else if (c.dtype() != DataType::float32()) {
    why = "C is " + c.dtype().name() + ", not float32";
  } else if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0 || m <= 0 || n <= 0 || k <= 0) {
    why = "M, N, K = " + str(m) + ", " + str(n) + ", " + str(k) + " are not multiples of 16";
  } else if (threads % 32 != 0 || threads == 1) {
    why = threads == 1 ? "a thread's own gemm" : str(threads) + " threads are not whole warps";
  } else if (a.scope() == ir::Scope::kGlobal || b.scope() == ir::Scope::kGlobal ||
             a.scope() == ir::Scope::kLocal || b.scope() == ir::Scope::kLocal) {
    why = "an operand outside shared memory";
  }
  if (!why.empty()) {
    d.path = "simt";
    d.reason = why;
    return d;
  }
  auto kept = reasons.kept_shared.find(c.id());
  d.reason = "C " + c.name() + " is in shared memory" +
             (kept == reasons.kept_shared.end()
                  ? std::string()
                  : " (" + kept->second.op + " at line " + str(kept->second.span.line) + ": " +
                        kept->second.reason + ")") +
             ", read and written around each call";
  return d;
}

// A fill, reduction, atomic add or print: in registers where its fragment
// is, else by the block through shared memory.
Diagnostic other_record(const ir::Stmt& s, int threads) {
  Diagnostic d{"", s.span(), threads == 1 ? "thread" : "shared", ""};
  const ir::Buffer* b = nullptr;
  switch (s.kind()) {
    case ir::StmtKind::kFill: d.op = "T.fill"; b = &s.as<ir::FillOp>()->dst.buffer; break;
    case ir::StmtKind::kReduce:
      d.op = std::string("T.reduce_") + ir::reduce_kind_name(s.as<ir::ReduceOp>()->reduce_kind);
      b = &s.as<ir::ReduceOp>()->src.buffer;
      break;
    case ir::StmtKind::kAtomicAdd: d.op = "T.atomic_add"; d.path = "atomic"; return d;
    case ir::StmtKind::kPrint: d.op = "T.print"; d.path = "print"; return d;
    default: d.op = "tile op"; return d;
  }
  if (register_layout(*b) != nullptr) {
    d.path = "registers";
  } else if (b->scope() == ir::Scope::kFragment && threads > 1 && s.kind() == ir::StmtKind::kReduce) {
    d.reason = b->name() + " is in shared memory";
  }
  return d;
}

}  // namespace

Diagnostic op_record(const ir::Stmt& s, const LayoutReasons& reasons, int threads,
                     bool prefetched) {
  if (s.kind() == ir::StmtKind::kCopy) {
    return copy_record(*s.as<ir::CopyOp>(), threads, prefetched);
  }
  if (s.kind() == ir::StmtKind::kGemm) return gemm_record(*s.as<ir::GemmOp>(), reasons, threads);
  return other_record(s, threads);
}

void report_kernel(const ir::KernelStmt& kernel, int threads, const LayoutReasons& reasons,
                   const PipelinePlan& pipelines, const TmaPlan& tma,
                   const WarpSpecialization& ws, const ClusterPlan& cluster,
                   const CoarseKSteps& coarse, const StagedEpilogue& epilogue,
                   runtime::LoweringReport* report) {
  struct Walk : ir::IRVisitor {
    int threads = 1;
    int nest = 0;  // T.Parallel loops around the statement
    const LayoutReasons* reasons = nullptr;
    const PipelinePlan* pipelines = nullptr;
    const TmaPlan* tma = nullptr;
    const WarpSpecialization* ws = nullptr;
    const ClusterPlan* cluster = nullptr;
    const CoarseKSteps* coarse = nullptr;
    const StagedEpilogue* epilogue = nullptr;
    runtime::LoweringReport* report = nullptr;
    void visit_alloc(const ir::AllocStmt* op, const ir::Stmt& s) override {
      const ir::Buffer& b = op->buffer;
      runtime::Placement p = runtime::Placement::kShared;
      int64_t bytes = tile_elements(b) * b.dtype().bytes();
      if (b.scope() == ir::Scope::kLocal) p = runtime::Placement::kLocal;
      if (b.scope() == ir::Scope::kGlobal) {
        p = runtime::Placement::kGlobal;
        bytes = runtime::constant_bytes(b);
      }
      if (b->layout.fragment() != nullptr) p = runtime::Placement::kRegisters;
      if (auto st = pipelines->stages.find(b.id()); st != pipelines->stages.end()) {
        bytes *= st->second;
      }
      runtime::BufferRecord r = runtime::buffer_record(b, p, bytes);
      if (auto k = reasons->kept_shared.find(b.id()); k != reasons->kept_shared.end()) {
        r.forced_by = k->second;
      }
      report->buffers.push_back(std::move(r));
      ir::IRVisitor::visit_alloc(op, s);
    }
    // A tile op as tile_codegen.cpp runs it: by the block, or by one thread
    // (Note [Thread semantics]); a prefetched copy through cp.async.
    void op(const ir::Stmt& s) {
      const bool own = transform::ThreadUniformity::per_thread_op(s) || nest > 0;
      bool prefetched = false;
      for (const auto& [loop, copies] : pipelines->loops) {
        for (const ir::CopyOp* c : copies) {
          prefetched = prefetched || static_cast<const ir::StmtNode*>(c) == s.get();
        }
      }
      Diagnostic d = op_record(s, *reasons, own ? 1 : threads, prefetched);
      for (const Diagnostic& refused : pipelines->diagnostics) {
        if (refused.op == d.op && refused.span.line == d.span.line &&
            refused.span.file == d.span.file && !prefetched) {
          d.reason = refused.path + ": " + refused.reason;
        }
      }
      // Note [TMA copies].
      const ir::CopyOp* copy = s.kind() == ir::StmtKind::kCopy ? s.as<ir::CopyOp>() : nullptr;
      if (tma->copies.count(copy)) {
        d.path = cluster->halves.count(copy) ? "tma_load_multicast" : "tma_load";
        d.reason = "";
      } else if (tma->stores.count(copy)) {
        d.path = "tma_store";
        d.reason = "";
      } else if (auto no = tma->refused.find(copy); no != tma->refused.end()) {
        d.reason = d.reason.empty() ? no->second : no->second + "; " + d.reason;
      }
      // Note [Staged epilogues]: a store of the main loop's accumulator left
      // as written.
      if (copy != nullptr && !epilogue->refused.empty() && nest == 0 &&
          stores_accumulator(*copy, epilogue->acc)) {
        d.reason = d.reason.empty() ? epilogue->refused : d.reason + "; " + epilogue->refused;
      }
      report->ops.push_back(std::move(d));
    }
    void visit_copy(const ir::CopyOp*, const ir::Stmt& s) override { op(s); }
    void visit_gemm(const ir::GemmOp*, const ir::Stmt& s) override { op(s); }
    void visit_fill(const ir::FillOp*, const ir::Stmt& s) override { op(s); }
    void visit_reduce(const ir::ReduceOp*, const ir::Stmt& s) override { op(s); }
    void visit_atomic_add(const ir::AtomicAddOp*, const ir::Stmt& s) override { op(s); }
    void visit_print(const ir::PrintOp*, const ir::Stmt& s) override { op(s); }
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      if (!op->origin.empty()) {
        // A tile op the front end wrote as a loop (ir::LoopOrigin).
        report->ops.push_back(Diagnostic{op->origin.op, s.span(), "elementwise",
                                         op->origin.reason});
      }
      if (op->for_kind == ir::ForKind::kParallel) {
        nest += 1;
        ir::IRVisitor::visit_for(op, s);
        nest -= 1;
        return;
      }
      if (op->for_kind == ir::ForKind::kPipelined && op->stages > 1) {
        Diagnostic d{"T.Pipelined", s.span(), "pipelined", ""};
        auto loop = pipelines->loops.find(op);
        if (loop == pipelines->loops.end()) {
          d.path = "not_pipelined";
          // Refused prefetches are on their copies' entries (pipeline.h);
          // stages that did not fit were dropped by fit_pipelines.
          d.reason = "num_stages=" + str(op->stages) +
                     " dropped: no copy in the loop is prefetched (a global-to-shared copy "
                     "whose address the loop does not compute, within " +
                     str(kMaxSharedBytes) + " bytes of shared memory)";
          if (!op->schedule.empty()) d.reason += "; " + std::string(kNotApplied) + ": no prefetch";
        } else {
          const int kept = pipelines->stages.at(loop->second.front()->dst.buffer.id());
          d.path = "pipelined, " + str(kept) + " stages";
          if (kept < op->stages) {
            d.reason = "num_stages=" + str(op->stages) + " cut to " + str(kept) +
                       " to fit the shared memory (" + str(kMaxSharedBytes) + " bytes)";
          }
          // Note [Warp specialisation].
          auto add = [&](const std::string& why) {
            d.reason = d.reason.empty() ? why : d.reason + "; " + why;
          };
          if (ws->loop == op) {
            d.path = "warp_specialized, " + str(kept) + " stages" +
                     (ws->gemm_in_flight ? ", gemm kept in flight" : "") +
                     (coarse->factor > 1 ? ", " + str(coarse->factor) + " K steps of " +
                                               str(coarse->k_step) + " per stage"
                                         : "") +
                     (ws->schedule.groups.empty() ? ""
                      : op->schedule.empty()  ? ", scheduled (inferred)"
                                              : ", scheduled (order, stage)") +
                     (ws->pingpong ? ", warpgroups in ping-pong" : "") +
                     (cluster->on() ? std::string(", pairs of blocks along ") +
                                          (cluster->dim == 0 ? "x" : "y")
                                    : "");
            if (!ws->schedule.refused.empty()) add(ws->schedule.refused);
            if (!cluster->refused.empty()) add(cluster->refused);
            if (!coarse->refused.empty()) add(coarse->refused);
          } else {
            if (!ws->refused.empty()) add(ws->refused);
            // Note [Scheduled pipelines]: only on the warp-specialised path.
            if (!op->schedule.empty()) {
              add(std::string(kNotApplied) + ": the loop is not warp-specialised");
            }
          }
        }
        report->ops.push_back(std::move(d));
      }
      ir::IRVisitor::visit_for(op, s);
    }
  } walk;
  walk.threads = threads;
  walk.reasons = &reasons;
  walk.pipelines = &pipelines;
  walk.tma = &tma;
  walk.ws = &ws;
  walk.cluster = &cluster;
  walk.coarse = &coarse;
  walk.epilogue = &epilogue;
  walk.report = report;
  walk.visit(kernel.body);
}

}  // namespace tilejit::cuda

// The CPU lowering report (op_report.h).
#include "backend/cpu/op_report.h"

#include <string>
#include <vector>

#include "backend/cpu/tile_codegen.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cpu {

namespace {

using runtime::Diagnostic;

// Whether the region's innermost non-unit extent is its last dimension
// (lower_copy's rectangle path: each row is one convert_row); a corner
// takes the other side's extents at its last dimensions.
bool rows_contiguous(const ir::Region& r) {
  if (r.is_corner()) return true;
  const std::vector<ir::Expr> ext = r.is_whole() ? r.buffer.shape() : r.extents();
  for (size_t d = ext.size(); d-- > 0;) {
    if (!(ext[d].is_const() && ext[d].int_value() == 1)) return d + 1 == ext.size();
  }
  return true;
}

Diagnostic copy_record(const ir::CopyOp& op) {
  Diagnostic d{"T.copy", op.span, "rows", ""};
  if (!rows_contiguous(op.src) || !rows_contiguous(op.dst)) {
    d.path = "elementwise";
    d.reason = std::string("a column copy: the rows of the ") +
               (rows_contiguous(op.src) ? "destination" : "source") + " are not contiguous";
  } else if (op.src.buffer.dtype() != op.dst.buffer.dtype()) {
    d.reason = "dtype conversion (" + op.src.buffer.dtype().name() + " to " +
               op.dst.buffer.dtype().name() + "): each row is converted, not copied with memcpy";
  }
  return d;
}

// tilejit/cpu/gemm.h: the float32 micro-kernel, after widening what is not
// float32 (and a transposed B) into float32 tiles.
Diagnostic gemm_record(const ir::GemmOp& op) {
  Diagnostic d{"T.gemm", op.span, "micro_kernel", ""};
  std::vector<std::string> widened;
  if (op.a.buffer.dtype() != DataType::float32()) widened.push_back("A");
  if (op.b.buffer.dtype() != DataType::float32() || op.trans_b) widened.push_back("B");
  if (op.c.buffer.dtype() != DataType::float32()) widened.push_back("C");
  if (!widened.empty()) {
    std::string names;
    for (size_t i = 0; i < widened.size(); ++i) names += (i ? ", " : "") + widened[i];
    d.reason = names + " copied to float32 tiles first (the micro-kernel reads float32 " +
               "operands and an untransposed B)";
  }
  return d;
}

}  // namespace

void report_kernel(const ir::KernelStmt& kernel, const transform::ThreadUniformity& uniformity,
                   runtime::LoweringReport* report) {
  struct Walk : ir::IRVisitor {
    const transform::ThreadUniformity* uniformity = nullptr;
    runtime::LoweringReport* report = nullptr;
    void visit_alloc(const ir::AllocStmt* op, const ir::Stmt& s) override {
      const ir::Buffer& b = op->buffer;
      // As CpuTileCodegen::emit_alloc places it.
      const bool per_thread = b.scope() == ir::Scope::kLocal && uniformity->variant_buffer(b.id());
      const int64_t bytes = runtime::constant_bytes(b) * (per_thread ? uniformity->threads() : 1);
      runtime::Placement p = runtime::Placement::kShared;
      if (b.scope() == ir::Scope::kLocal) p = runtime::Placement::kLocal;
      if (b.scope() == ir::Scope::kGlobal) p = runtime::Placement::kGlobal;
      runtime::BufferRecord r = runtime::buffer_record(b, p, bytes);
      if (b.scope() != ir::Scope::kGlobal) {
        r.storage = bytes <= kMaxStackTileBytes ? "stack" : "arena";
      }
      report->buffers.push_back(std::move(r));
      ir::IRVisitor::visit_alloc(op, s);
    }
    void visit_copy(const ir::CopyOp* op, const ir::Stmt&) override {
      report->ops.push_back(copy_record(*op));
    }
    void visit_gemm(const ir::GemmOp* op, const ir::Stmt&) override {
      report->ops.push_back(gemm_record(*op));
    }
    void other(const char* name, const ir::Stmt& s) {
      report->ops.push_back({name, s.span(), "loop", ""});
    }
    void visit_fill(const ir::FillOp*, const ir::Stmt& s) override { other("T.fill", s); }
    void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
      other((std::string("T.reduce_") + ir::reduce_kind_name(op->reduce_kind)).c_str(), s);
    }
    void visit_atomic_add(const ir::AtomicAddOp*, const ir::Stmt& s) override {
      other("T.atomic_add", s);
    }
    void visit_print(const ir::PrintOp*, const ir::Stmt& s) override { other("T.print", s); }
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      if (!op->origin.empty()) {  // a tile op the front end wrote as a loop (ir::LoopOrigin)
        report->ops.push_back({op->origin.op, s.span(), "elementwise", op->origin.reason});
      }
      // Note [CPU lowering of tile IR]: one thread runs a block, so there is
      // nothing to overlap a load with.
      if (op->for_kind == ir::ForKind::kPipelined && op->stages > 1) {
        report->ops.push_back({"T.Pipelined", s.span(), "not_pipelined",
                               "the CPU runs a block on one thread: a plain loop"});
      }
      ir::IRVisitor::visit_for(op, s);
    }
  } walk;
  walk.uniformity = &uniformity;
  walk.report = report;
  walk.visit(kernel.body);
}

}  // namespace tilejit::cpu

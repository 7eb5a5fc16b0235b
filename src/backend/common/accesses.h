// What a statement of a tile body reads and writes: the buffers behind the
// CUDA lowering's barriers and the CPU's thread loops (Note [Thread
// semantics] in tilejit/transform/thread_uniformity.h).
#pragma once

#include <cstdint>
#include <set>

#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::backend {

// The buffers a statement (or expression) reads and writes, tile-op
// operands included.
struct Accessed : ir::IRVisitor {
  std::set<uint64_t> ids, reads, writes;
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    ids.insert(op->buffer.id());
    reads.insert(op->buffer.id());
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    ids.insert(op->buffer.id());
    writes.insert(op->buffer.id());
    ir::IRVisitor::visit_store(op, s);
  }
  void read(const ir::Region& r) {
    if (r.buffer.defined()) reads.insert(r.buffer.id());
  }
  void write(const ir::Region& r) {
    if (r.buffer.defined()) writes.insert(r.buffer.id());
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    read(op->src);
    write(op->dst);
    ir::IRVisitor::visit_copy(op, s);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    read(op->a);
    read(op->b);
    read(op->c);
    write(op->c);
    ir::IRVisitor::visit_gemm(op, s);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override {
    write(op->dst);
    ir::IRVisitor::visit_fill(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    read(op->src);
    read(op->dst);
    write(op->dst);
    ir::IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    read(op->src);
    read(op->dst);
    write(op->dst);
    ir::IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    read(op->region);
    ir::IRVisitor::visit_print(op, s);
  }
};

inline bool meets(const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
  for (uint64_t x : a) {
    if (b.count(x)) return true;
  }
  return false;
}

}  // namespace tilejit::backend

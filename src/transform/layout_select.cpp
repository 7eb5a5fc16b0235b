// layout_select: see layout_select.h.
#include "tilejit/transform/layout_select.h"

#include <map>
#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::Stmt;

// Swaps every use of a buffer `layouts` names for the buffer carrying its
// layout.
class LayoutSetter : public ir::IRMutator {
 public:
  explicit LayoutSetter(const std::map<uint64_t, ir::Layout>& layouts) : layouts_(layouts) {}

 private:
  const ir::Buffer& laid_out(const ir::Buffer& b) {
    if (auto it = chosen_.find(b.id()); it != chosen_.end()) return it->second;
    auto l = layouts_.find(b.id());
    if (l == layouts_.end()) return b;
    return chosen_.emplace(b.id(), b.with_layout(l->second)).first->second;
  }

  Stmt visit_alloc(const ir::AllocStmt* op, const Stmt& s) override {
    const ir::Buffer& with = laid_out(op->buffer);
    return with.get() == op->buffer.get() ? s : ir::make_stmt<ir::AllocStmt>(with, s.span());
  }

  Expr visit_load(const ir::LoadNode* op, const Expr& e) override {
    Expr loaded = ir::IRMutator::visit_load(op, e);
    const auto* node = loaded.as<ir::LoadNode>();
    const ir::Buffer& with = laid_out(node->buffer);
    return with.get() == node->buffer.get() ? loaded : ir::load(with, node->indices);
  }

  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    Stmt stored = ir::IRMutator::visit_store(op, s);
    const auto* node = stored.as<ir::StoreStmt>();
    const ir::Buffer& with = laid_out(node->buffer);
    if (with.get() == node->buffer.get()) return stored;
    return ir::make_stmt<ir::StoreStmt>(with, node->indices, node->value, s.span());
  }

  ir::Region mutate_region(const ir::Region& r) override {
    ir::Region out = ir::IRMutator::mutate_region(r);
    if (out.buffer.defined()) out.buffer = laid_out(out.buffer);
    return out;
  }

  const std::map<uint64_t, ir::Layout>& layouts_;
  std::map<uint64_t, ir::Buffer> chosen_;
};

// The row-major layout of every tile buffer that has none; a ValueError at
// the allocation of one that arrives with another.
class RowMajor : public ir::IRVisitor {
 public:
  RowMajor(const std::string& func_name, LayoutTarget target)
      : func_name_(func_name), target_(target) {}
  std::map<uint64_t, ir::Layout> layouts;

 private:
  void visit_alloc(const ir::AllocStmt* op, const Stmt& s) override {
    const ir::Buffer& b = op->buffer;
    if (b.scope() == ir::Scope::kGlobal) return;
    if (b->layout.defined()) {
      if (b->layout.kind() != ir::Layout::Kind::kRowMajor) {
        TILEJIT_THROW(kValueError) << ir::diagnostic_prefix(s.span(), func_name_, "layout")
                                   << "buffer " << b.name() << " has layout '"
                                   << b->layout.to_string() << "', which the "
                                   << (target_ == LayoutTarget::kCpu ? "CPU" : "CUDA backend")
                                   << " does not take (it lays tiles out row_major first)";
      }
      return;
    }
    layouts.emplace(b.id(), ir::Layout::row_major());
  }

  const std::string& func_name_;
  LayoutTarget target_;
};

}  // namespace

ir::PrimFunc apply_layouts(const ir::PrimFunc& func,
                           const std::map<uint64_t, ir::Layout>& layouts) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr || layouts.empty()) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = LayoutSetter(layouts).mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

ir::PrimFunc select_layouts(const ir::PrimFunc& func, LayoutTarget target) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  RowMajor row_major(func.name, target);
  row_major.visit(tile->stmt);
  return apply_layouts(func, row_major.layouts);
}

}  // namespace tilejit::transform

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

// Swaps every use of a laid-out buffer for the buffer carrying its layout.
class LayoutSetter : public ir::IRMutator {
 public:
  LayoutSetter(const std::string& func_name, LayoutTarget target)
      : func_name_(func_name), target_(target) {}

 private:
  const char* target_name() const { return target_ == LayoutTarget::kCpu ? "CPU" : "CUDA backend"; }

  const ir::Buffer& laid_out(const ir::Buffer& b) {
    auto it = chosen_.find(b.id());
    return it == chosen_.end() ? b : it->second;
  }

  Stmt visit_alloc(const ir::AllocStmt* op, const Stmt& s) override {
    const ir::Buffer& b = op->buffer;
    if (b.scope() == ir::Scope::kGlobal) return s;
    if (!b->layout.empty()) {
      if (b->layout != kRowMajor) {
        TILEJIT_THROW(kValueError) << ir::diagnostic_prefix(s.span(), func_name_, "layout")
                                   << "buffer " << b.name() << " has layout '" << b->layout
                                   << "', which the " << target_name()
                                   << " does not have (it lays tiles out " << kRowMajor << ")";
      }
      return s;
    }
    const ir::Buffer& with = chosen_.emplace(b.id(), b.with_layout(kRowMajor)).first->second;
    return ir::make_stmt<ir::AllocStmt>(with, s.span());
  }

  Expr visit_load(const ir::LoadNode* op, const Expr& e) override {
    Expr loaded = ir::IRMutator::visit_load(op, e);
    const auto* node = loaded.as<ir::LoadNode>();
    auto it = chosen_.find(node->buffer.id());
    if (it == chosen_.end()) return loaded;
    return ir::load(it->second, node->indices);
  }

  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    Stmt stored = ir::IRMutator::visit_store(op, s);
    const auto* node = stored.as<ir::StoreStmt>();
    auto it = chosen_.find(node->buffer.id());
    if (it == chosen_.end()) return stored;
    return ir::make_stmt<ir::StoreStmt>(it->second, node->indices, node->value, s.span());
  }

  ir::Region mutate_region(const ir::Region& r) override {
    ir::Region out = ir::IRMutator::mutate_region(r);
    if (out.buffer.defined()) out.buffer = laid_out(out.buffer);
    return out;
  }

  const std::string& func_name_;
  LayoutTarget target_;
  std::map<uint64_t, ir::Buffer> chosen_;
};

}  // namespace

ir::PrimFunc select_layouts(const ir::PrimFunc& func, LayoutTarget target) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = LayoutSetter(func.name, target).mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform

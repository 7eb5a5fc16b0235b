// predicate: see predicate.h.
#include "tilejit/transform/predicate.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

// What is known of an integer expression's value: a closed interval whose
// ends may be unknown.
struct Bound {
  std::optional<int64_t> lo, hi;
};

// Saturating enough for indices: any product beyond 2^62 is "unknown".
std::optional<int64_t> mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  __int128 p = __int128(*a) * *b;
  if (p > (__int128(1) << 62) || p < -(__int128(1) << 62)) return std::nullopt;
  return int64_t(p);
}
std::optional<int64_t> add(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

class Predicator : public ir::IRMutator {
 public:
  explicit Predicator(const ir::PrimFunc& f) {
    // Shapes are sizes: their symbols are never negative.
    std::vector<std::string> names;
    for (const ir::Param& p : f.params) {
      if (!p.is_scalar) {
        for (const Expr& d : p.tensor.shape) ir::collect_vars(d, &names);
      }
    }
    shape_symbols_.insert(names.begin(), names.end());
  }

 private:
  Bound bound(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: return {e.int_value(), e.int_value()};
      case ExprKind::kVar: {
        if (e.var_id() == 0) {
          if (shape_symbols_.count(e.var_name())) return {int64_t{0}, std::nullopt};
          return {};
        }
        auto it = ranges_.find(e.var_id());
        return it == ranges_.end() ? Bound{} : it->second;
      }
      case ExprKind::kCast: {
        const auto* c = e.as<ir::CastNode>();
        return c->value.dtype().is_int() && e.dtype().is_int() ? bound(c->value) : Bound{};
      }
      default: break;
    }
    const auto* op = e.as<ir::BinaryNode>();
    if (op == nullptr || !e.dtype().is_int()) return {};
    const Bound a = bound(op->a), b = bound(op->b);
    switch (e.kind()) {
      case ExprKind::kAdd: return {add(a.lo, b.lo), add(a.hi, b.hi)};
      case ExprKind::kSub: {
        auto neg = [](std::optional<int64_t> v) { return v ? std::optional<int64_t>(-*v) : v; };
        return {add(a.lo, neg(b.hi)), add(a.hi, neg(b.lo))};
      }
      case ExprKind::kMul:
        if (a.lo && *a.lo >= 0 && b.lo && *b.lo >= 0) return {mul(a.lo, b.lo), mul(a.hi, b.hi)};
        return {};
      case ExprKind::kFloorDiv:
        if (op->b.is_const() && op->b.int_value() > 0) {
          const int64_t c = op->b.int_value();
          auto div = [c](std::optional<int64_t> v) {
            return v ? std::optional<int64_t>(ir::floordiv_int(*v, c)) : v;
          };
          return {div(a.lo), div(a.hi)};
        }
        return {};
      case ExprKind::kFloorMod:
        if (op->b.is_const() && op->b.int_value() > 0) return {int64_t{0}, op->b.int_value() - 1};
        return {};
      case ExprKind::kMin: {
        Bound r;
        if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
        if (a.hi || b.hi) r.hi = a.hi && b.hi ? std::min(*a.hi, *b.hi) : (a.hi ? a.hi : b.hi);
        return r;
      }
      case ExprKind::kMax: {
        Bound r;
        if (a.lo || b.lo) r.lo = a.lo && b.lo ? std::max(*a.lo, *b.lo) : (a.lo ? a.lo : b.lo);
        if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
        return r;
      }
      default: return {};
    }
  }

  bool known(const Expr& cond) const {
    for (const Expr& k : known_) {
      if (ir::structural_equal(k, cond)) return true;
    }
    return false;
  }

  // The comparisons an access of `buffer` at `indices` needs, each not
  // already proven or in force.
  std::vector<Expr> needed(const ir::Buffer& buffer, const std::vector<Expr>& indices) {
    std::vector<Expr> conds;
    for (size_t d = 0; d < indices.size(); ++d) {
      const Expr& i = indices[d];
      const Expr& extent = buffer.shape()[d];
      const Bound b = bound(i);
      const Expr lower = ir::ge(i, ir::make_int(0, i.dtype()));
      if (!(b.lo && *b.lo >= 0) && !known(lower)) conds.push_back(lower);
      const Expr upper = ir::lt(i, extent);
      const bool proven = extent.is_const() && b.hi && *b.hi < extent.int_value();
      if (!proven && !known(upper)) conds.push_back(upper);
    }
    return conds;
  }

  static Expr all_of(const std::vector<Expr>& conds) {
    Expr c = conds[0];
    for (size_t k = 1; k < conds.size(); ++k) c = ir::logical_and(c, conds[k]);
    return c;
  }

  static bool is_tensor(const ir::Buffer& b) { return b.scope() == ir::Scope::kGlobal; }

  Expr visit_load(const ir::LoadNode* op, const Expr& e) override {
    Expr loaded = ir::IRMutator::visit_load(op, e);
    if (!is_tensor(op->buffer)) return loaded;
    const auto* node = loaded.as<ir::LoadNode>();
    const std::vector<Expr> conds = needed(node->buffer, node->indices);
    if (conds.empty()) return loaded;
    const DataType t = loaded.dtype();
    const Expr zero = t.is_float()                   ? ir::make_float(0.0, t)
                      : t == DataType::boolean()     ? ir::make_bool(false)
                                                     : ir::make_int(0, t);
    return ir::select(all_of(conds), loaded, zero);
  }

  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    if (!is_tensor(op->buffer)) return ir::IRMutator::visit_store(op, s);
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    const std::vector<Expr> conds = needed(op->buffer, indices);
    // The value's loads at the same indices are covered by the guard.
    known_.insert(known_.end(), conds.begin(), conds.end());
    Expr value = mutate(op->value);
    known_.resize(known_.size() - conds.size());
    Stmt store = (changed || value.get() != op->value.get())
                     ? ir::make_stmt<ir::StoreStmt>(op->buffer, std::move(indices), value, s.span())
                     : s;
    if (conds.empty()) return store;
    return ir::make_stmt<ir::IfStmt>(all_of(conds), store, Stmt(), s.span());
  }

  Stmt visit_if(const ir::IfStmt* op, const Stmt& s) override {
    Expr cond = mutate(op->cond);
    // A conjunction's parts are each in force inside.
    std::vector<Expr> parts;
    std::vector<Expr> todo = {op->cond};
    while (!todo.empty()) {
      Expr c = todo.back();
      todo.pop_back();
      if (const auto* b = c.as<ir::BinaryNode>(); b && c.kind() == ExprKind::kAnd) {
        todo.push_back(b->a);
        todo.push_back(b->b);
      } else {
        parts.push_back(c);
      }
    }
    known_.insert(known_.end(), parts.begin(), parts.end());
    Stmt then_case = mutate(op->then_case);
    known_.resize(known_.size() - parts.size());
    Stmt else_case = mutate(op->else_case);
    if (cond.get() == op->cond.get() && then_case.get() == op->then_case.get() &&
        else_case.get() == op->else_case.get()) {
      return s;
    }
    return ir::make_stmt<ir::IfStmt>(cond, then_case, else_case, s.span());
  }

  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    for (size_t d = 0; d < op->block_vars.size(); ++d) {
      const Expr& g = op->grid[d];
      ranges_[op->block_vars[d].var_id()] =
          g.is_const() ? Bound{int64_t{0}, g.int_value() - 1} : Bound{int64_t{0}, std::nullopt};
    }
    for (size_t d = 0; d < op->thread_vars.size() && d < op->threads.size(); ++d) {
      ranges_[op->thread_vars[d].var_id()] = {int64_t{0}, int64_t{op->threads[d]} - 1};
    }
    return ir::IRMutator::visit_kernel(op, s);
  }

  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    const Bound lo = bound(op->min), ext = bound(op->extent);
    Bound r;
    r.lo = lo.lo;
    if (lo.hi && ext.hi) r.hi = *lo.hi + *ext.hi - 1;
    ranges_[op->var.var_id()] = r;
    return ir::IRMutator::visit_for(op, s);
  }

  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    Stmt out = ir::IRMutator::visit_let(op, s);
    if (op->var.dtype().is_int()) ranges_[op->var.var_id()] = bound(op->value);
    return out;
  }

  // Tile ops check their own regions' bounds (predicate.h), but the
  // expressions inside them are scalar code: a region's start read from a
  // tensor (the row of a gather, KV[Idx[i], :]) or a fill value loads like
  // any other, so the base mutator visits them and their loads are guarded
  // here.

  std::set<std::string> shape_symbols_;
  std::map<uint64_t, Bound> ranges_;
  std::vector<Expr> known_;
};

}  // namespace

ir::PrimFunc predicate(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = Predicator(func).mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform

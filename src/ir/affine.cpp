#include "tilejit/ir/affine.h"

#include <utility>

namespace tilejit::ir {
namespace {

bool add_to(int64_t* x, int64_t y) { return !__builtin_add_overflow(*x, y, x); }
bool mul_to(int64_t* x, int64_t y) { return !__builtin_mul_overflow(*x, y, x); }

// x += sign * y, sign being 1 or -1.
bool accumulate(LinearForm* x, const LinearForm& y, int64_t sign) {
  int64_t c = y.constant;
  if (!mul_to(&c, sign) || !add_to(&x->constant, c)) return false;
  for (const auto& [v, k] : y.terms) {
    int64_t term = k;
    if (!mul_to(&term, sign)) return false;
    auto [it, inserted] = x->terms.emplace(v, term);
    if (inserted) continue;
    if (!add_to(&it->second, term)) return false;
    if (it->second == 0) x->terms.erase(it);
  }
  return true;
}

bool scale(LinearForm* x, int64_t factor) {
  if (factor == 0) {
    *x = LinearForm{};
    return true;
  }
  if (!mul_to(&x->constant, factor)) return false;
  for (auto& [v, k] : x->terms) {
    if (!mul_to(&k, factor)) return false;
  }
  return true;
}

bool is_signed_int(DataType t) { return t.code == DataType::kInt && t.lanes == 1; }

}  // namespace

bool as_affine(const Expr& e, const std::function<const LinearForm*(uint64_t)>& lookup,
               LinearForm* out) {
  if (!e.defined() || !e.dtype().is_int()) return false;
  *out = LinearForm{};
  switch (e.kind()) {
    case ExprKind::kIntImm: out->constant = e.int_value(); return true;
    case ExprKind::kVar: {
      if (e.var_id() == 0) return false;  // a symbol: its value is the call's
      if (const LinearForm* bound = lookup(e.var_id())) {
        *out = *bound;
      } else {
        out->terms.emplace(e.var_id(), 1);
      }
      return true;
    }
    case ExprKind::kAdd:
    case ExprKind::kSub: {
      LinearForm a, b;
      if (!as_affine(e.a(), lookup, &a) || !as_affine(e.b(), lookup, &b)) return false;
      if (!accumulate(&a, b, e.kind() == ExprKind::kAdd ? 1 : -1)) return false;
      *out = std::move(a);
      return true;
    }
    case ExprKind::kMul: {
      LinearForm a, b;
      if (!as_affine(e.a(), lookup, &a) || !as_affine(e.b(), lookup, &b)) return false;
      if (!a.terms.empty() && !b.terms.empty()) return false;  // a product of variables
      if (a.terms.empty()) std::swap(a, b);
      if (!scale(&a, b.constant)) return false;
      *out = std::move(a);
      return true;
    }
    case ExprKind::kCast: {
      // A signed integer widened keeps its value; any other cast may not.
      const Expr& v = e.as<CastNode>()->value;
      if (!is_signed_int(e.dtype()) || !is_signed_int(v.dtype()) || e.dtype().bits < v.dtype().bits) {
        return false;
      }
      return as_affine(v, lookup, out);
    }
    default: return false;
  }
}

bool affine_range(const LinearForm& a, const std::map<uint64_t, IntRange>& ranges,
                  IntRange* out) {
  IntRange r{a.constant, a.constant};
  for (const auto& [v, k] : a.terms) {
    auto it = ranges.find(v);
    if (it == ranges.end() || it->second.empty()) return false;
    // Note [Exact affine ranges]: each bound from the corner its sign picks.
    int64_t lo = k > 0 ? it->second.lo : it->second.hi;
    int64_t hi = k > 0 ? it->second.hi : it->second.lo;
    if (!mul_to(&lo, k) || !mul_to(&hi, k) || !add_to(&r.lo, lo) || !add_to(&r.hi, hi)) {
      return false;
    }
  }
  *out = r;
  return true;
}

bool comparison_difference(const Expr& cond,
                           const std::function<const LinearForm*(uint64_t)>& lookup,
                           LinearForm* out) {
  const ExprKind kind = cond.kind();
  if (kind != ExprKind::kLT && kind != ExprKind::kLE && kind != ExprKind::kGT &&
      kind != ExprKind::kGE && kind != ExprKind::kEQ && kind != ExprKind::kNE) {
    return false;
  }
  LinearForm x, y;
  if (!as_affine(cond.a(), lookup, &x) || !as_affine(cond.b(), lookup, &y)) return false;
  if (__builtin_sub_overflow(x.constant, y.constant, &x.constant)) return false;
  for (const auto& [v, k] : y.terms) {
    int64_t& t = x.terms[v];
    if (__builtin_sub_overflow(t, k, &t)) return false;
    if (t == 0) x.terms.erase(v);
  }
  *out = std::move(x);
  return true;
}

}  // namespace tilejit::ir

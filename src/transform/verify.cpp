#include "tilejit/transform/verify.h"

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/index_bounds.h"

namespace tilejit::transform {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::Range;
using ir::Region;
using ir::Scope;
using ir::Span;
using ir::Stmt;

// Note [Verifier bounds]
// A region must lie inside its buffer where that is decidable from
// constants: for shared, fragment and local buffers every range with a
// constant min and extent is checked against a constant dimension. A global
// tensor is only checked to start inside it: partial tiles of a global
// tensor are legal (the lowering masks the elements outside), so a tile may
// run past its end.

// The extents with the dimensions of constant extent 1 left out: "[1, 128,
// 64]" and "[128, 64]" are the same tile.
std::vector<Expr> squeeze(const std::vector<Expr>& extents) {
  std::vector<Expr> out;
  for (const Expr& e : extents) {
    if (!(e.is_const() && e.int_value() == 1)) out.push_back(e);
  }
  return out;
}

// A gemm operand's matrix extents: leading dimensions of extent 1 left out
// down to two, so that a [1, 64] tile stays a 1 x 64 matrix (a decode step's
// single query row, M = 1) and a [64, 1] one a column (N = 1); a tile of more
// dimensions then squeezes as elsewhere.
std::vector<Expr> matrix_extents(const std::vector<Expr>& extents) {
  size_t lead = 0;
  while (extents.size() - lead > 2 && extents[lead].is_const() && extents[lead].int_value() == 1) {
    ++lead;
  }
  std::vector<Expr> out(extents.begin() + std::ptrdiff_t(lead), extents.end());
  return out.size() > 2 ? squeeze(out) : out;
}

// Whether two extents are provably different: both constant and unequal, or
// different after simplification when neither is constant. A constant
// against a symbolic extent is not decided here (it may hold at run time).
bool differ(const Expr& a, const Expr& b) {
  Expr x = ir::simplify(a), y = ir::simplify(b);
  if (x.is_const() && y.is_const()) return x.int_value() != y.int_value();
  if (x.is_const() || y.is_const()) return false;
  return !ir::structural_equal(x, y);
}

bool shapes_differ(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  std::vector<Expr> x = squeeze(a), y = squeeze(b);
  if (x.size() != y.size()) return true;
  for (size_t i = 0; i < x.size(); ++i) {
    if (differ(x[i], y[i])) return true;
  }
  return false;
}

std::string extents_text(const std::vector<Expr>& e) {
  std::vector<Expr> s;
  for (const Expr& x : e) s.push_back(ir::simplify(x));
  return ir::shape_string(s);
}

class Verifier : public ir::IRMutator {
 public:
  explicit Verifier(const ir::PrimFunc& f) : func_(f) {
    const ir::TileBody& body = *f.tile();
    for (const Buffer& b : body.params) {
      if (b.defined()) globals_.insert(b.id());
    }
    for (const Buffer& b : body.globals) globals_.insert(b.id());
  }

 private:
  std::string prefix(const Span& span, const std::string& op) const {
    return ir::diagnostic_prefix(span, func_.name, op);
  }

  // --- buffers in scope
  void check_visible(const Buffer& b, const Span& span, const std::string& op) {
    TILEJIT_CHECK(b.defined(), kValueError) << prefix(span, op) << "a buffer operand is undefined";
    if (globals_.count(b.id()) || locals_.count(b.id())) return;
    if (b.scope() == Scope::kGlobal) {
      TILEJIT_THROW(kValueError) << prefix(span, op) << "global buffer " << b.name()
                                 << " is neither a parameter nor made by alloc_global";
    }
    TILEJIT_THROW(kValueError) << prefix(span, op) << ir::scope_name(b.scope()) << " buffer "
                               << b.name() << " is not allocated in this kernel";
  }

  // --- regions
  // The region with every range's extent defined: a whole buffer becomes
  // [0, dim) per dimension; a start corner takes `other`'s extents, aligned
  // to its trailing dimensions (leading dimensions of extent 1).
  Region resolve(const Region& r, const std::vector<Expr>& other, const Span& span,
                 const std::string& op, const char* role) {
    Region out{r.buffer, {}};
    if (r.is_whole()) {
      for (const Expr& d : r.buffer.shape()) out.ranges.push_back({Expr(0), d});
      return out;
    }
    TILEJIT_CHECK(int(r.ranges.size()) == r.buffer.rank(), kValueError)
        << prefix(span, op) << "the " << role << " " << ir::to_string(r) << " has "
        << r.ranges.size() << " indices for a buffer of rank " << r.buffer.rank();
    if (!r.is_corner()) {
      for (const Range& x : r.ranges) {
        TILEJIT_CHECK(x.extent.defined(), kValueError)
            << prefix(span, op) << "the " << role << " " << ir::to_string(r)
            << " mixes indices with and without extents";
      }
      return r;
    }
    std::vector<Expr> ext = other;
    if (ext.size() > r.ranges.size()) ext = squeeze(ext);
    TILEJIT_CHECK(ext.size() <= r.ranges.size(), kValueError)
        << prefix(span, op) << "the " << role << " " << ir::to_string(r) << " has rank "
        << r.ranges.size() << " but the other operand's extents are " << extents_text(other);
    const size_t lead = r.ranges.size() - ext.size();
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      TILEJIT_CHECK(!r.ranges[d].extent.defined(), kValueError)
          << prefix(span, op) << "the " << role << " " << ir::to_string(r)
          << " mixes indices with and without extents";
      out.ranges.push_back({r.ranges[d].min, d < lead ? Expr(1) : ext[d - lead]});
    }
    return out;
  }

  // Note [Verifier bounds].
  void check_bounds(const Region& r, const Span& span, const std::string& op, const char* role) {
    const bool global = r.buffer.scope() == Scope::kGlobal;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      const Expr mn = ir::simplify(r.ranges[d].min);
      const Expr ext = ir::simplify(r.ranges[d].extent);
      const Expr& dim = r.buffer.shape()[d];
      const bool below = mn.is_const() && mn.int_value() < 0;
      bool above = false;
      if (dim.is_const()) {
        if (global) {
          above = mn.is_const() && mn.int_value() >= dim.int_value() && dim.int_value() > 0;
        } else {
          above = mn.is_const() && ext.is_const() &&
                  mn.int_value() + ext.int_value() > dim.int_value();
        }
      }
      TILEJIT_CHECK(!ext.is_const() || ext.int_value() > 0, kValueError)
          << prefix(span, op) << "the " << role << " " << ir::to_string(r) << " is empty in dimension "
          << d;
      if (TILEJIT_UNLIKELY(below || above)) {
        TILEJIT_THROW(kValueError) << prefix(span, op) << "the " << role << " "
                                   << ir::to_string(r) << " lies outside " << r.buffer.name()
                                   << " " << ir::shape_string(r.buffer.shape())
                                   << " in dimension " << d;
      }
    }
  }

  Region operand(const Region& r, const std::vector<Expr>& other, const Span& span,
                 const std::string& op, const char* role) {
    check_visible(r.buffer, span, op);
    Region out = resolve(mutate_region(r), other, span, op, role);
    check_bounds(out, span, op, role);
    return out;
  }

  // An operand that cannot take its extents from another one.
  Region standalone(const Region& r, const Span& span, const std::string& op, const char* role) {
    TILEJIT_CHECK(r.buffer.defined(), kValueError) << prefix(span, op) << "the " << role
                                                   << " is undefined";
    TILEJIT_CHECK(!r.is_corner(), kValueError)
        << prefix(span, op) << "the " << role << " " << ir::to_string(r)
        << " is a start corner; give its extents (a slice or the whole buffer)";
    return operand(r, {}, span, op, role);
  }

  // --- expressions
  Expr visit_load(const ir::LoadNode* op, const Expr& e) override {
    check_visible(op->buffer, span_, op_);
    check_indices(op->buffer, op->indices, span_, op_);
    return IRMutator::visit_load(op, e);
  }

  void check_indices(const Buffer& b, const std::vector<Expr>& idx, const Span& span,
                     const std::string& op) {
    if (b.scope() == Scope::kGlobal) return;  // Note [Verifier bounds]
    for (size_t d = 0; d < idx.size(); ++d) {
      const Expr i = ir::simplify(idx[d]);
      const Expr& dim = b.shape()[d];
      if (i.is_const() && dim.is_const() && (i.int_value() < 0 || i.int_value() >= dim.int_value())) {
        TILEJIT_THROW(kValueError) << prefix(span, op) << "index " << i.int_value()
                                   << " lies outside " << b.name() << " "
                                   << ir::shape_string(b.shape()) << " in dimension " << d;
      }
    }
  }

  void check_cond(const Expr& c, const Span& span, const char* op) {
    TILEJIT_CHECK(c.defined() && c.dtype() == DataType::boolean(), kTypeError)
        << prefix(span, op) << "the condition "
        << (c.defined() ? "(" + ir::to_string(c) + ") has dtype " + c.dtype().name()
                        : std::string("is undefined"))
        << "; expected bool";
  }

  // --- statements
  // Sets the op and span that expression checks inside a statement report.
  struct At {
    At(Verifier* v, const Span& s, std::string op) : v_(v), span_(v->span_), op_(v->op_) {
      v->span_ = s;
      v->op_ = std::move(op);
    }
    ~At() {
      v_->span_ = span_;
      v_->op_ = op_;
    }
    Verifier* v_;
    Span span_;
    std::string op_;
  };

  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    locals_.clear();
    At at(this, op->span, "T.Kernel");
    return IRMutator::visit_kernel(op, s);
  }
  Stmt visit_alloc(const ir::AllocStmt* op, const Stmt& s) override {
    TILEJIT_CHECK(op->buffer.scope() != Scope::kGlobal, kValueError)
        << prefix(op->span, "alloc") << "global buffer " << op->buffer.name()
        << " is allocated inside a kernel; global buffers come from alloc_global";
    locals_.insert(op->buffer.id());
    return s;
  }
  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    At at(this, op->span, "for");
    TILEJIT_CHECK(op->extent.dtype().is_int() && op->min.dtype().is_int(), kTypeError)
        << prefix(op->span, "for") << "loop " << ir::to_string(op->var)
        << " has non-integer bounds";
    return IRMutator::visit_for(op, s);
  }
  Stmt visit_if(const ir::IfStmt* op, const Stmt& s) override {
    check_cond(op->cond, op->span, "if");
    At at(this, op->span, "if");
    return IRMutator::visit_if(op, s);
  }
  Stmt visit_while(const ir::WhileStmt* op, const Stmt& s) override {
    check_cond(op->cond, op->span, "while");
    At at(this, op->span, "while");
    return IRMutator::visit_while(op, s);
  }
  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    At at(this, op->span, "store");
    check_visible(op->buffer, op->span, "store");
    TILEJIT_CHECK(int(op->indices.size()) == op->buffer.rank(), kValueError)
        << prefix(op->span, "store") << op->buffer.name() << ": " << op->indices.size()
        << " indices for a buffer of rank " << op->buffer.rank();
    check_indices(op->buffer, op->indices, op->span, "store");
    return IRMutator::visit_store(op, s);
  }
  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    At at(this, op->span, "let");
    return IRMutator::visit_let(op, s);
  }
  Stmt visit_evaluate(const ir::EvaluateStmt* op, const Stmt& s) override {
    At at(this, op->span, "evaluate");
    return IRMutator::visit_evaluate(op, s);
  }

  Stmt visit_copy(const ir::CopyOp* op, const Stmt&) override {
    const char* name = "T.copy";
    At at(this, op->span, name);
    TILEJIT_CHECK(op->src.buffer.defined() && op->dst.buffer.defined(), kValueError)
        << prefix(op->span, name) << "an operand is undefined";
    if (TILEJIT_UNLIKELY(op->src.is_corner() && op->dst.is_corner())) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "the source "
                                 << ir::to_string(op->src) << " and the destination "
                                 << ir::to_string(op->dst)
                                 << " are both start corners; one side must give the extents";
    }
    Region src, dst;
    if (op->src.is_corner()) {
      dst = operand(op->dst, {}, op->span, name, "destination");
      src = operand(op->src, dst.extents(), op->span, name, "source");
    } else {
      src = operand(op->src, {}, op->span, name, "source");
      dst = operand(op->dst, src.extents(), op->span, name, "destination");
    }
    if (TILEJIT_UNLIKELY(shapes_differ(src.extents(), dst.extents()))) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "source " << ir::to_string(src)
                                 << " and destination " << ir::to_string(dst)
                                 << " differ in shape (" << extents_text(src.extents()) << " vs "
                                 << extents_text(dst.extents()) << ")";
    }
    return ir::make_stmt<ir::CopyOp>(std::move(src), std::move(dst), op->span, op->disable_tma);
  }

  Stmt visit_gemm(const ir::GemmOp* op, const Stmt&) override {
    const char* name = "T.gemm";
    At at(this, op->span, name);
    Region a = standalone(op->a, op->span, name, "operand A");
    Region b = standalone(op->b, op->span, name, "operand B");
    Region c = standalone(op->c, op->span, name, "accumulator C");
    auto scope_ok = [](Scope s) { return s == Scope::kShared || s == Scope::kFragment; };
    TILEJIT_CHECK(scope_ok(a.buffer.scope()), kValueError)
        << prefix(op->span, name) << "operand A " << a.buffer.name() << " is "
        << ir::scope_name(a.buffer.scope()) << "; expected a shared or fragment buffer";
    TILEJIT_CHECK(scope_ok(b.buffer.scope()), kValueError)
        << prefix(op->span, name) << "operand B " << b.buffer.name() << " is "
        << ir::scope_name(b.buffer.scope()) << "; expected a shared or fragment buffer";
    TILEJIT_CHECK(c.buffer.scope() == Scope::kFragment, kValueError)
        << prefix(op->span, name) << "accumulator C " << c.buffer.name() << " is "
        << ir::scope_name(c.buffer.scope()) << "; expected a fragment buffer";
    TILEJIT_CHECK(a.buffer.dtype() == b.buffer.dtype(), kTypeError)
        << prefix(op->span, name) << "operands " << a.buffer.name() << " ("
        << a.buffer.dtype().name() << ") and " << b.buffer.name() << " ("
        << b.buffer.dtype().name() << ") differ in dtype";
    const std::vector<Expr> ea = matrix_extents(a.extents()), eb = matrix_extents(b.extents()),
                            ec = matrix_extents(c.extents());
    auto two_d = [&](const std::vector<Expr>& e, const Region& r, const char* role) {
      TILEJIT_CHECK(e.size() == 2, kValueError)
          << prefix(op->span, name) << role << " " << ir::to_string(r) << " is "
          << extents_text(r.extents()) << "; expected a 2-D tile";
    };
    two_d(ea, a, "operand A");
    two_d(eb, b, "operand B");
    two_d(ec, c, "accumulator C");
    const Expr m = op->trans_a ? ea[1] : ea[0], ka = op->trans_a ? ea[0] : ea[1];
    const Expr kb = op->trans_b ? eb[1] : eb[0], n = op->trans_b ? eb[0] : eb[1];
    if (TILEJIT_UNLIKELY(differ(ka, kb))) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "the K extents of "
                                 << ir::to_string(a) << " and " << ir::to_string(b)
                                 << " differ (" << ir::to_string(ir::simplify(ka)) << " vs "
                                 << ir::to_string(ir::simplify(kb)) << ")";
    }
    if (TILEJIT_UNLIKELY(differ(m, ec[0]) || differ(n, ec[1]))) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "accumulator " << ir::to_string(c)
                                 << " is " << extents_text(ec) << " but A x B is "
                                 << extents_text({m, n});
    }
    return ir::make_stmt<ir::GemmOp>(std::move(a), std::move(b), std::move(c), op->trans_a,
                                     op->trans_b, op->clear_accum, op->policy, op->span);
  }

  Stmt visit_fill(const ir::FillOp* op, const Stmt&) override {
    At at(this, op->span, "T.fill");
    Region dst = standalone(op->dst, op->span, "T.fill", "destination");
    return ir::make_stmt<ir::FillOp>(std::move(dst), mutate(op->value), op->span);
  }

  Stmt visit_reduce(const ir::ReduceOp* op, const Stmt&) override {
    const std::string name = std::string("T.reduce_") + ir::reduce_kind_name(op->reduce_kind);
    At at(this, op->span, name);
    Region src = standalone(op->src, op->span, name, "source");
    Region dst = standalone(op->dst, op->span, name, "destination");
    const std::vector<Expr> es = src.extents();
    TILEJIT_CHECK(op->dim >= 0 && op->dim < int(es.size()), kValueError)
        << prefix(op->span, name) << "dim " << op->dim << " is out of range for "
        << ir::to_string(src) << " (rank " << es.size() << ")";
    std::vector<Expr> reduced;
    for (size_t d = 0; d < es.size(); ++d) {
      if (int(d) != op->dim) reduced.push_back(es[d]);
    }
    if (TILEJIT_UNLIKELY(shapes_differ(reduced, dst.extents()))) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "destination " << ir::to_string(dst)
                                 << " is " << extents_text(dst.extents()) << " but "
                                 << ir::to_string(src) << " reduced along dim " << op->dim
                                 << " is " << extents_text(reduced);
    }
    return ir::make_stmt<ir::ReduceOp>(op->reduce_kind, std::move(src), std::move(dst), op->dim,
                                       op->clear, op->span);
  }

  Stmt visit_atomic_add(const ir::AtomicAddOp* op, const Stmt&) override {
    const char* name = "T.atomic_add";
    At at(this, op->span, name);
    if (!op->src.buffer.defined()) {
      // A scalar: one element of dst (a corner's extents are all 1).
      std::vector<Expr> ones(op->dst.ranges.empty() ? size_t(op->dst.buffer.rank())
                                                    : op->dst.ranges.size(),
                             Expr(1));
      Region dst = operand(op->dst, ones, op->span, name, "destination");
      if (TILEJIT_UNLIKELY(!squeeze(dst.extents()).empty())) {
        TILEJIT_THROW(kValueError) << prefix(op->span, name) << "a scalar value added to "
                                   << ir::to_string(dst) << ", which is "
                                   << extents_text(dst.extents()) << "; expected one element";
      }
      return ir::make_stmt<ir::AtomicAddOp>(std::move(dst), Region{}, mutate(op->value), op->span);
    }
    Region src = standalone(op->src, op->span, name, "source");
    Region dst = operand(op->dst, src.extents(), op->span, name, "destination");
    if (TILEJIT_UNLIKELY(shapes_differ(src.extents(), dst.extents()))) {
      TILEJIT_THROW(kValueError) << prefix(op->span, name) << "source " << ir::to_string(src)
                                 << " and destination " << ir::to_string(dst)
                                 << " differ in shape (" << extents_text(src.extents()) << " vs "
                                 << extents_text(dst.extents()) << ")";
    }
    return ir::make_stmt<ir::AtomicAddOp>(std::move(dst), std::move(src), Expr(), op->span);
  }

  Stmt visit_print(const ir::PrintOp* op, const Stmt& s) override {
    At at(this, op->span, "T.print");
    if (!op->region.buffer.defined()) return IRMutator::visit_print(op, s);
    Region r = standalone(op->region, op->span, "T.print", "buffer");
    return ir::make_stmt<ir::PrintOp>(mutate(op->value), std::move(r), op->message, op->span);
  }

  const ir::PrimFunc& func_;
  std::set<uint64_t> globals_;
  std::set<uint64_t> locals_;
  Span span_;
  std::string op_ = "expression";
};

}  // namespace

ir::PrimFunc verify(const ir::PrimFunc& func) {
  const ir::TileBody* body = func.tile();
  if (body == nullptr) return func;
  TILEJIT_CHECK(!body->kernels().empty(), kValueError) << func.name << ": the tile body has no kernel";
  ir::PrimFunc out = func;
  ir::TileBody normalised = *body;
  Verifier v(func);
  normalised.stmt = v.mutate(body->stmt);
  out.body = std::move(normalised);
  check_index_bounds(out);
  return out;
}

}  // namespace tilejit::transform

// The state of a TileBuilder (tilejit/ir/tile_builder.h) while it records:
// the open frames (Note [Builder frames]), the parameters, and the checks
// every recording method shares. Private to src/ir (tile_builder.cpp: frames,
// parameters, allocations, statements; tile_builder_ops.cpp: the tile ops).
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {
namespace builder_detail {

// Note [Builder frames] (tile_builder.h).
enum class FrameKind : uint8_t { kRoot, kKernel, kFor, kIf, kElse, kWhile };

struct Frame {
  FrameKind kind = FrameKind::kRoot;
  Span span;
  std::vector<Stmt> stmts;
  // kKernel
  std::vector<Expr> grid, block_vars, thread_vars;
  std::vector<int> threads;
  Rasterization raster;
  Span raster_span;  // the T.use_swizzle that set `raster`
  // kFor
  Expr var, min, extent;
  ForKind for_kind = ForKind::kSerial;
  int stages = 0;
  PipelineSchedule schedule;
  Span schedule_span;
  LoopOrigin origin;
  // kIf / kElse / kWhile
  Expr cond;
  Stmt then_case;  // kElse: the closed then-branch
};

inline const char* for_op_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "T.serial";
    case ForKind::kUnroll: return "T.unroll";
    case ForKind::kParallel: return "T.Parallel";
    case ForKind::kVectorized: return "T.vectorized";
    case ForKind::kPipelined: return "T.Pipelined";
  }
  return "for";
}

inline const char* alloc_op_name(Scope scope) {
  switch (scope) {
    case Scope::kShared: return "T.alloc_shared";
    case Scope::kFragment: return "T.alloc_fragment";
    case Scope::kLocal: return "T.alloc_local";
    case Scope::kGlobal: return "T.alloc_global";
  }
  return "alloc";
}

inline bool is_identifier(const std::string& s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// The first IR variable (id > 0) in `e`, or an undefined Expr.
class FirstIrVar : public IRVisitor {
 public:
  Expr found;

 protected:
  void visit_var(const VarNode* op, const Expr& e) override {
    if (op->id != 0 && !found.defined()) found = e;
  }
};

inline Expr first_ir_var(const Expr& e) {
  FirstIrVar v;
  v.visit(e);
  return v.found;
}

}  // namespace builder_detail

struct TileBuilder::State {
  using Frame = builder_detail::Frame;
  using FrameKind = builder_detail::FrameKind;

  std::string func_name;
  std::vector<Param> params;
  std::vector<Buffer> param_buffers;
  std::vector<Expr> scalars;
  std::vector<Buffer> globals;
  std::string dialect;
  std::vector<Frame> frames{Frame{}};  // frames[0] is the root: it holds kernels
  bool finished = false;

  std::string prefix(const Span& span, const std::string& op) const {
    return diagnostic_prefix(span, func_name, op);
  }

  Frame& top() { return frames.back(); }
  bool in_kernel() const { return frames.size() > 1; }

  // What the innermost open construct is, for messages: "a T.Kernel opened at
  // k.py:3:4" (the span part only when there is one).
  std::string describe(const Frame& f) const {
    std::string what;
    switch (f.kind) {
      case FrameKind::kRoot: return "none";
      case FrameKind::kKernel: what = "a T.Kernel"; break;
      case FrameKind::kFor: what = std::string("a ") + builder_detail::for_op_name(f.for_kind) + " loop"; break;
      case FrameKind::kIf: what = "an if"; break;
      case FrameKind::kElse: what = "an else"; break;
      case FrameKind::kWhile: what = "a while loop"; break;
    }
    if (!f.span.empty()) what += " opened at " + f.span.str();
    return what;
  }

  void check_open(const Span& span, const std::string& op) {
    TILEJIT_CHECK(!finished, kValueError) << prefix(span, op) << "the function is already finished";
  }

  void check_in_kernel(const Span& span, const std::string& op) {
    check_open(span, op);
    TILEJIT_CHECK(in_kernel(), kValueError) << prefix(span, op) << "outside a T.Kernel";
  }

  // Pops the innermost frame, which must be of `kind`.
  Frame pop(FrameKind kind, const Span& span, const std::string& op, const char* what) {
    check_open(span, op);
    if (TILEJIT_UNLIKELY(top().kind != kind)) {
      TILEJIT_THROW(kValueError) << prefix(span, op) << "no open " << what
                                 << " to close (the innermost open construct is "
                                 << describe(top()) << ")";
    }
    Frame f = std::move(frames.back());
    frames.pop_back();
    return f;
  }

  void add(Stmt s) { top().stmts.push_back(std::move(s)); }

  void check_int(const Expr& e, const Span& span, const std::string& op, const std::string& what) {
    TILEJIT_CHECK(e.defined(), kValueError) << prefix(span, op) << what << " is undefined";
    TILEJIT_CHECK(e.dtype().is_int(), kTypeError)
        << prefix(span, op) << what << " (" << to_string(e) << ") has dtype " << e.dtype().name()
        << "; expected an integer";
  }

  void check_bool(const Expr& e, const Span& span, const std::string& op) {
    TILEJIT_CHECK(e.defined(), kValueError) << prefix(span, op) << "the condition is undefined";
    TILEJIT_CHECK(e.dtype() == DataType::boolean(), kTypeError)
        << prefix(span, op) << "the condition (" << to_string(e) << ") has dtype "
        << e.dtype().name() << "; expected bool";
  }

  void check_region(const Region& r, const Span& span, const std::string& op, const char* role) {
    TILEJIT_CHECK(r.buffer.defined(), kValueError)
        << prefix(span, op) << "the " << role << " is undefined";
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      const std::string what =
          std::string("the ") + role + " " + r.buffer.name() + " index " + std::to_string(d);
      check_int(r.ranges[d].min, span, op, what);
      if (r.ranges[d].extent.defined()) check_int(r.ranges[d].extent, span, op, what + " extent");
    }
  }

  void check_param_name(const std::string& name, const Span& span, const std::string& op) {
    check_open(span, op);
    TILEJIT_CHECK(!in_kernel() && frames[0].stmts.empty(), kValueError)
        << prefix(span, op) << "parameter '" << name << "' is declared after the body began";
    TILEJIT_CHECK(builder_detail::is_identifier(name), kValueError)
        << prefix(span, op) << "parameter name '" << name << "' is not an identifier";
    for (const Param& p : params) {
      TILEJIT_CHECK(p.name != name, kValueError)
          << prefix(span, op) << "parameter '" << name << "' duplicates an earlier name";
    }
  }
};


}  // namespace tilejit::ir

// TileBuilder (tilejit/ir/tile_builder.h): parameters, frames, allocations,
// scalar statements and finish(); the tile ops are in tile_builder_ops.cpp,
// the state both share in tile_builder_state.h.
#include "tilejit/ir/tile_builder.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "ir/tile_builder_state.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {

using builder_detail::alloc_op_name;
using builder_detail::first_ir_var;
using builder_detail::for_op_name;
using builder_detail::is_identifier;
using Frame = builder_detail::Frame;
using FrameKind = builder_detail::FrameKind;

TileBuilder::TileBuilder(std::string func_name) : state_(std::make_unique<State>()) {
  state_->func_name = std::move(func_name);
}
TileBuilder::~TileBuilder() = default;
TileBuilder::TileBuilder(TileBuilder&&) noexcept = default;
TileBuilder& TileBuilder::operator=(TileBuilder&&) noexcept = default;
const std::string& TileBuilder::func_name() const noexcept { return state_->func_name; }

// ---------------------------------------------------------------------------
// Signature

Buffer TileBuilder::tensor_param(std::string name, std::vector<Expr> shape, DataType dtype,
                                 Span span) {
  State& s = *state_;
  s.check_param_name(name, span, "T.Tensor");
  for (size_t d = 0; d < shape.size(); ++d) {
    s.check_int(shape[d], span, "T.Tensor",
                "parameter '" + name + "' dimension " + std::to_string(d));
    Expr v = first_ir_var(shape[d]);
    TILEJIT_CHECK(!v.defined(), kValueError)
        << s.prefix(span, "T.Tensor") << "parameter '" << name << "' dimension " << d
        << " uses " << to_string(v) << ", which is not a symbol of the signature";
  }
  Param p;
  p.name = name;
  p.tensor = TensorType{shape, dtype};
  const int index = int(s.params.size());
  s.params.push_back(std::move(p));
  Buffer b = Buffer::make(std::move(name), std::move(shape), dtype, Scope::kGlobal,
                          std::move(span), index);
  s.param_buffers.push_back(b);
  s.scalars.emplace_back();
  return b;
}

Expr TileBuilder::scalar_param(std::string name, DataType dtype, Span span) {
  State& s = *state_;
  s.check_param_name(name, span, "T.scalar");
  Param p;
  p.name = name;
  p.is_scalar = true;
  p.scalar = dtype;
  s.params.push_back(std::move(p));
  Expr v = Expr::var(std::move(name), dtype);
  s.param_buffers.emplace_back();
  s.scalars.push_back(v);
  return v;
}

// ---------------------------------------------------------------------------
// Kernels

std::vector<Expr> TileBuilder::begin_kernel(std::vector<Expr> grid, std::vector<int> threads,
                                            Span span) {
  State& s = *state_;
  const char* op = "T.Kernel";
  s.check_open(span, op);
  if (TILEJIT_UNLIKELY(s.in_kernel())) {
    TILEJIT_THROW(kValueError) << s.prefix(span, op) << "a T.Kernel inside "
                               << s.describe(s.frames[1]) << "; kernels do not nest";
  }
  TILEJIT_CHECK(!grid.empty() && grid.size() <= 3, kValueError)
      << s.prefix(span, op) << grid.size() << " grid extents; expected 1 to 3";
  for (size_t d = 0; d < grid.size(); ++d) {
    s.check_int(grid[d], span, op, "grid extent " + std::to_string(d));
    TILEJIT_CHECK(!grid[d].is_const() || grid[d].int_value() > 0, kValueError)
        << s.prefix(span, op) << "grid extent " << d << " is " << grid[d].int_value()
        << "; extents must be positive";
  }
  TILEJIT_CHECK(!threads.empty() && threads.size() <= 3, kValueError)
      << s.prefix(span, op) << threads.size() << " thread extents; expected 1 to 3";
  for (size_t d = 0; d < threads.size(); ++d) {
    TILEJIT_CHECK(threads[d] > 0, kValueError)
        << s.prefix(span, op) << "thread extent " << d << " is " << threads[d]
        << "; extents must be positive";
  }
  static const char* kBlockNames[] = {"bx", "by", "bz"};
  static const char* kThreadNames[] = {"tx", "ty", "tz"};
  Frame f;
  f.kind = FrameKind::kKernel;
  f.span = span;
  for (size_t d = 0; d < grid.size(); ++d) {
    f.block_vars.push_back(make_var(kBlockNames[d], DataType::int32()));
  }
  for (size_t d = 0; d < threads.size(); ++d) {
    f.thread_vars.push_back(make_var(kThreadNames[d], DataType::int32()));
  }
  f.grid = std::move(grid);
  f.threads = std::move(threads);
  std::vector<Expr> vars = f.block_vars;
  s.frames.push_back(std::move(f));
  return vars;
}

void TileBuilder::end_kernel(Span span) {
  State& s = *state_;
  Frame f = s.pop(FrameKind::kKernel, span, "T.Kernel", "T.Kernel");
  s.add(make_stmt<KernelStmt>(std::move(f.grid), std::move(f.block_vars), std::move(f.threads),
                              std::move(f.thread_vars), seq(std::move(f.stmts), f.span), f.span,
                              f.raster));
}

void TileBuilder::use_swizzle(int panel_size, RasterOrder order, bool enable, Span span) {
  State& s = *state_;
  const char* op = "T.use_swizzle";
  s.check_in_kernel(span, op);
  TILEJIT_CHECK(panel_size > 0, kValueError)
      << s.prefix(span, op) << "panel_size must be positive, got " << panel_size;
  if (!enable) return;
  // The kernel's frame, however deep in loops or branches the call is: the
  // order is the whole kernel's (it renames bx, by from the kernel's start).
  Frame& k = s.frames[1];
  if (TILEJIT_UNLIKELY(k.raster.enabled())) {
    TILEJIT_THROW(kValueError) << s.prefix(span, op) << "the kernel already has a block order ("
                               << (k.raster_span.empty() ? std::string("T.use_swizzle")
                                                         : "T.use_swizzle at " + k.raster_span.str())
                               << "); one per kernel";
  }
  k.raster = Rasterization{panel_size, order};
  k.raster_span = span;
}

Expr TileBuilder::thread_binding(int dim, Span span) {
  State& s = *state_;
  const char* op = "T.get_thread_binding";
  s.check_in_kernel(span, op);
  const Frame& k = s.frames[1];
  TILEJIT_CHECK(dim >= 0 && dim < int(k.thread_vars.size()), kValueError)
      << s.prefix(span, op) << "dimension " << dim << " of a kernel with "
      << k.thread_vars.size() << " thread extent" << (k.thread_vars.size() == 1 ? "" : "s");
  return k.thread_vars[size_t(dim)];
}

// ---------------------------------------------------------------------------
// Buffers

Buffer TileBuilder::alloc(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                          Span span) {
  State& s = *state_;
  const char* op = alloc_op_name(scope);
  TILEJIT_CHECK(scope != Scope::kGlobal, kValueError)
      << s.prefix(span, op) << "'" << name << "': global buffers come from alloc_global";
  s.check_in_kernel(span, op);
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << s.prefix(span, op) << "buffer name '" << name << "' is not an identifier";
  TILEJIT_CHECK(!shape.empty(), kValueError) << s.prefix(span, op) << "'" << name
                                             << "' has no dimensions";
  for (size_t d = 0; d < shape.size(); ++d) {
    s.check_int(shape[d], span, op, "'" + name + "' dimension " + std::to_string(d));
    TILEJIT_CHECK(shape[d].is_const(), kValueError)
        << s.prefix(span, op) << "'" << name << "' dimension " << d << " (" << to_string(shape[d])
        << ") is not a constant";
    TILEJIT_CHECK(shape[d].int_value() > 0, kValueError)
        << s.prefix(span, op) << "'" << name << "' dimension " << d << " is "
        << shape[d].int_value() << "; dimensions must be positive";
  }
  Buffer b = Buffer::make(std::move(name), std::move(shape), dtype, scope, span);
  s.add(make_stmt<AllocStmt>(b, std::move(span)));
  return b;
}

Buffer TileBuilder::alloc_global(std::string name, std::vector<Expr> shape, DataType dtype,
                                 WorkspaceInit init, Span span) {
  State& s = *state_;
  const char* op = "T.alloc_global";
  s.check_open(span, op);
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << s.prefix(span, op) << "buffer name '" << name << "' is not an identifier";
  for (size_t d = 0; d < shape.size(); ++d) {
    s.check_int(shape[d], span, op, "'" + name + "' dimension " + std::to_string(d));
    Expr v = first_ir_var(shape[d]);
    TILEJIT_CHECK(!v.defined(), kValueError)
        << s.prefix(span, op) << "'" << name << "' dimension " << d << " uses " << to_string(v)
        << "; a workspace's shape is over the signature's symbols";
    TILEJIT_CHECK(!shape[d].is_const() || shape[d].int_value() >= 0, kValueError)
        << s.prefix(span, op) << "'" << name << "' dimension " << d << " is "
        << shape[d].int_value() << "; dimensions must not be negative";
  }
  Buffer b = Buffer::make(std::move(name), std::move(shape), dtype, Scope::kGlobal,
                          std::move(span), -1, init);
  s.globals.push_back(b);
  return b;
}

// ---------------------------------------------------------------------------
// Control flow

Expr TileBuilder::begin_for(std::string var_name, Expr min, Expr extent, ForKind kind, int stages,
                            Span span) {
  State& s = *state_;
  const char* op = for_op_name(kind);
  s.check_in_kernel(span, op);
  s.check_int(min, span, op, "the start");
  s.check_int(extent, span, op, "the extent");
  TILEJIT_CHECK(stages >= 0, kValueError)
      << s.prefix(span, op) << "num_stages is " << stages << "; expected 0 or more";
  TILEJIT_CHECK(stages == 0 || kind == ForKind::kPipelined, kValueError)
      << s.prefix(span, op) << "num_stages is given for a loop that is not T.Pipelined";
  // The loop variable is int32 unless a non-constant bound is wider.
  DataType t = DataType::int32();
  if (!min.is_const()) t = promote(t, min.dtype());
  if (!extent.is_const()) t = promote(t, extent.dtype());
  Frame f;
  f.kind = FrameKind::kFor;
  f.span = span;
  f.var = make_var(var_name, t);
  f.min = min.is_const() ? make_int(min.int_value(), t) : cast(t, min);
  f.extent = extent.is_const() ? make_int(extent.int_value(), t) : cast(t, extent);
  f.for_kind = kind;
  f.stages = stages;
  Expr v = f.var;
  s.frames.push_back(std::move(f));
  return v;
}

void TileBuilder::set_pipeline_schedule(std::vector<int> order, std::vector<int> stage,
                                        std::vector<std::vector<int>> group, Span span) {
  State& s = *state_;
  const char* op = "T.Pipelined";
  TILEJIT_CHECK(!s.frames.empty() && s.frames.back().kind == FrameKind::kFor &&
                    s.frames.back().for_kind == ForKind::kPipelined,
                kValueError)
      << s.prefix(span, op) << "order=, stage= and group= belong to a T.Pipelined loop";
  TILEJIT_CHECK(!order.empty() && order.size() == stage.size(), kValueError)
      << s.prefix(span, op) << "order= and stage= must be lists of the same length, got "
      << order.size() << " and " << stage.size() << " entries";
  TILEJIT_CHECK(group.empty() || group.size() == order.size(), kValueError)
      << s.prefix(span, op) << "group= has " << group.size() << " groups but order= has "
      << order.size() << " entries";
  Frame& f = s.frames.back();
  f.schedule = {std::move(order), std::move(stage), std::move(group)};
  f.schedule_span = span;
}

void TileBuilder::set_loop_origin(std::string op, std::string reason, Span span) {
  State& s = *state_;
  TILEJIT_CHECK(!s.frames.empty() && s.frames.back().kind == FrameKind::kFor, kInternalError)
      << s.prefix(span, op) << "a loop origin outside a loop";
  s.frames.back().origin = {std::move(op), std::move(reason)};
}

namespace {

// TileLang's rules for a schedule over `n` statements; "" when it keeps them.
std::string schedule_error(PipelineSchedule* p, size_t n) {
  if (p->group.empty()) {
    for (size_t i = 0; i < n; ++i) p->group.push_back({int(i)});
    if (p->order.size() != n) {
      return "order= has " + std::to_string(p->order.size()) + " entries for a body of " +
             std::to_string(n) + " statements (without group=, one per statement)";
    }
  }
  int next = 0;
  for (const std::vector<int>& g : p->group) {
    for (int i : g) {
      if (i != next) {
        return "group= must list the body's statements 0.." + std::to_string(int(n) - 1) +
               " once each, in order, in consecutive groups";
      }
      ++next;
    }
  }
  if (size_t(next) != n) {
    return "group= covers " + std::to_string(next) + " statements of a body of " +
           std::to_string(n);
  }
  std::vector<int> orders;
  for (size_t g = 0; g < p->order.size(); ++g) {
    if (p->stage[g] == -1 || p->order[g] == -1) {
      if (p->stage[g] != -1 || p->order[g] != -1) {
        return "group " + std::to_string(g) + " has order " + std::to_string(p->order[g]) +
               " and stage " + std::to_string(p->stage[g]) + ": -1 goes with -1 (a prefetch)";
      }
      continue;
    }
    if (p->stage[g] < 0) return "stage " + std::to_string(p->stage[g]) + " is below -1";
    orders.push_back(p->order[g]);
  }
  std::sort(orders.begin(), orders.end());
  for (size_t i = 0; i < orders.size(); ++i) {
    if (orders[i] != int(i)) {
      return "the orders of the groups that are not prefetches must be 0.." +
             std::to_string(int(orders.size()) - 1) + ", each once";
    }
  }
  return "";
}

}  // namespace

void TileBuilder::end_for(Span span) {
  State& s = *state_;
  Frame f = s.pop(FrameKind::kFor, span, "end_for", "loop");
  if (!f.schedule.empty()) {
    const std::string why = schedule_error(&f.schedule, f.stmts.size());
    TILEJIT_CHECK(why.empty(), kValueError) << s.prefix(f.schedule_span, "T.Pipelined") << why;
  }
  s.add(make_stmt<ForStmt>(std::move(f.var), std::move(f.min), std::move(f.extent), f.for_kind,
                           f.stages, seq(std::move(f.stmts), f.span), f.span,
                           std::move(f.schedule), std::move(f.origin)));
}

void TileBuilder::begin_if(Expr cond, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "if");
  s.check_bool(cond, span, "if");
  Frame f;
  f.kind = FrameKind::kIf;
  f.span = std::move(span);
  f.cond = std::move(cond);
  s.frames.push_back(std::move(f));
}

void TileBuilder::begin_else(Span span) {
  State& s = *state_;
  Frame f = s.pop(FrameKind::kIf, span, "else", "if");
  Frame e;
  e.kind = FrameKind::kElse;
  e.span = f.span;
  e.cond = std::move(f.cond);
  e.then_case = seq(std::move(f.stmts), f.span);
  s.frames.push_back(std::move(e));
}

void TileBuilder::end_if(Span span) {
  State& s = *state_;
  s.check_open(span, "end_if");
  if (s.top().kind == FrameKind::kElse) {
    Frame f = s.pop(FrameKind::kElse, span, "end_if", "if");
    s.add(make_stmt<IfStmt>(std::move(f.cond), std::move(f.then_case),
                            seq(std::move(f.stmts), f.span), f.span));
    return;
  }
  Frame f = s.pop(FrameKind::kIf, span, "end_if", "if");
  s.add(make_stmt<IfStmt>(std::move(f.cond), seq(std::move(f.stmts), f.span), Stmt(), f.span));
}

void TileBuilder::begin_while(Expr cond, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "while");
  s.check_bool(cond, span, "while");
  Frame f;
  f.kind = FrameKind::kWhile;
  f.span = std::move(span);
  f.cond = std::move(cond);
  s.frames.push_back(std::move(f));
}

void TileBuilder::end_while(Span span) {
  State& s = *state_;
  Frame f = s.pop(FrameKind::kWhile, span, "end_while", "while loop");
  s.add(make_stmt<WhileStmt>(std::move(f.cond), seq(std::move(f.stmts), f.span), f.span));
}

namespace {

bool in_loop(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.kind == FrameKind::kFor || f.kind == FrameKind::kWhile) return true;
  }
  return false;
}

}  // namespace

void TileBuilder::break_loop(Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "break");
  TILEJIT_CHECK(in_loop(s.frames), kValueError) << s.prefix(span, "break") << "outside a loop";
  s.add(make_stmt<BreakStmt>(std::move(span)));
}

void TileBuilder::sync_threads(Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.sync_threads");
  s.add(make_stmt<SyncStmt>(std::move(span)));
}

void TileBuilder::continue_loop(Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "continue");
  TILEJIT_CHECK(in_loop(s.frames), kValueError) << s.prefix(span, "continue") << "outside a loop";
  s.add(make_stmt<ContinueStmt>(std::move(span)));
}

// ---------------------------------------------------------------------------
// Scalar statements

void TileBuilder::store(Buffer buffer, std::vector<Expr> indices, Expr value, Span span) {
  State& s = *state_;
  const char* op = "store";
  s.check_in_kernel(span, op);
  TILEJIT_CHECK(buffer.defined(), kValueError) << s.prefix(span, op) << "the buffer is undefined";
  TILEJIT_CHECK(int(indices.size()) == buffer.rank(), kValueError)
      << s.prefix(span, op) << buffer.name() << ": " << indices.size()
      << " indices for a buffer of rank " << buffer.rank();
  for (size_t i = 0; i < indices.size(); ++i) {
    s.check_int(indices[i], span, op, buffer.name() + " index " + std::to_string(i));
  }
  TILEJIT_CHECK(value.defined(), kValueError)
      << s.prefix(span, op) << buffer.name() << ": the value is undefined";
  // The value converts to the buffer's dtype, as an assignment in C++ does.
  value = cast(buffer.dtype(), value);
  s.add(make_stmt<StoreStmt>(std::move(buffer), std::move(indices), std::move(value),
                             std::move(span)));
}

Expr TileBuilder::let(std::string name, Expr value, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "let");
  TILEJIT_CHECK(value.defined(), kValueError)
      << s.prefix(span, "let") << "'" << name << "': the value is undefined";
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << s.prefix(span, "let") << "variable name '" << name << "' is not an identifier";
  Expr v = make_var(std::move(name), value.dtype());
  s.add(make_stmt<LetStmt>(v, std::move(value), std::move(span)));
  return v;
}

void TileBuilder::evaluate(Expr value, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "evaluate");
  TILEJIT_CHECK(value.defined(), kValueError) << s.prefix(span, "evaluate")
                                              << "the value is undefined";
  s.add(make_stmt<EvaluateStmt>(std::move(value), std::move(span)));
}

// ---------------------------------------------------------------------------

void TileBuilder::set_dialect(std::string dialect) { state_->dialect = std::move(dialect); }

PrimFunc TileBuilder::finish(Span span) {
  State& s = *state_;
  const char* op = "finish";
  s.check_open(span, op);
  if (TILEJIT_UNLIKELY(s.in_kernel())) {
    TILEJIT_THROW(kValueError) << s.prefix(span, op) << s.describe(s.top()) << " is not closed";
  }
  std::vector<Stmt>& kernels = s.frames[0].stmts;
  TILEJIT_CHECK(!kernels.empty(), kValueError) << s.prefix(span, op) << "the function has no T.Kernel";
  PrimFunc f;
  f.name = s.func_name;
  f.params = s.params;
  const KernelStmt* first = kernels[0].as<KernelStmt>();
  f.launch.grid = first->grid;
  f.launch.threads = 1;
  for (int t : first->threads) f.launch.threads *= t;
  TileBody body;
  body.stmt = seq(std::move(kernels), span);
  body.params = std::move(s.param_buffers);
  body.scalars = std::move(s.scalars);
  body.globals = std::move(s.globals);
  body.dialect = std::move(s.dialect);
  f.body = std::move(body);
  validate(f);
  s.finished = true;
  return f;
}

std::string diagnostic_prefix(const Span& span, const std::string& func_name,
                              const std::string& op) {
  std::string out = span.empty() ? func_name : span.str();
  out += ": ";
  out += op;
  out += ": ";
  return out;
}

}  // namespace tilejit::ir

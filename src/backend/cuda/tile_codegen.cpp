// The CUDA lowering of a tile-IR body's statements (Note [CUDA lowering of
// tile IR] in tile_codegen.h): CudaTileCodegen's buffers, loops, T.Parallel
// nests and stores. The unit around the entries is tile_unit.cpp's.
#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/infer_layouts.h"

#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/common/accesses.h"
#include "backend/cuda/inside_copies.h"
#include "backend/cuda/op_report.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/smem_plan.h"
#include "backend/cuda/tile_memory.h"
#include "core/string_literal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"

namespace tilejit::cuda {

using backend::Accessed;
namespace {

using ir::Expr;

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

CudaTileCodegen::CudaTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                                 std::ostream& os, int threads,
                                 const transform::ThreadUniformity& uniformity,
                                 const ir::KernelStmt& kernel, PipelinePlan pipelines,
                                 SmemPlan tiles)
    : TileCodegen(func, symbols, os, "CUDA", /*base_levels=*/0),
      threads_(threads),
      scratch_bytes_(scratch_bytes(kernel)),
      pipelines_(std::move(pipelines)),
      tiles_(std::move(tiles)),
      uniformity_(uniformity),
      group_{0, threads} {
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    tiles_by_id_.emplace(b.id(), b);
    swizzles_ = swizzles_ || swizzle_of(b) != 0;
  }
  exclusive_.uniformity = &uniformity_;
  exclusive_.threads = threads;
  use_line_directives();  // Note [Line directives]
  // Tiles whose byte ranges meet.
  std::vector<std::pair<uint64_t, std::pair<int64_t, int64_t>>> ranges;
  for (const auto& [id, offset] : tiles_.offsets) {
    ranges.push_back({id, {offset, offset + tiles_.bytes.at(id)}});
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      const auto [a0, a1] = ranges[i].second;
      const auto [b0, b1] = ranges[j].second;
      if (a0 < b1 && b0 < a1) {
        aliases_[ranges[i].first].insert(ranges[j].first);
        aliases_[ranges[j].first].insert(ranges[i].first);
      }
    }
  }
}

std::string CudaTileCodegen::math(const char* fn, const char* ct,
                                  const std::vector<std::string>& args) const {
  const std::string name = fn, type = ct;
  auto call = [&](const std::string& f) {
    std::string out = f + "(";
    for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
    return out + ")";
  };
  if (type == "int64_t" || type == "bool") {
    if (name == "min" || name == "max") return call("tilejit::" + name);
    if (name == "abs") return call("llabs");
    return call(name);
  }
  const bool f32 = type == "float";
  // Not fminf / fmaxf, which drop a NaN (Note [NaN in max and min], tilejit/cpu/prelude.h).
  if (name == "min") return call(std::string("tilejit::minimum<") + ct + ">");
  if (name == "max") return call(std::string("tilejit::maximum<") + ct + ">");
  if (name == "abs") return call(f32 ? "fabsf" : "fabs");
  return call(f32 ? name + "f" : name);
}

std::string CudaTileCodegen::shuffle(const ir::CallNode& call,
                                     const std::vector<std::string>& args) {
  return std::string("tilejit::cuda::") + ir::intrinsic_name(call.op) + "(" + args[0] + ", " +
         args[1] + ", int(" + args[2] + "), " + args[3] + ")";
}

bool CudaTileCodegen::async_copy(const ir::CopyOp& op) const {
  const ir::Scope d = op.dst.buffer.scope();
  return op.src.buffer.scope() == ir::Scope::kGlobal &&
         (d == ir::Scope::kShared || d == ir::Scope::kFragment) &&
         register_layout(op.dst.buffer) == nullptr;
}

std::string CudaTileCodegen::copy_template_tail(const ir::CopyOp& op) const {
  // Note [Copies inside their tensor]: a prefetched copy is its copy's.
  bool inside = inside_copies_.count(&op) != 0;
  for (const auto& [copy, ahead] : pipelines_.ahead) {
    inside = inside || (ahead.get() == &op && inside_copies_.count(copy));
  }
  return ", " + group_threads() + (async_copy(op) && !own_code() ? ", true" : ", false") +
         (inside ? ", true" : "");
}

std::string CudaTileCodegen::group_args() const {
  if (own_code()) return ", 0";
  if (group_barrier_ == 0) return "";
  return ", int(" + group_index_ + ")";
}

void CudaTileCodegen::emit_alloc(const ir::AllocStmt& op) {
  const ir::Buffer& b = op.buffer;
  const char* st = storage_type(b.dtype(), op.span, "T.alloc");
  int64_t elements = 1;
  backend::BufferAccess a = tile_access(op, &elements);
  if (b.scope() == ir::Scope::kLocal) a.storage = backend::BufferAccess::Storage::kThread;
  if (const FragmentLayout* reg = register_layout(b)) {
    // Note [1-D and replicated fragments]: a replicated fragment is each
    // thread's own array, stored by every thread.
    a.storage = reg->repl ? backend::BufferAccess::Storage::kThread
                          : backend::BufferAccess::Storage::kRegisters;
    line(std::string(st) + " " + a.name + "[" + str(reg->registers()) +
         "];  // fragment in registers: " + layout_type(*reg));
    set_access(b, std::move(a));
    return;
  }
  if (rows_padded(b)) {
    // Note [Padded gemm operands].
    a.static_shape.back() = b->layout.shared()->pitch;
    a.shape.back() = str(a.static_shape.back());
  }
  elements = tile_elements(b);
  const int64_t bytes = elements * b.dtype().bytes();
  if (auto st_it = pipelines_.stages.find(b.id()); st_it != pipelines_.stages.end()) {
    // Note [Software pipelining]: stage s at + s * stage bytes (128-aligned).
    const int64_t stage = stage_bytes(bytes, swizzle_of(b) != 0);
    const int64_t offset = tile_offset(b, stage * st_it->second, op.span);
    const std::string base = fresh(b.name() + "_stages");
    line(std::string(st) + "* const " + base + " = reinterpret_cast<" + st + "*>(tilejit_smem + " +
         str(offset) + ");  // shared, " + str(st_it->second) + " stages of " + str(bytes) +
         " bytes" + layout_note(b));
    a.name = base;
    a.data = base;
    staged_[b.id()] = {base, stage / b.dtype().bytes()};
    set_access(b, std::move(a));
    return;
  }
  if (b.scope() == ir::Scope::kLocal) {
    locals_.insert(b.id());
    line(std::string(st) + " " + a.name + "[" + std::to_string(elements) + "];  // local");
  } else {
    const int64_t offset = tile_offset(b, bytes, op.span);
    line(std::string(st) + "* const " + a.name + " = reinterpret_cast<" + st +
         "*>(tilejit_smem + " + std::to_string(offset) + ");  // " + ir::scope_name(b.scope()) +
         ", " + std::to_string(bytes) + " bytes" + layout_note(b));
  }
  set_access(b, std::move(a));
}

std::string CudaTileCodegen::layout_note(const ir::Buffer& b) const {
  if (rows_padded(b)) return ", rows padded";
  if (const int sw = swizzle_of(b)) return ", swizzled in panels of " + str(sw) + " bytes";
  return "";
}

int64_t CudaTileCodegen::tile_offset(const ir::Buffer& b, int64_t bytes, const ir::Span& span) {
  const int64_t offset = tiles_.offsets.at(b.id());
  if (offset + bytes > kMaxSharedBytes) {
    fail(ErrorKind::kValueError, span, "T.alloc",
         "buffer " + b.name() + " (" + str(bytes) + " bytes) ends at byte " + str(offset + bytes) +
             " of the block's shared memory, past the " + str(kMaxSharedBytes) +
             " a block may have, with the tiles live at the same time before it");
  }
  smem_bytes_ = std::max(smem_bytes_, offset + bytes);
  return offset;
}

int64_t CudaTileCodegen::take_shared(int64_t bytes, const ir::Span& span,
                                     const std::string& what) {
  const int64_t offset = (std::max(smem_bytes_, tiles_.total) + 127) / 128 * 128;
  if (offset + bytes > kMaxSharedBytes) {
    fail(ErrorKind::kValueError, span, "T.alloc",
         what + " (" + str(bytes) + " bytes) ends at byte " + str(offset + bytes) +
             " of the block's shared memory, past the " + str(kMaxSharedBytes) +
             " a block may have; the shared and fragment tiles before it take " + str(offset));
  }
  smem_bytes_ = offset + bytes;
  return offset;
}

const FragmentLayout* CudaTileCodegen::register_layout_of(uint64_t id) const {
  auto it = tiles_by_id_.find(id);
  return it == tiles_by_id_.end() ? nullptr : register_layout(it->second);
}

std::string CudaTileCodegen::tile_element(const backend::BufferAccess& a,
                                          const std::vector<ir::Expr>& indices) {
  if (a.storage != backend::BufferAccess::Storage::kRegisters) return TileCodegen::tile_element(a, indices);
  // In its register loop at the nest's indices (fragments.cpp checked it):
  // a tile's register r, a row vector's slot of r's row or, in a loop over
  // rows, slot r.
  const bool in_loop = reg_layout_ != nullptr && !indices.empty() &&
                       indices.size() <= reg_vars_.size();
  bool at_indices = in_loop;
  for (size_t d = 0; at_indices && d < indices.size(); ++d) {
    at_indices = indices[d].is_var() && indices[d].var_id() == reg_vars_[d];
  }
  TILEJIT_ICHECK(at_indices)
      << func().name << ": register fragment " << a.name << " accessed outside its register loop";
  if (indices.size() == 1 && !reg_layout_->rows() && !reg_layout_->flat) {
    return a.name + "[" + layout_type(*reg_layout_) + "::row_slot(tilejit_r)]";
  }
  return a.name + "[tilejit_r]";
}

void CudaTileCodegen::emit_parallel_nest(const ir::ForStmt& op) {
  const std::vector<const ir::ForStmt*> nest = parallel_nest(op);
  Accessed accessed;
  accessed.visit(nest.back()->body);
  // The register loop: each thread its own elements (Note [Register
  // accumulators]), over a tile's registers in a 2-D nest or a row vector's
  // in a 1-D one; the nest's indices are each register's row (and column).
  const FragmentLayout* layout = nullptr;
  for (uint64_t id : accessed.ids) {
    const FragmentLayout* l = register_layout_of(id);
    if (l != nullptr && !l->repl && ((l->rows() || l->flat) == (nest.size() == 1)) &&
        layout == nullptr) {
      layout = l;
    }
  }
  if (layout != nullptr) {
    enter(accessed.reads, accessed.writes);
    if (layout->part() && !layout->rows() && layout->v > 1) {
      const ir::Expr& lane = nest.back()->var;  // a tile's column, a 1-D tile's index
      if (auto staged = plan_run(nest.back()->body, lane, true); !staged.empty()) {
        emit_register_runs(nest, *layout, staged);
        return;
      }
    }
    line("#pragma unroll");
    line("for (int tilejit_r = 0; tilejit_r < " + str(layout->registers()) + "; ++tilejit_r) {");
    indent();
    // A 1-D fragment's index is its column (Note [1-D and replicated fragments]).
    line("const int64_t " + var_name(nest[0]->var) + " = " + layout_type(*layout) +
         (layout->flat ? "::col(tilejit_r);" : "::row(tilejit_r);"));
    // Note [Short accumulators]: the rows only registers have.
    if (layout->m_real > 0) line("if (" + var_name(nest[0]->var) + " >= " + str(layout->m_real) + ") continue;");
    const bool tile = !layout->rows() && !layout->flat;
    if (tile) {
      line("const int64_t " + var_name(nest[1]->var) + " = " + layout_type(*layout) +
           "::col(tilejit_r);");
    }
    emit_register_body(nest, *layout, tile);
    dedent();
    line("}");
    return;
  }
  // The trip count of the whole nest, then each loop's index from the
  // shared iteration f (the last loop fastest, so that consecutive threads
  // take consecutive elements of a row).
  std::vector<std::string> extents;
  std::string total;
  bool constant = true;
  int64_t total_value = 1;
  for (const ir::ForStmt* loop : nest) {
    if (loop->extent.is_const()) {
      extents.push_back(backend::int_literal(loop->extent.int_value()));
      total_value *= loop->extent.int_value();
    } else {
      const std::string e = fresh("tilejit_extent");
      line("const int64_t " + e + " = " + expr(loop->extent) + ";");
      extents.push_back(e);
      constant = false;
    }
  }
  for (const std::string& e : extents) total = total.empty() ? e : total + " * " + e;
  if (constant) total = backend::int_literal(total_value);
  enter(accessed.reads, accessed.writes);
  const std::string f = fresh("tilejit_f");
  line("for (int64_t " + f + " = " + group_index_ + "; " + f + " < " + total + "; " + f +
       " += " + group_count_ + ") {");
  indent();
  std::string inner;
  for (size_t k = nest.size(); k-- > 0;) {
    const ir::ForStmt& loop = *nest[k];
    std::string index = inner.empty() ? f : "(" + f + " / (" + inner + "))";
    if (k > 0) index = "(" + index + " % " + extents[k] + ")";
    const std::string lo = expr(loop.min);
    const std::string v = var_name(loop.var);
    line("const int64_t " + v + " = " + (lo == "0" ? index : lo + " + " + index) + ";");
    inner = inner.empty() ? extents[k] : inner + " * " + extents[k];
  }
  for (const ir::ForStmt* loop : nest) nest_vars_.push_back(loop->var.var_id());
  parallel_depth_ += 1;
  emit_stmt(nest.back()->body);
  parallel_depth_ -= 1;
  nest_vars_.clear();
  dedent();
  line("}");
}

void CudaTileCodegen::emit_register_body(const std::vector<const ir::ForStmt*>& nest,
                                         const FragmentLayout& layout, bool both_indices) {
  reg_vars_ = {nest[0]->var.var_id()};
  if (both_indices) reg_vars_.push_back(nest[1]->var.var_id());
  reg_layout_ = &layout;
  parallel_depth_ += 1;
  emit_stmt(nest.back()->body);
  parallel_depth_ -= 1;
  reg_layout_ = nullptr;
  reg_vars_.clear();
}

// Note [Reductions in a T.Parallel nest]
// `s[j] += x[i, j]` in T.Parallel(32, 64) folds 32 iterations into each
// s[j], and the nest spreads iterations over threads: a plain read-modify-
// write would race (TileLang gives a T.alloc_reducer per-thread copies that
// T.finalize_reducer combines; the CPU runs the iterations in order). Here
// a store into block-visible memory whose indices leave out a variable of
// the nest, and whose value is that same element + v (or max / min of it
// and v), becomes an atomic add (max, min) of v. The barrier before the
// element is read (T.finalize_reducer, or any later read) is the hazard
// tracker's, as for any write.
std::string CudaTileCodegen::reduction_store(const ir::StoreStmt& op,
                                             const std::vector<uint64_t>& vars) {
  struct Vars : ir::IRVisitor {
    std::set<uint64_t> ids;
    void visit_var(const ir::VarNode* v, const Expr&) override { ids.insert(v->id); }
  } used;
  for (const Expr& i : op.indices) used.visit(i);
  bool shared_element = false;
  for (uint64_t v : vars) shared_element = shared_element || !used.ids.count(v);
  if (!shared_element) return "";
  Expr value = op.value;
  if (value.kind() == ir::ExprKind::kCast) value = value.as<ir::CastNode>()->value;
  const ir::ExprKind k = value.kind();
  if (k != ir::ExprKind::kAdd && k != ir::ExprKind::kMax && k != ir::ExprKind::kMin) return "";
  const auto* bin = static_cast<const ir::BinaryNode*>(value.get());
  auto same_element = [&](const Expr& e) {
    Expr x = e;
    if (x.kind() == ir::ExprKind::kCast) x = x.as<ir::CastNode>()->value;
    const auto* load = x.as<ir::LoadNode>();
    if (load == nullptr || load->buffer != op.buffer || load->indices.size() != op.indices.size()) {
      return false;
    }
    for (size_t d = 0; d < op.indices.size(); ++d) {
      if (!ir::structural_equal(load->indices[d], op.indices[d])) return false;
    }
    return true;
  };
  Expr v;
  if (same_element(bin->a)) {
    v = bin->b;
  } else if (same_element(bin->b)) {
    v = bin->a;
  } else {
    return "";
  }
  const backend::BufferAccess& b = access(op.buffer, op.span, "store");
  const char* fn = k == ir::ExprKind::kAdd ? "atomic_add" : k == ir::ExprKind::kMax ? "atomic_max"
                                                                                    : "atomic_min";
  if (k != ir::ExprKind::kAdd && op.buffer.dtype() != DataType::float32()) {
    fail(ErrorKind::kValueError, op.span, "store",
         "a max or min reduction into " + op.buffer.name() + " from several iterations of a "
         "T.Parallel nest needs a float32 buffer on the CUDA backend (it is " +
             op.buffer.dtype().name() + ")");
  }
  return std::string("tilejit::cuda::") + fn + "(&" + element(b, op.indices) + ", " + expr(v) +
         ");  // several iterations fold into this element";
}

void CudaTileCodegen::emit_for(const ir::ForStmt& op) {
  // T.vectorized is a thread's own loop, as in TileLang (its lanes are one
  // thread's); T.Parallel spreads its iterations over the group.
  if (op.for_kind == ir::ForKind::kParallel && parallel_depth_ == 0) {
    emit_parallel_nest(op);
    return;
  }
  if (auto p = pipelines_.loops.find(&op); p != pipelines_.loops.end() && !own_code()) {
    emit_pipelined(op, p->second);
    return;
  }
  // Note [Vectorised runs]: a T.vectorized loop of constant extent; its
  // writes are staged only in a thread's own code (at block level a store
  // to memory is thread 0's).
  std::vector<StagedAccess> staged;
  std::vector<std::string> arrays;
  const int64_t lanes = op.extent.is_const() ? op.extent.int_value() : 0;
  std::string lo = expr(op.min);
  if (op.for_kind == ir::ForKind::kVectorized && lanes >= 2 && lanes <= 64) {
    staged = plan_run(op.body, op.var, own_code());
  }
  if (!staged.empty()) {
    if (!own_code()) {
      // The staged reads happen here, before the loop: after any barrier
      // they need. No staged buffer is written in the loop.
      std::set<uint64_t> reads;
      for (const StagedAccess& s : staged) reads.insert(s.buffer.id());
      enter(visible(reads), {});
    }
    lo = "(" + lo + ")";
    const std::string lane = fresh("tilejit_lane");
    arrays = begin_run(staged, op.var, lanes, lo, lane, false);
    line("#pragma unroll");
    line("for (int " + lane + " = 0; " + lane + " < " + std::to_string(lanes) + "; ++" + lane +
         ") {");
    indent();
    line("const int64_t " + var_name(op.var) + " = " + lo + " + " + lane + ";");
    if (own_code()) {
      emit_stmt(op.body);
    } else {
      emit_body(op.body, /*back_edge=*/true);
    }
    dedent();
    line("}");
    end_run(staged, arrays, op.var, lanes, lo, false);
    return;
  }
  const std::string v = var_name(op.var);
  const std::string end = loop_end(v, op, lo);
  switch (op.for_kind) {
    case ir::ForKind::kUnroll:
    case ir::ForKind::kVectorized:
      if (op.extent.is_const() && op.extent.int_value() <= 64) line("#pragma unroll");
      break;
    case ir::ForKind::kPipelined:
      line("// T.Pipelined(num_stages=" + std::to_string(op.stages) + ")");
      break;
    default: break;
  }
  const bool known = op.min.is_const() && op.extent.is_const();
  if (known) {
    loop_ranges_[op.var.var_id()] = {op.min.int_value(),
                                     op.min.int_value() + op.extent.int_value() - 1};
  }
  if (!own_code()) sync_before_loop(op.body);
  line("for (int64_t " + v + " = " + lo + "; " + v + " < " + end + "; ++" + v + ") {");
  indent();
  if (own_code()) {
    emit_stmt(op.body);
  } else {
    emit_body(op.body, /*back_edge=*/true);
  }
  if (known) loop_ranges_.erase(op.var.var_id());
  dedent();
  line("}");
}

void CudaTileCodegen::emit_store(const ir::StoreStmt& op) {
  const backend::BufferAccess& b = access(op.buffer, op.span, "store");
  const char* st = storage_type(b.dtype, op.span, "store");
  const std::string store =
      element(b, op.indices) + " = tilejit::cuda::convert<" + st + ">(" + expr(op.value) + ");";
  if (own_code()) {
    if (reg_layout_ != nullptr && reg_layout_->rows() &&
        b.storage != backend::BufferAccess::Storage::kRegisters) {
      // A register loop over rows (Note [Register accumulators]): the
      // threads that hold a row each run it; one of them stores to memory.
      line("if (" + layout_type(*reg_layout_) + "::leader()) " + store);
      return;
    }
    // Note [Reductions in a T.Parallel nest], in a loop shared by the
    // group's threads or in a register loop over a tile (whose iterations
    // are spread over the threads just as well).
    const std::vector<uint64_t>& vars = reg_layout_ != nullptr ? reg_vars_ : nest_vars_;
    if (parallel_depth_ > 0 && !vars.empty() && !b.global &&
        b.storage == backend::BufferAccess::Storage::kBlock) {
      if (std::string atomic = reduction_store(op, vars); !atomic.empty()) {
        line(atomic);
        return;
      }
    }
    line(store);
    return;
  }
  Accessed a;
  for (const Expr& i : op.indices) a.visit(i);
  a.visit(op.value);
  if (b.storage == backend::BufferAccess::Storage::kThread) {
    enter(a.reads, {});
    line(store);
    return;
  }
  // Note [Thread-exclusive writes].
  std::map<uint64_t, int64_t> keys;
  if (group_barrier_ == 0 && !aliases_.count(op.buffer.id())) {
    if (std::optional<int64_t> k = exclusive_.key(op, loop_ranges_)) keys[op.buffer.id()] = *k;
  }
  enter(a.reads, {op.buffer.id()}, keys);
  // Note [Thread semantics]: every thread stores; where no thread's store
  // differs (proven by thread_uniformity), the group's first thread does.
  if (uniformity_.variant(&op)) {
    line(store);
  } else {
    line("if (tilejit_tid == " + str(group_.first) + ") " + store);
  }
}

}  // namespace tilejit::cuda

// The CPU unit of a tile-IR body (Note [CPU lowering of tile IR] in
// tile_codegen.h). For kernel `add(A: float32[n], B: float32[n])` with one
// T.Kernel(ceildiv(n, 256)) it reads
//
//   <the head of every CPU unit: prelude, fault handler (emit_entry_head)>
//   #include "tilejit/cpu/tile_ops.h"
//   extern "C" int64_t tilejit_entry(...) {
//     <the symbols and views of the parameters, as for a source body>
//     tilejit::cpu::Arena tilejit_arena;  // allocated: the bytes of the large tiles
//     for (<blocks [begin, end)>) {
//       const int64_t bx = tilejit_x;
//       try { <the kernel's statements> } catch (...) { <report>; return block; }
//     }
//     return -1;
//   }
//
// IR variables keep their names where no other name in the unit has them,
// else get a suffix (`i`, `i_1`).
#include "backend/cpu/tile_codegen.h"

#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/accesses.h"
#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "backend/cpu/op_report.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/hoist_shuffles.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/lower.h"

namespace tilejit::cpu {

using ir::Expr;
using transform::ThreadUniformity;

namespace {

// "0-15, 20" for the set bits of a lane mask.
std::string lane_list(uint32_t lanes) {
  std::string out;
  for (int lane = 0; lane < 32; ++lane) {
    if (!(lanes >> lane & 1)) continue;
    int last = lane;
    while (last + 1 < 32 && (lanes >> (last + 1) & 1)) ++last;
    out += (out.empty() ? "" : ", ") + std::to_string(lane) +
           (last > lane ? "-" + std::to_string(last) : std::string());
    lane = last;
  }
  return out;
}

}  // namespace

CpuTileCodegen::CpuTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                               std::ostream& os, const ir::KernelStmt& kernel,
                               const transform::ThreadUniformity& uniformity)
    : TileCodegen(func, symbols, os, "CPU", /*base_levels=*/2),
      kernel_(kernel),
      uniformity_(uniformity),
      group_{0, uniformity.threads()} {
  use_line_directives();  // Note [Line directives]
  struct Locals : ir::IRVisitor {
    std::set<uint64_t>* out = nullptr;
    void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
      if (op->buffer.scope() == ir::Scope::kLocal) out->insert(op->buffer.id());
    }
  } locals;
  locals.out = &locals_;
  locals.visit(kernel.body);
}

void CpuTileCodegen::bind_threads() {
  for (const Expr& tv : kernel_.thread_vars) {
    const std::string name = fresh(tv.var_name());
    bind_var(tv, name);
    thread_names_.push_back(name);
  }
}

bool CpuTileCodegen::self_contained(const ir::Stmt& s) const {
  // The block-visible buffers (not local: a thread's locals are its own)
  // it reads and writes.
  backend::Accessed a;
  a.visit(s);
  for (uint64_t id : a.writes) {
    if (a.reads.count(id) && !locals_.count(id)) return false;
  }
  return true;
}

bool CpuTileCodegen::emit_own(const ir::Stmt& s) {
  if (in_thread_ || parallel_depth_ > 0 || s.kind() == ir::StmtKind::kAlloc) return false;
  if (ThreadUniformity::collective(s)) {
    if (const auto* op = s.as<ir::IfStmt>(); op != nullptr && uniformity_.divergent(s)) {
      emit_range_if(*op);
      return true;
    }
    return false;  // its statements are emitted one by one
  }
  if (transform::holds_shuffle(s)) {
    // Note [Warp shuffles]: hoist_shuffles left each shuffle the value of a
    // let of its own, which runs on every thread of the group here.
    if (const auto* let = s.as<ir::LetStmt>(); let != nullptr && transform::shuffle_of(*let)) {
      emit_shuffle(*let, s);
      return true;
    }
    if (!uniformity_.divergent(s)) return false;  // its statements are emitted one by one
    if (const auto* op = s.as<ir::IfStmt>()) {
      if (uniformity_.branch_range(op, true) || uniformity_.branch_range(op, false)) {
        emit_range_if(*op);
        return true;
      }
    }
    const char* construct = s.kind() == ir::StmtKind::kIf      ? "if"
                            : s.kind() == ir::StmtKind::kWhile ? "while"
                                                               : "loop";
    shuffle_unreachable(s, s.span(), construct,
                        std::string("this ") + construct +
                            " depends on the thread index and is not a range of it");
  }
  if (!uniformity_.variant(s)) return false;  // once, for every thread
  const bool control = s.kind() == ir::StmtKind::kFor || s.kind() == ir::StmtKind::kWhile ||
                       s.kind() == ir::StmtKind::kIf;
  if (control && !uniformity_.divergent(s) && !self_contained(s)) return false;
  emit_thread_loop(s);
  return true;
}

template <typename Body>
void CpuTileCodegen::thread_loop(Body body) {
  const std::string end = std::to_string(group_.first + group_.count);
  line("for (int64_t tilejit_t = " + std::to_string(group_.first) + "; tilejit_t < " + end +
       "; ++tilejit_t) {");
  indent();
  int64_t inner = 1;
  for (size_t d = 0; d < thread_names_.size(); ++d) {
    const int64_t extent = kernel_.threads[d];
    std::string value = inner == 1 ? "tilejit_t" : "tilejit_t / " + std::to_string(inner);
    if (d + 1 < thread_names_.size()) value += " % " + std::to_string(extent);
    line("[[maybe_unused]] const int64_t " + thread_names_[d] + " = " + value + ";");
    inner *= extent;
  }
  in_thread_ = true;
  body();
  in_thread_ = false;
  dedent();
  line("}");
}

void CpuTileCodegen::emit_thread_loop(const ir::Stmt& s) {
  if (group_.count <= 0) return;
  const auto* let = s.as<ir::LetStmt>();
  std::string slots;
  if (let != nullptr) {
    // Note [CPU lowering of tile IR]: a thread's let, one slot per thread.
    slots = fresh(let->var.var_name() + "_t");
    line(std::string(compute_type(let->var.dtype())) + " " + slots + "[" +
         std::to_string(uniformity_.threads()) + "];");
  }
  thread_loop([&] {
    if (let != nullptr) {
      line(slots + "[tilejit_t] = " + expr(let->value) + ";");
    } else {
      emit_stmt(s);
    }
  });
  if (let != nullptr) bind_var(let->var, slots + "[tilejit_t]");
}

void CpuTileCodegen::shuffle_unreachable(const ir::Stmt& s, const ir::Span& span,
                                         const std::string& construct, const std::string& where) {
  const ir::Stmt let = transform::first_shuffle(s);
  const auto* call = transform::shuffle_of(*let.as<ir::LetStmt>());
  const int line = let.span().line;
  fail(ErrorKind::kValueError, span, construct,
       std::string("T.") + ir::intrinsic_name(call->op) +
           (line > 0 ? " (line " + std::to_string(line) + ")" : std::string()) +
           " exchanges values between the lanes of a warp, which the CPU target emulates where "
           "every thread of the block, or of a range of its threads, runs it; " + where +
           ": make it uniform, or a range of the thread index (tx < c, tx >= c, c <= tx < d)");
}

std::string CpuTileCodegen::shuffle(const ir::CallNode& call, const std::vector<std::string>&) {
  TILEJIT_ICHECK(false) << func().name << ": CPU tile codegen: T." << ir::intrinsic_name(call.op)
                        << " outside a let of its own (transform::hoist_shuffles makes one)";
  return "";
}

void CpuTileCodegen::emit_shuffle(const ir::LetStmt& let, const ir::Stmt& s) {
  const ir::CallNode& call = *transform::shuffle_of(let);
  const std::string op = std::string("T.") + ir::intrinsic_name(call.op);
  const ir::Expr& width = call.args[2];
  const ir::Expr& mask = call.args[3];
  if (!width.is_const() || width.int_value() < 1 || width.int_value() > 32 ||
      (width.int_value() & (width.int_value() - 1)) != 0) {
    fail(ErrorKind::kValueError, s.span(), op,
         "width " + ir::to_string(width) + "; the CPU target takes a constant power of two from "
         "1 to 32");
  }
  if (!mask.is_const()) {
    fail(ErrorKind::kValueError, s.span(), op,
         "mask " + ir::to_string(mask) + " is not a constant; the CPU target needs to know which "
         "lanes shuffle");
  }
  // Every lane of the mask that exists must run the shuffle here, and no
  // other: the threads of the group, warp by warp.
  const uint32_t lanes = uint32_t(uint64_t(mask.int_value()) & 0xFFFFFFFFu);
  const int64_t end = group_.first + group_.count;
  for (int64_t warp = group_.first / 32; group_.count > 0 && warp * 32 < end; ++warp) {
    uint32_t exist = 0, here = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int64_t t = warp * 32 + lane;
      if (t < uniformity_.threads()) exist |= 1u << lane;
      if (t >= group_.first && t < end) here |= 1u << lane;
    }
    if ((lanes & exist) != here) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08X", unsigned(lanes));
      const uint32_t absent = lanes & exist & ~here;
      fail(ErrorKind::kValueError, s.span(), op,
           std::string("threads [") + std::to_string(group_.first) + ", " + std::to_string(end) +
               ") run it here, but in warp " + std::to_string(warp) + " lanes " +
               lane_list(absent != 0 ? absent : here & ~lanes) +
               (absent != 0 ? " of its mask " + std::string(hex) + " do not run it"
                            : " run it and are not in its mask " + std::string(hex)) +
               "; every lane of the mask runs a shuffle together (CUDA's rule), and the CPU "
               "target emulates it for the lanes of the mask");
    }
  }
  if (group_.count <= 0) return;
  static const char* const kModes[] = {"kIdx", "kUp", "kDown", "kBfly"};
  const char* mode = kModes[int(call.op) - int(ir::Intrinsic::kShflSync)];
  const std::string ct = compute_type(let.var.dtype());
  const std::string threads = std::to_string(uniformity_.threads());
  const std::string values = fresh(let.var.var_name() + "_lanes");
  const std::string slots = fresh(let.var.var_name() + "_t");
  line("// " + op + ": each thread's value, then each thread's read of its source lane's");
  line(ct + " " + values + "[" + threads + "];");
  line(ct + " " + slots + "[" + threads + "];");
  thread_loop([&] { line(values + "[tilejit_t] = " + expr(call.args[0]) + ";"); });
  thread_loop([&] {
    line(slots + "[tilejit_t] = tilejit::cpu::shfl(tilejit::cpu::ShflMode::" + mode + ", " +
         values + ", tilejit_t, " + expr(call.args[1]) + ", " +
         std::to_string(width.int_value()) + ", " + std::to_string(group_.first) + ", " +
         std::to_string(end) + ");");
  });
  bind_var(let.var, slots + "[tilejit_t]");
}

void CpuTileCodegen::emit_range_if(const ir::IfStmt& op) {
  for (bool then_branch : {true, false}) {
    const ir::Stmt& branch = then_branch ? op.then_case : op.else_case;
    if (!branch.defined()) continue;
    const std::optional<transform::ThreadRange> r = uniformity_.branch_range(&op, then_branch);
    if (!r) {
      if (transform::holds_shuffle(branch)) {
        shuffle_unreachable(branch, op.span, "if",
                            "the threads of this else branch are not one range");
      }
      // The rest of the group is not one range: no collective op there
      // (thread_uniformity checked), so each thread tests the condition.
      const transform::ThreadRange saved = group_;
      emit_thread_loop(ir::make_stmt<ir::IfStmt>(ir::logical_not(op.cond), branch, ir::Stmt(),
                                                 op.span));
      group_ = saved;
      continue;
    }
    if (r->count == 0) continue;
    line("{  // " + std::string(then_branch ? "if (" : "else of (") + ir::to_string(op.cond) +
         "): threads [" + std::to_string(r->first) + ", " + std::to_string(r->first + r->count) +
         ")");
    indent();
    const transform::ThreadRange saved = group_;
    group_ = *r;
    emit_stmt(branch);
    group_ = saved;
    dedent();
    line("}");
  }
}

std::string CpuTileCodegen::math(const char* fn, const char* ct,
                                 const std::vector<std::string>& args) const {
  const std::string name = fn;
  if (name == "min" || name == "max") {
    // NaN wins, as in torch.maximum (Note [NaN in max and min], tilejit/cpu/prelude.h).
    return std::string(name == "min" ? "tilejit::minimum<" : "tilejit::maximum<") + ct + ">(" +
           args[0] + ", " + args[1] + ")";
  }
  std::string out = "std::" + name + "(";
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
  return out + ")";
}

void CpuTileCodegen::emit_alloc(const ir::AllocStmt& op) {
  const ir::Buffer& b = op.buffer;
  const char* st = storage_type(b.dtype(), op.span, "T.alloc");
  int64_t elements = 1;
  backend::BufferAccess a = tile_access(op, &elements);
  // Note [CPU lowering of tile IR]: a thread's own local, one slot a thread.
  const bool per_thread = b.scope() == ir::Scope::kLocal && uniformity_.variant_buffer(b.id());
  const int64_t slots = per_thread ? uniformity_.threads() : 1;
  const int64_t bytes = elements * slots * b.dtype().bytes();
  const std::string what = std::string(ir::scope_name(b.scope())) +
                           (per_thread ? ", one per thread" : "");
  if (bytes <= kMaxStackTileBytes) {
    line("alignas(64) " + std::string(st) + " " + a.name + "[" + std::to_string(elements * slots) +
         "];  // " + what);
  } else {
    line(std::string(st) + "* const " + a.name + " = tilejit_arena.at<" + st + ">(" +
         std::to_string(arena_bytes_) + ");  // " + what + ", " + std::to_string(bytes) + " bytes");
    arena_bytes_ += (bytes + 63) / 64 * 64;
  }
  if (per_thread) {
    a.name = a.data = "(" + a.name + " + tilejit_t * " + std::to_string(elements) + ")";
  }
  set_access(b, std::move(a));
}

void CpuTileCodegen::emit_for(const ir::ForStmt& op) {
  const std::string v = var_name(op.var);
  const std::string lo = expr(op.min);
  const std::string end = loop_end(v, op, lo);
  switch (op.for_kind) {
    case ir::ForKind::kParallel:
    case ir::ForKind::kVectorized:
      if (!backend::has_loop(op.body)) line("#pragma GCC ivdep");
      break;
    case ir::ForKind::kUnroll:
      if (op.extent.is_const() && op.extent.int_value() <= 64) {
        line("#pragma GCC unroll " + std::to_string(std::max<int64_t>(op.extent.int_value(), 1)));
      }
      break;
    case ir::ForKind::kPipelined:
      line("// T.Pipelined(num_stages=" + std::to_string(op.stages) + "): a plain loop on the CPU");
      break;
    case ir::ForKind::kSerial: break;
  }
  const bool parallel = op.for_kind == ir::ForKind::kParallel;
  if (parallel && parallel_depth_ == 0 && !in_thread_) {
    // Note [Thread semantics]: an iteration runs on some thread of the
    // block, which one the GPU's layout decides; the CPU cannot say.
    const std::string state = uniformity_.thread_state_read(op);
    if (!state.empty()) {
      fail(ErrorKind::kValueError, op.span, "T.Parallel",
           "the loop reads '" + state + "', a value of each thread's own (it depends on "
           "T.get_thread_binding), which no iteration of a T.Parallel loop has on the CPU target; "
           "compute it from the loop's indices, or store it in a shared buffer first");
    }
  }
  line("for (int64_t " + v + " = " + lo + "; " + v + " < " + end + "; ++" + v + ") {");
  indent();
  if (parallel) parallel_depth_ += 1;
  emit_stmt(op.body);
  if (parallel) parallel_depth_ -= 1;
  dedent();
  line("}");
}

void CpuTileCodegen::emit_store(const ir::StoreStmt& op) {
  const BufferAccess& b = access(op.buffer, op.span, "store");
  const char* st = storage_type(b.dtype, op.span, "store");
  line(element(b, op.indices) + " = tilejit::cpu::convert<" + st + ">(" + expr(op.value) + ");");
}

// The statements before it ran on every thread of the group already (each
// thread-dependent statement is its own loop over the threads, and a loop
// or if that holds a T.sync_threads is collective, so its statements are
// emitted one by one): nothing is left to wait for.
void CpuTileCodegen::emit_sync(const ir::Stmt& s) {
  if (parallel_depth_ > 0) sync_in_parallel(s);
  line("// T.sync_threads(): every thread's statements before it have run");
}

void CpuTileCodegen::emit_tile_op(const ir::Stmt& s) {
  switch (s.kind()) {
    case ir::StmtKind::kCopy: backend::lower_copy(*this, *s.as<ir::CopyOp>()); return;
    case ir::StmtKind::kGemm: backend::lower_gemm(*this, *s.as<ir::GemmOp>()); return;
    case ir::StmtKind::kFill: backend::lower_fill(*this, *s.as<ir::FillOp>()); return;
    case ir::StmtKind::kReduce: backend::lower_reduce(*this, *s.as<ir::ReduceOp>()); return;
    case ir::StmtKind::kAtomicAdd: backend::lower_atomic_add(*this, *s.as<ir::AtomicAddOp>()); return;
    case ir::StmtKind::kPrint: backend::lower_print(*this, *s.as<ir::PrintOp>()); return;
    default: break;
  }
  ir::unhandled_stmt("CPU tile codegen", s);
}

namespace {

// The entry `entry` that runs the blocks of `kernel`.
void emit_kernel_entry(std::ostream& os, const ir::PrimFunc& f,
                       const std::vector<std::string>& symbols, const ir::KernelStmt& kernel,
                       const std::string& entry, bool debug_bounds,
                       runtime::LoweringReport* report) {
  // The body first: it decides the arena's size and the names.
  std::ostringstream body;
  const transform::ThreadUniformity uniformity = transform::thread_uniformity(kernel, f.name);
  report_kernel(kernel, uniformity, report);
  CpuTileCodegen cg(f, symbols, body, kernel, uniformity);
  cg.debug_bounds = debug_bounds;
  static const char* const kBlock[] = {"tilejit_x", "tilejit_y", "tilejit_z"};
  std::vector<std::string> block_decls;
  for (size_t d = 0; d < kernel.block_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.block_vars[d].var_name());
    cg.bind_var(kernel.block_vars[d], name);
    block_decls.push_back("[[maybe_unused]] const int64_t " + name + " = " + kBlock[d] + ";");
    cg.block_names.push_back(name);
  }
  cg.bind_threads();
  cg.indent();
  cg.emit_stmt(kernel.body);

  emit_entry_signature(os, f, entry.c_str());
  backend::emit_arguments(os, f, symbols, kCpuEntry);
  if (cg.arena_bytes() > 0) {
    // Note [Exceptions from a body]: a failed allocation is the first block's.
    os << "  // The tiles above " << kMaxStackTileBytes << " bytes, for every block of this call.\n"
       << "  tilejit::cpu::Arena tilejit_arena;\n"
       << "  try {\n"
       << "    tilejit_arena.allocate(" << cg.arena_bytes() << ");\n"
       << "  } catch (...) {\n"
       << "    tilejit_report_fault(tilejit_fault, tilejit_fault_context);\n"
       << "    return tilejit_begin;\n"
       << "  }\n";
  }
  os << "  const int64_t tilejit_gx = tilejit_grid[0], tilejit_gy = tilejit_grid[1];\n"
        "  int64_t tilejit_x = tilejit_begin % tilejit_gx;\n"
        "  int64_t tilejit_y = tilejit_begin / tilejit_gx % tilejit_gy;\n"
        "  int64_t tilejit_z = tilejit_begin / tilejit_gx / tilejit_gy;\n"
        "  for (int64_t tilejit_b = tilejit_begin; tilejit_b < tilejit_end; ++tilejit_b) {\n";
  for (const std::string& d : block_decls) os << "    " << d << "\n";
  os << "    try {\n" << body.str() << backend::TileCodegen::kLineRestoreMarker << "\n"
     << "    } catch (...) {\n"
        "      tilejit_report_fault(tilejit_fault, tilejit_fault_context);\n"
        "      return tilejit_b;\n"
        "    }\n";
  os << "    if (++tilejit_x == tilejit_gx) {\n"
        "      tilejit_x = 0;\n"
        "      if (++tilejit_y == tilejit_gy) {\n"
        "        tilejit_y = 0;\n"
        "        ++tilejit_z;\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "  return -1;\n"
        "}\n";
}


}  // namespace

runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  // Note [The lowering pipeline]: the CPU target prints what it returns.
  const ir::PrimFunc f = transform::lower(*request.func, transform::LayoutTarget::kCpu);
  const std::vector<const ir::KernelStmt*> kernels = f.tile()->kernels();
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());

  // One entry per T.Kernel, run in order (Note [Kernel ABI]): tilejit_entry,
  // tilejit_entry_1, ...
  std::ostringstream os;
  emit_entry_head(os, f, " (tile IR)");
  os << "#include \"tilejit/cpu/tile_ops.h\"\n\n";
  std::vector<runtime::AbiLaunch> launches;
  runtime::LoweringReport report;
  for (size_t i = 0; i < kernels.size(); ++i) {
    runtime::AbiLaunch& l = launches.emplace_back();
    l.entry = i == 0 ? std::string(kEntryName) : std::string(kEntryName) + "_" + std::to_string(i);
    for (size_t d = 0; d < kernels[i]->threads.size() && d < 3; ++d) {
      l.threads[d] = kernels[i]->threads[d];
    }
    if (i > 0) os << "\n";
    emit_kernel_entry(os, f, symbols, *kernels[i], l.entry, request.debug_bounds, &report);
  }
  return {backend::restore_line_numbers(os.str(), f.name + ".cpp"),
          backend::slot_abi(request, std::move(launches)), {}, std::move(report)};
}

}  // namespace tilejit::cpu

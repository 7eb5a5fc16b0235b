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

#include <sstream>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"

namespace tilejit::cpu {

using ir::Expr;

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
  const int64_t bytes = elements * b.dtype().bytes();
  if (bytes <= kMaxStackTileBytes) {
    line("alignas(64) " + std::string(st) + " " + a.name + "[" + std::to_string(elements) +
         "];  // " + ir::scope_name(b.scope()));
  } else {
    line(std::string(st) + "* const " + a.name + " = tilejit_arena.at<" + st + ">(" +
         std::to_string(arena_bytes_) + ");  // " + ir::scope_name(b.scope()) + ", " +
         std::to_string(bytes) + " bytes");
    arena_bytes_ += (bytes + 63) / 64 * 64;
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
  line("for (int64_t " + v + " = " + lo + "; " + v + " < " + end + "; ++" + v + ") {");
  indent();
  emit_stmt(op.body);
  dedent();
  line("}");
}

void CpuTileCodegen::emit_store(const ir::StoreStmt& op) {
  const BufferAccess& b = access(op.buffer, op.span, "store");
  const char* st = storage_type(b.dtype, op.span, "store");
  line(element(b, op.indices) + " = tilejit::cpu::convert<" + st + ">(" + expr(op.value) + ");");
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
                       const std::string& entry, bool debug_bounds) {
  // The body first: it decides the arena's size and the names.
  std::ostringstream body;
  CpuTileCodegen cg(f, symbols, body);
  cg.debug_bounds = debug_bounds;
  static const char* const kBlock[] = {"tilejit_x", "tilejit_y", "tilejit_z"};
  std::vector<std::string> block_decls;
  for (size_t d = 0; d < kernel.block_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.block_vars[d].var_name());
    cg.bind_var(kernel.block_vars[d], name);
    block_decls.push_back("[[maybe_unused]] const int64_t " + name + " = " + kBlock[d] + ";");
    cg.block_names.push_back(name);
  }
  for (const Expr& tv : kernel.thread_vars) {
    const std::string name = cg.fresh(tv.var_name());
    cg.bind_var(tv, name);
    // One thread per block (Note [CPU lowering of tile IR]).
    block_decls.push_back("[[maybe_unused]] const int64_t " + name + " = 0;");
  }
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
  os << "    try {\n" << body.str()
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
  const ir::PrimFunc f = backend::prepare_tile_func(request, transform::LayoutTarget::kCpu);
  const std::vector<const ir::KernelStmt*> kernels = f.tile()->kernels();
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());

  // One entry per T.Kernel, run in order (Note [Kernel ABI]): tilejit_entry,
  // tilejit_entry_1, ...
  std::ostringstream os;
  emit_entry_head(os, f, " (tile IR)");
  os << "#include \"tilejit/cpu/tile_ops.h\"\n\n";
  std::vector<runtime::AbiLaunch> launches;
  for (size_t i = 0; i < kernels.size(); ++i) {
    runtime::AbiLaunch& l = launches.emplace_back();
    l.entry = i == 0 ? std::string(kEntryName) : std::string(kEntryName) + "_" + std::to_string(i);
    for (size_t d = 0; d < kernels[i]->threads.size() && d < 3; ++d) {
      l.threads[d] = kernels[i]->threads[d];
    }
    if (i > 0) os << "\n";
    emit_kernel_entry(os, f, symbols, *kernels[i], l.entry, request.debug_bounds);
  }
  return {os.str(), backend::slot_abi(request, std::move(launches))};
}

}  // namespace tilejit::cpu

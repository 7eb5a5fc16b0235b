// The CUDA unit of a tile-IR body (Note [CUDA lowering of tile IR] in
// tile_codegen.h). For a function with one T.Kernel(ceildiv(n, 256),
// threads=128) it reads
//
//   #include "tilejit/cuda/prelude.h"
//   #include "tilejit/cuda/tile_ops.h"
//   namespace tilejit { struct Args { void* ptrs[..]; int64_t syms[..]; }; }
//   extern "C" __global__ void __launch_bounds__(128)
//   tilejit_kernel(const __grid_constant__ tilejit::Args tilejit_args) {
//     <the symbols and views of the parameters, as for a source body>
//     extern __shared__ __align__(128) unsigned char tilejit_smem[];
//     constexpr int tilejit_nthreads = 128;
//     const int64_t tilejit_tid = threadIdx.x;
//     const int64_t bx = blockIdx.x;
//     <the kernel's statements>
//   }
#include "backend/cuda/tile_codegen.h"

#include <sstream>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"

namespace tilejit::cuda {
namespace {

using ir::Expr;

// The outermost T.Parallel loops of a nest: each loop whose body is the next.
std::vector<const ir::ForStmt*> parallel_nest(const ir::ForStmt& op) {
  std::vector<const ir::ForStmt*> nest{&op};
  for (;;) {
    const ir::Stmt& body = nest.back()->body;
    const ir::ForStmt* inner = nullptr;
    if (body.kind() == ir::StmtKind::kFor) inner = body.as<ir::ForStmt>();
    if (body.kind() == ir::StmtKind::kSeq && body.as<ir::SeqStmt>()->stmts.size() == 1 &&
        body.as<ir::SeqStmt>()->stmts[0].kind() == ir::StmtKind::kFor) {
      inner = body.as<ir::SeqStmt>()->stmts[0].as<ir::ForStmt>();
    }
    if (inner == nullptr || inner->for_kind != ir::ForKind::kParallel) return nest;
    nest.push_back(inner);
  }
}

}  // namespace

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
  if (name == "min") return call(f32 ? "fminf" : "fmin");
  if (name == "max") return call(f32 ? "fmaxf" : "fmax");
  if (name == "abs") return call(f32 ? "fabsf" : "fabs");
  return call(f32 ? name + "f" : name);
}

void CudaTileCodegen::sync() {
  if (synced_at_ == lines_written()) return;
  line("__syncthreads();");
  synced_at_ = lines_written();
}

void CudaTileCodegen::emit_alloc(const ir::AllocStmt& op) {
  const ir::Buffer& b = op.buffer;
  if (b->layout != transform::kRowMajor) {
    fail(ErrorKind::kValueError, op.span, "T.alloc",
         "buffer " + b.name() + " has layout '" + b->layout +
             "'; the CUDA backend lays tiles out row-major only");
  }
  const char* st = storage_type(b.dtype(), op.span, "T.alloc");
  backend::BufferAccess a;
  a.name = fresh(b.name());
  a.dtype = b.dtype();
  a.data = a.name;
  a.layout = b.scope() == ir::Scope::kLocal ? "local" : b->layout;
  int64_t elements = 1;
  for (const Expr& d : b.shape()) {
    if (!d.is_const()) {
      fail(ErrorKind::kValueError, op.span, "T.alloc",
           "buffer " + b.name() + " has a dynamic shape " + ir::shape_string(b.shape()) +
               "; tiles have constant shapes");
    }
    a.static_shape.push_back(d.int_value());
    a.shape.push_back(std::to_string(d.int_value()));
    elements *= d.int_value();
  }
  const int64_t bytes = elements * b.dtype().bytes();
  if (b.scope() == ir::Scope::kLocal) {
    line(std::string(st) + " " + a.name + "[" + std::to_string(elements) + "];  // local");
  } else {
    const int64_t offset = (smem_bytes_ + 127) / 128 * 128;
    if (offset + bytes > kMaxSharedBytes) {
      fail(ErrorKind::kValueError, op.span, "T.alloc",
           "buffer " + b.name() + " (" + std::to_string(bytes) + " bytes) ends at byte " +
               std::to_string(offset + bytes) + " of the block's shared memory, past the " +
               std::to_string(kMaxSharedBytes) +
               " a block may have; the shared and fragment tiles before it take " +
               std::to_string(offset));
    }
    smem_bytes_ = offset + bytes;
    line(std::string(st) + "* const " + a.name + " = reinterpret_cast<" + st +
         "*>(tilejit_smem + " + std::to_string(offset) + ");  // " + ir::scope_name(b.scope()) +
         ", " + std::to_string(bytes) + " bytes");
  }
  set_access(b, std::move(a));
}

void CudaTileCodegen::emit_parallel_nest(const ir::ForStmt& op) {
  const std::vector<const ir::ForStmt*> nest = parallel_nest(op);
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
  sync();
  const std::string f = fresh("tilejit_f");
  line("for (int64_t " + f + " = tilejit_tid; " + f + " < " + total + "; " + f +
       " += tilejit_nthreads) {");
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
  parallel_depth_ += 1;
  emit_stmt(nest.back()->body);
  parallel_depth_ -= 1;
  dedent();
  line("}");
  sync();
}

void CudaTileCodegen::emit_for(const ir::ForStmt& op) {
  const bool shared_loop =
      op.for_kind == ir::ForKind::kParallel || op.for_kind == ir::ForKind::kVectorized;
  if (shared_loop && parallel_depth_ == 0) {
    emit_parallel_nest(op);
    return;
  }
  const std::string v = var_name(op.var);
  const std::string lo = expr(op.min);
  const std::string end = loop_end(v, op, lo);
  switch (op.for_kind) {
    case ir::ForKind::kUnroll:
      if (op.extent.is_const() && op.extent.int_value() <= 64) line("#pragma unroll");
      break;
    case ir::ForKind::kPipelined:
      line("// T.Pipelined(num_stages=" + std::to_string(op.stages) + ")");
      break;
    default: break;
  }
  line("for (int64_t " + v + " = " + lo + "; " + v + " < " + end + "; ++" + v + ") {");
  indent();
  emit_stmt(op.body);
  dedent();
  line("}");
}

void CudaTileCodegen::emit_store(const ir::StoreStmt& op) {
  const backend::BufferAccess& b = access(op.buffer, op.span, "store");
  const char* st = storage_type(b.dtype, op.span, "store");
  const std::string store =
      element(b, op.indices) + " = tilejit::cuda::convert<" + st + ">(" + expr(op.value) + ");";
  if (parallel_depth_ > 0 || b.layout == "local") {
    line(store);
    return;
  }
  sync();
  line("if (tilejit_tid == 0) " + store);
  sync();
}

void CudaTileCodegen::emit_tile_op(const ir::Stmt& s) {
  if (parallel_depth_ > 0) {
    // One thread's element: T.atomic_add(C[i, j], C_f[i, j]), T.print.
    if (s.kind() == ir::StmtKind::kAtomicAdd) {
      backend::lower_atomic_add(*this, *s.as<ir::AtomicAddOp>());
      return;
    }
    if (s.kind() == ir::StmtKind::kPrint) {
      backend::lower_print(*this, *s.as<ir::PrintOp>());
      return;
    }
    fail(ErrorKind::kValueError, s.span(), "tile op",
         "a tile op inside a T.Parallel loop; the CUDA backend runs T.copy, T.gemm, T.fill and "
         "the reductions on the whole block (only T.atomic_add and T.print may take one "
         "element in a T.Parallel loop)");
  }
  sync();
  switch (s.kind()) {
    case ir::StmtKind::kCopy: backend::lower_copy(*this, *s.as<ir::CopyOp>()); break;
    case ir::StmtKind::kGemm: backend::lower_gemm(*this, *s.as<ir::GemmOp>()); break;
    case ir::StmtKind::kFill: backend::lower_fill(*this, *s.as<ir::FillOp>()); break;
    case ir::StmtKind::kReduce: backend::lower_reduce(*this, *s.as<ir::ReduceOp>()); break;
    case ir::StmtKind::kAtomicAdd:
      backend::lower_atomic_add(*this, *s.as<ir::AtomicAddOp>());
      break;
    case ir::StmtKind::kPrint:
      line("if (tilejit_tid == 0) {");
      indent();
      backend::lower_print(*this, *s.as<ir::PrintOp>());
      dedent();
      line("}");
      break;
    default: ir::unhandled_stmt("CUDA tile codegen", s);
  }
  sync();
}

namespace {

// The entry `entry` that runs the blocks of `kernel`; returns its shared
// memory in bytes.
int64_t emit_kernel_entry(std::ostream& os, const ir::PrimFunc& f,
                          const std::vector<std::string>& symbols, const ir::KernelStmt& kernel,
                          const std::string& entry, int threads) {
  std::ostringstream body;
  CudaTileCodegen cg(f, symbols, body, threads);
  static const char* const kBlock[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  std::vector<std::string> decls;
  for (size_t d = 0; d < kernel.block_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.block_vars[d].var_name());
    cg.bind_var(kernel.block_vars[d], name);
    decls.push_back("[[maybe_unused]] const int64_t " + name + " = " + kBlock[d] + ";");
    cg.block_names.push_back(name);
  }
  // Thread indices of a 1-D block: x the fastest of the kernel's extents.
  int64_t inner = 1;
  for (size_t d = 0; d < kernel.thread_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.thread_vars[d].var_name());
    cg.bind_var(kernel.thread_vars[d], name);
    const int extent = d < kernel.threads.size() ? kernel.threads[d] : 1;
    decls.push_back("[[maybe_unused]] const int64_t " + name + " = tilejit_tid / " +
                    std::to_string(inner) + " % " + std::to_string(extent) + ";");
    inner *= extent;
  }
  cg.indent();
  cg.emit_stmt(kernel.body);

  os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << entry
     << "(const __grid_constant__ tilejit::Args tilejit_args) {\n";
  backend::emit_arguments(os, f, symbols, kCudaEntry);
  os << "  [[maybe_unused]] extern __shared__ __align__(128) unsigned char tilejit_smem[];\n"
     << "  [[maybe_unused]] constexpr int tilejit_nthreads = " << threads << ";\n"
     << "  [[maybe_unused]] const int64_t tilejit_tid = threadIdx.x;\n";
  for (const std::string& d : decls) os << "  " << d << "\n";
  os << body.str() << "}\n";
  return cg.smem_bytes();
}

}  // namespace

runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  ir::PrimFunc f = transform::verify(*request.func);
  f = transform::predicate(f);
  f = transform::select_layouts(f, transform::LayoutTarget::kCuda);
  const ir::TileBody& tile = *f.tile();
  const std::vector<const ir::KernelStmt*> kernels = tile.kernels();
  TILEJIT_ICHECK(!kernels.empty()) << f.name << ": a tile body without a kernel";
  if (tile.globals.size() != tile.global_params.size()) {
    throw Error(ErrorKind::kValueError,
                ir::diagnostic_prefix(tile.globals[0]->span, f.name, "T.alloc_global") +
                    "buffer " + tile.globals[0].name() +
                    " has no workspace: run transform::plan_workspaces first (jit() does)");
  }
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());
  std::ostringstream os;
  os << "// Generated by tilejit's CUDA backend for kernel '" << f.name << "' (tile IR).\n";
  os << "#include \"" << kPreludeName << "\"\n";
  os << "#include \"tilejit/cuda/tile_ops.h\"\n\n";
  emit_args_struct(os, f, symbols);
  std::vector<runtime::AbiLaunch> launches;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const ir::KernelStmt& k = *kernels[i];
    int threads = 1;
    for (int t : k.threads) threads *= t;
    if (threads < 1 || threads > 1024) {
      throw Error(ErrorKind::kValueError,
                  ir::diagnostic_prefix(k.span, f.name, "T.Kernel") + std::to_string(threads) +
                      " threads per block; CUDA allows 1 to 1024");
    }
    runtime::AbiLaunch& l = launches.emplace_back();
    l.entry = i == 0 ? std::string(kEntryName) : std::string(kEntryName) + "_" + std::to_string(i);
    l.threads[0] = threads;
    os << "\n";
    l.smem_bytes = uint32_t(emit_kernel_entry(os, f, symbols, k, l.entry, threads));
  }
  return {os.str(), backend::slot_abi(request, std::move(launches))};
}

}  // namespace tilejit::cuda

// The CUDA unit of a tile-IR body: its entries and the unit around them (Note [CUDA lowering of tile IR] in
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
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/lower_kernel.h"
#include "backend/cuda/tile_codegen.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/lower.h"

namespace tilejit::cuda {
namespace {

// The alignment of the unit's dynamic shared memory, in each entry's text
// until all are emitted (generate_tile_source).
constexpr const char* kSmemAlign = "@TILEJIT_SMEM_ALIGN@";

// The entry `entry` that runs the blocks of the lowered kernel `k`; returns
// its shared memory in bytes. The printer: every decision is `k`'s.
int64_t emit_kernel_entry(std::ostream& os, LoweredKernel k,
                          const std::vector<std::string>& symbols, const std::string& entry,
                          bool debug_bounds, std::set<int>* wgmma_columns, bool* swizzles,
                          int* launch_threads) {
  std::ostringstream body;
  const ir::PrimFunc& f = k.laid_out.func;
  const ir::KernelStmt& kernel = *k.laid_out.kernel;
  const int threads = k.threads;
  const WarpSpecialization& ws = k.ws;
  *launch_threads = ws.launch_threads(threads);
  CudaTileCodegen cg(f, symbols, body, threads, k.uniformity, kernel, std::move(k.pipelines),
                     std::move(k.tiles));
  cg.tma_ = std::move(k.tma);
  if (kernel.thread_vars.size() == 1) cg.set_thread_index(kernel.thread_vars[0]);
  cg.ws_ = ws;
  cg.cluster_ = std::move(k.cluster);
  cg.coarse_ = k.coarse;
  cg.debug_bounds = debug_bounds;
  cg.inside_copies_ = std::move(k.inside_copies);
  cg.scratch_copies_ = k.scratch_copies;
  static const char* const kBlock[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static const char* const kSwizzled[] = {"tilejit_block.x", "tilejit_block.y", "blockIdx.z"};
  std::vector<std::string> decls;
  // T.use_swizzle: the body's (bx, by) are the hardware's block remapped
  // (rasterize.h); a 1-D grid has one row, where either order is the identity.
  const bool swizzled = kernel.raster.enabled() && kernel.block_vars.size() >= 2;
  if (swizzled) {
    const char* fn = kernel.raster.order == ir::RasterOrder::kColumn ? "rasterize_columns"
                                                                     : "rasterize_rows";
    decls.push_back("const tilejit::cuda::BlockXY tilejit_block = tilejit::cuda::" +
                    std::string(fn) + "(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, " +
                    std::to_string(kernel.raster.panel_size) + ");  // T.use_swizzle(" +
                    std::to_string(kernel.raster.panel_size) + ", order=\"" +
                    ir::raster_order_name(kernel.raster.order) + "\")");
  }
  for (size_t d = 0; d < kernel.block_vars.size(); ++d) {
    const std::string name = cg.fresh(kernel.block_vars[d].var_name());
    cg.bind_var(kernel.block_vars[d], name);
    decls.push_back("[[maybe_unused]] const int64_t " + name + " = " +
                    (swizzled ? kSwizzled[d] : kBlock[d]) + ";");
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
  if (ws.loop != nullptr) cg.emit_producer();  // Note [Warp specialisation]
  cg.emit_stmt(kernel.body);
  cg.line("tilejit::cuda::async_wait_all();");

  // A warp-specialised block's consumers take the registers its producer
  // gives up, at ws.blocks blocks per multiprocessor; Note [Cluster
  // multicast]: pairs of blocks.
  os << "extern \"C\" __global__ void __launch_bounds__(" << *launch_threads
     << (ws.loop != nullptr ? ", " + std::to_string(ws.blocks) : "") << ") "
     << (cg.cluster_.dim == 0   ? "__cluster_dims__(2, 1, 1) "
         : cg.cluster_.dim == 1 ? "__cluster_dims__(1, 2, 1) "
                                : "")
     << entry
     << "(const __grid_constant__ tilejit::Args tilejit_args) {\n";
  backend::emit_arguments(os, f, symbols, kCudaEntry);
  wgmma_columns->insert(cg.wgmma_columns().begin(), cg.wgmma_columns().end());
  // The unit's entries declare one dynamic array: NVRTC keeps one alignment
  // for it, the largest any entry needs (kSmemAlign, set once all are
  // emitted), so that static shared memory (mbarriers) before it leaves a
  // swizzled tile's 1024 bytes aligned.
  *swizzles = *swizzles || cg.swizzles();
  os << "  [[maybe_unused]] extern __shared__ __align__(" << kSmemAlign
     << ") unsigned char tilejit_smem[];\n"
     << "  [[maybe_unused]] constexpr int tilejit_nthreads = " << threads << ";\n"
     << "  [[maybe_unused]] const int64_t tilejit_tid = threadIdx.x;\n";
  for (const std::string& d : decls) os << "  " << d << "\n";
  os << body.str() << backend::TileCodegen::kLineRestoreMarker << "\n}\n";
  return cg.smem_bytes();
}

}  // namespace

runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  // Note [The lowering pipeline]: the target-neutral passes, then each
  // kernel's (lower_kernel.h), then the printer.
  const ir::PrimFunc f = transform::lower(*request.func, transform::LayoutTarget::kCuda);
  const std::vector<const ir::KernelStmt*> kernels = f.tile()->kernels();
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());
  // Note [Warpgroup gemms]: wgmma where the source is compiled for sm_90a
  // ("": the backend's default target, which is sm_90a).
  const bool warpgroups = request.arch.empty() || request.arch == "sm_90a";
  std::ostringstream os;
  TensorMaps maps;
  std::vector<runtime::AbiLaunch> launches;
  std::vector<runtime::Diagnostic> diagnostics;
  runtime::LoweringReport report;
  std::set<int> wgmma_columns;
  bool swizzles = false;
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
    os << "\n";
    int launch_threads = threads;
    const bool ws = request.tma && request.warp_specialize;
    const KernelTarget target{warpgroups, request.tma, ws, ws && request.cluster_multicast,
                              ws && request.coarse_k_steps, ws && request.staged_epilogue};
    l.smem_bytes = uint32_t(emit_kernel_entry(
        os, lower_kernel(f, i, threads, symbols, target, &maps, &diagnostics, &report), symbols,
        l.entry, request.debug_bounds, &wgmma_columns, &swizzles, &launch_threads));
    l.threads[0] = launch_threads;
  }
  std::ostringstream unit;
  unit << "// Generated by tilejit's CUDA backend for kernel '" << f.name << "' (tile IR).\n";
  if (request.debug_bounds) unit << kDebugChecksMarker << "\n";
  unit << "#include \"" << kPreludeName << "\"\n";
  unit << "#include \"tilejit/cuda/tile_ops.h\"\n";
  if (!wgmma_columns.empty()) unit << "#include \"tilejit/cuda/wgmma.h\"\n";
  for (int n : wgmma_columns) unit << "#include \"tilejit/cuda/wgmma/m64n" << n << ".h\"\n";
  if (!maps.args.empty()) unit << "#include \"tilejit/cuda/tma.h\"\n";
  unit << "\n";
  check_arg_slots(f, symbols);
  runtime::KernelAbi abi = backend::slot_abi(request, std::move(launches));
  for (const runtime::AbiArg& m : maps.args) {
    // Note [Tensor maps]: after the slots, as tilejit::Args::tmaps.
    abi.add(m.kind, m.name, m.source, m.size, m.align, m.dtype).tensor_map = m.tensor_map;
  }
  emit_args_struct(unit, abi);
  std::string entries = os.str();
  const std::string align = swizzles ? "1024" : "128";
  for (size_t at = entries.find(kSmemAlign); at != std::string::npos;
       at = entries.find(kSmemAlign, at)) {
    entries.replace(at, std::strlen(kSmemAlign), align);
  }
  unit << entries;
  return {backend::restore_line_numbers(unit.str(), program_name(f.name)), std::move(abi),
          std::move(diagnostics), std::move(report)};
}

}  // namespace tilejit::cuda

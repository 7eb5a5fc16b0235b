// Source generation for the CUDA backend: the prelude (tilejit/cuda/prelude.h,
// included by name: src/backend/common/device_files.h), the
// argument struct (Note [Kernel argument ABI] in cuda_backend_internal.h,
// described to the runtime by the KernelAbi returned beside the source),
// then one __global__ entry that gives the body its parameters as typed
// views, the dynamic symbols by name, and the block index, exactly as the
// CPU backend's entry does (with the same code: backend/common/cxx_source.h).
// For kernel `k(A: float32[n, 64], alpha: float32)` with symbol n, launched
// with 128 threads, a body sees
//
//   const int64_t n;                               // each dynamic symbol
//   tilejit::View<float, -1, 64> A;                // A(i, j), A.shape(0), A.data()
//   const float alpha;                             // each scalar
//   const tilejit::Dim3 grid_dim, block_idx;       // .x .y .z (int64), x fastest
//   const int64_t bx, by, bz;                      // block_idx.x, .y, .z
//
// plus CUDA's own threadIdx, blockDim, __shared__, __syncthreads(). The body
// is the kernel's body: `return;` ends the calling thread, which on the CPU
// (one thread per block) is the block.
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/slot_abi.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/tile_codegen.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::cuda {
namespace {

// A scalar's bytes sit in its slot itself (Note [Kernel argument ABI]).
std::string read_scalar(const char* ctype, const std::string& slot) {
  std::string out = "tilejit::scalar_arg<";
  out += ctype;
  out += ">(";
  out += slot;
  out += ')';
  return out;
}

}  // namespace

const backend::CxxEntry kCudaEntry{.target = "cuda",
                                   .display = "CUDA",
                                   .ptrs = "tilejit_args.ptrs",
                                   .syms = "tilejit_args.syms",
                                   .read_scalar = read_scalar};

void check_arg_slots(const ir::PrimFunc& f, const std::vector<std::string>& symbols) {
  const size_t num_params = f.params.size();
  TILEJIT_CHECK(num_params + symbols.size() <= size_t(kMaxArgSlots), kValueError)
      << f.name << ": " << num_params << " parameters and " << symbols.size()
      << " dynamic symbols exceed the CUDA backend's " << kMaxArgSlots << " argument slots";
}

void emit_args_struct(std::ostream& os, const runtime::KernelAbi& abi) {
  // Note [Kernel argument ABI]: the members are the KernelAbi's runs of
  // slots; the unit checks that the block's size is the KernelAbi's.
  struct Run {
    const char* decl;
    const char* member;
    uint32_t offset;
    int count = 0;
  };
  std::vector<Run> runs;
  for (const runtime::AbiArg& a : abi.args) {
    const bool map = a.kind == runtime::AbiArgKind::kTensorMap;
    const bool symbol = a.kind == runtime::AbiArgKind::kSymbol;
    // A slot is 8 bytes; a scalar's value takes its dtype's first bytes.
    TILEJIT_ICHECK(map ? a.size == 128 : a.size <= 8)
        << "a " << runtime::abi_arg_kind_name(a.kind) << " argument of " << a.size
        << " bytes in a CUDA slot layout";
    const char* decl = map ? "tilejit::cuda::TensorMap" : symbol ? "int64_t" : "void*";
    const char* member = map ? "tmaps" : symbol ? "syms" : "ptrs";
    if (runs.empty() || runs.back().member != member) {
      for (const Run& r : runs) {
        TILEJIT_ICHECK(r.member != member) << "the CUDA slot layout's " << member << " are not one run";
      }
      runs.push_back({decl, member, a.offset});
    }
    ++runs.back().count;
  }
  // The members' offsets under C++'s layout rules (8-byte slots, 64-byte
  // aligned tensor maps) are the KernelAbi's.
  uint32_t at = 0;
  for (const Run& r : runs) {
    const uint32_t align = std::string_view(r.member) == "tmaps" ? 64 : 8;
    at = (at + align - 1) / align * align;
    TILEJIT_ICHECK(at == r.offset) << "Args::" << r.member << " at byte " << at
                                   << ", the KernelAbi's at " << r.offset;
    at += uint32_t(r.count) * (align == 64 ? 128 : 8);
  }
  os << "namespace tilejit {\nstruct Args {\n";
  for (const Run& r : runs) os << "  " << r.decl << " " << r.member << "[" << r.count << "];\n";
  if (runs.empty()) os << "  int64_t unused;\n";
  os << "};\n";
  if (!runs.empty()) {
    os << "static_assert(sizeof(Args) == " << abi.block_bytes << ", \"the KernelAbi's block\");\n";
  }
  os << "}  // namespace tilejit\n";
}

void validate_func(const ir::PrimFunc& f) {
  TILEJIT_CHECK(f.launch.threads >= 1 && f.launch.threads <= 1024, kValueError)
      << f.name << ": " << f.launch.threads << " threads per block; CUDA allows 1 to 1024";
  const ir::TileBody* tile = f.tile();
  TILEJIT_CHECK(tile == nullptr || tile->dialect.empty(), kValueError)
      << f.name << ": a " << (tile->dialect == "ascend" ? "TileLang-Ascend" : tile->dialect)
      << " program (T.Kernel(..., is_npu=True)) is emulated on the CPU target only; compile it "
         "with target=\"cpu\" (\"auto\" picks it)";
}

runtime::GeneratedSource generate_source(const runtime::SourceRequest& request) {
  TILEJIT_ICHECK(request.func != nullptr) << "SourceRequest without a PrimFunc";
  const ir::PrimFunc& f = *request.func;
  if (f.tile() != nullptr) return generate_tile_source(request);
  const std::string& body = backend::body_for_target(f, kCudaEntry);
  const std::vector<std::string> symbols(request.symbols.begin(), request.symbols.end());
  validate_func(f);

  std::ostringstream os;
  os << "// Generated by tilejit's CUDA backend for kernel '" << f.name << "'.\n";
  os << "#include \"" << kPreludeName << "\"\n\n";
  check_arg_slots(f, symbols);
  runtime::KernelAbi abi = backend::slot_abi(request, kEntryName);
  emit_args_struct(os, abi);
  os << "\n";

  // __launch_bounds__: the block size is fixed by the PrimFunc, so the
  // compiler may budget registers for exactly that many threads.
  // __grid_constant__: the struct stays in the parameter space even where a
  // scalar's slot has its address taken.
  os << "extern \"C\" __global__ void __launch_bounds__(" << f.launch.threads << ") " << kEntryName
     << "(const __grid_constant__ tilejit::Args tilejit_args) {\n";
  backend::emit_arguments(os, f, symbols, kCudaEntry);
  os << "  [[maybe_unused]] const tilejit::Dim3 grid_dim{gridDim.x, gridDim.y, gridDim.z};\n"
        "  [[maybe_unused]] const tilejit::Dim3 block_idx{blockIdx.x, blockIdx.y, blockIdx.z};\n"
        "  [[maybe_unused]] const int64_t bx = block_idx.x, by = block_idx.y, bz = block_idx.z;\n";
  backend::emit_body(os, body, backend::body_file_name(f.name));
  os << "}\n";
  return {os.str(), std::move(abi)};
}

}  // namespace tilejit::cuda

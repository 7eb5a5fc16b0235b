// KernelAbi: what a compiled kernel takes and how it is launched.
//
// Note [Kernel ABI]
// A kernel receives ONE argument block: bytes laid out by the KernelAbi's
// `args`, each at its own offset. An argument is
//  - a pointer: a tensor's data pointer (8 bytes);
//  - a symbol: the int64 value of a dynamic symbol;
//  - a scalar: the value of a scalar parameter, in its dtype's bytes;
//  - a by-value struct of `size` bytes and alignment `align`, copied into
//    the block;
//  - a tensor map: the 128-byte TMA descriptor of a tensor argument, which
//    the CUDA backend encodes at each launch from the tensor's pointer and
//    the shape AbiTensorMap describes (Note [Tensor maps] in
//    src/backend/cuda/tma_copies.h); pack() leaves it zero.
// Bytes of the block that no argument covers are zero. The backend's
// codegen makes the KernelAbi together with the source (Backend::generate)
// and decides the layout; the phase-1 backends give every parameter an
// 8-byte slot in signature order, then every symbol one (Note [Slot layout]
// in backend/common/slot_abi.h). The runtime packs the block from a launch's
// values (pack()), the same way for every backend.
//
// A kernel has one or more launches, run in order on one stream, each of
// its own entry point with its own grid, threads and dynamic shared memory.
// The grid and the shared memory are not numbers but indices into the
// results of the call plan's ShapeProgram (jit/call_plan.h): the plan
// evaluates them per call, and the module reads them at these indices. A KernelAbi
// is therefore meaningful together with the plan whose SourceRequest made
// it; the disk cache checks that a stored one equals the one generated for
// the kernel at hand (compile_cache.cpp).
//
// The KernelAbi is stored beside the binary in the disk cache, in a
// versioned, checksummed serialisation (serialize()/deserialize()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/core/data_type.h"

namespace tilejit::runtime {

enum class AbiArgKind : uint8_t {
  kPointer = 0,
  kSymbol = 1,
  kScalar = 2,
  kStruct = 3,
  kTensorMap = 4
};

/// "pointer", "symbol", "scalar", "struct", "tensor map".
const char* abi_arg_kind_name(AbiArgKind kind) noexcept;

/// A kTensorMap argument's tensor, as TMA sees it: a row-major tensor of
/// `rank` dimensions (the innermost first, as cuTensorMapEncodeTiled takes
/// them), read in boxes of `box` elements into shared memory swizzled in
/// rows of `swizzle` bytes (0: not swizzled).
struct AbiTensorMap {
  static constexpr int kMaxRank = 5;
  uint8_t rank = 0;
  uint8_t swizzle = 0;
  /// >= 0: the extent; < 0: the value of symbol slot -1 - dims[d].
  int64_t dims[kMaxRank] = {};
  uint32_t box[kMaxRank] = {};

  bool operator==(const AbiTensorMap&) const = default;
};

struct AbiArg {
  AbiArgKind kind = AbiArgKind::kPointer;
  /// The parameter's or the symbol's name.
  std::string name;
  /// kSymbol: the symbol's slot (LaunchParams::symbols); otherwise the
  /// index of the value in LaunchParams::args (the parameter's position in
  /// the signature).
  int source = 0;
  /// kScalar: the scalar's dtype; kTensorMap: the tensor's.
  DataType dtype;
  /// kTensorMap: what the descriptor describes.
  AbiTensorMap tensor_map;
  uint32_t offset = 0;  ///< bytes from the block's start; a multiple of align
  uint32_t size = 0;    ///< bytes it occupies: 8, the dtype's bytes, or the struct's
  uint32_t align = 1;   ///< a power of two

  bool operator==(const AbiArg&) const = default;
};

struct AbiLaunch {
  /// The entry point's symbol in the binary.
  std::string entry;
  /// Indices into the call plan's shape-program results: the three grid
  /// extents (x, y, z) and the dynamic shared memory in bytes (each >= 0 in
  /// a well-formed KernelAbi).
  int grid[3] = {-1, -1, -1};
  int smem = -1;
  /// Threads per block (x, y, z); the CPU backend runs a block on one.
  int threads[3] = {1, 1, 1};
  /// Dynamic shared memory the lowering itself planned (a tile kernel's
  /// shared and fragment tiles), launched with results[smem] added.
  uint32_t smem_bytes = 0;

  bool operator==(const AbiLaunch&) const = default;
};

struct KernelAbi {
  /// The serialisation's version; a stored KernelAbi of another reads as
  /// corrupt.
  static constexpr uint32_t kVersion = 3;
  /// The largest argument block any backend accepts (CUDA's 4 KiB of kernel
  /// parameters).
  static constexpr uint32_t kMaxBlockBytes = 4096;
  static constexpr int kMaxLaunches = 16;

  std::vector<AbiArg> args;  ///< in block order
  uint32_t block_bytes = 0;  ///< the block's size, a multiple of block_align
  uint32_t block_align = 8;
  std::vector<AbiLaunch> launches;  ///< one or more

  /// Appends an argument at the next offset that `align` allows; grows the
  /// block. Throws ValueError past kMaxBlockBytes.
  AbiArg& add(AbiArgKind kind, std::string name, int source, uint32_t size, uint32_t align,
              DataType dtype = {});

  /// Writes the block (block_bytes bytes at `block`, aligned to block_align):
  /// each argument from `values[source]` (a pointer's value, or the address
  /// of a scalar's or a struct's bytes) or `symbols[source]`; every other
  /// byte zero.
  void pack(void* const* values, const int64_t* symbols, void* block) const noexcept;

  /// Whether the block is exactly `num_values` pointers in source order then
  /// `num_symbols` symbols in slot order, 8 bytes each: then it can be
  /// packed with two copies (a backend checks once, at load).
  bool is_dense(int num_values, int num_symbols) const noexcept;

  /// The highest LaunchParams::args index and symbol slot the arguments
  /// read, plus one (the counts a launch must supply).
  int num_values() const noexcept;
  int num_symbols() const noexcept;
  /// The highest result index the launches read, plus one.
  int num_results() const noexcept;

  /// Why this KernelAbi is not well formed, or "" when it is: offsets
  /// aligned and inside the block, sizes right for their kind, no overlap,
  /// between one and kMaxLaunches launches with entry names and result
  /// indices.
  std::string problem() const;

  /// "block 24 bytes: pointer A @0, scalar alpha float32 @8, symbol n @16;
  /// launch tilejit_entry grid (r5, r6, r7) threads (128, 1, 1) smem r8"
  std::string str() const;

  /// Versioned, checksummed, self-delimiting bytes (little-endian).
  std::string serialize() const;
  /// The KernelAbi at the start of `bytes`; sets *consumed to its length.
  /// nullopt for anything else: another version, a failed checksum,
  /// truncation, or a result that is not well formed.
  static std::optional<KernelAbi> deserialize(std::string_view bytes, size_t* consumed = nullptr);

  bool operator==(const KernelAbi&) const = default;
};

/// A KernelAbi's packing as a module does it at each launch: dense blocks
/// (is_dense) with two copies, others through KernelAbi::pack (one function
/// for both: tilejit_abi::pack_block, abi_block.h, which the exported
/// libraries use too). The KernelAbi must outlive it.
class AbiPacker {
 public:
  explicit AbiPacker(const KernelAbi& abi);
  void pack(void* const* values, const int64_t* symbols, void* block) const noexcept;

 private:
  const KernelAbi* abi_;
  int num_values_;
  bool dense_;
};

}  // namespace tilejit::runtime

// The packing of a kernel's argument block (Note [Kernel ABI] in
// kernel_abi.h): the one function that writes it, for the JIT's modules
// (KernelAbi::pack) and for an exported library's wrapper, which embeds
// this file's text after the marker (export_codegen.cpp) and packs from its
// kAbiArgs table of AbiSlot rows.
//
// The text after the marker is C++17 that uses nothing of libstdc++ beyond
// what the C library provides, as the wrapper's own (wrapper_types.h).
#pragma once

// ---- embedded from the next line on ----
#include <stdint.h>
#include <string.h>

namespace tilejit_abi {

// An argument's kind; runtime::AbiArgKind has these values.
enum : int { kArgPointer = 0, kArgSymbol = 1, kArgScalar = 2, kArgStruct = 3, kArgTensorMap = 4 };

// One argument of the block, as an exported library's tables hold it.
struct AbiSlot {
  int kind, source;
  uint32_t offset, size;
};

// Writes `bytes` bytes of the block at `block`: each of the `count`
// arguments of `slots` (any type with AbiSlot's members: kind, source,
// offset, size) from values[source] (a pointer's value, or the address of a
// scalar's or a struct's bytes) or symbols[source], at its offset; a tensor
// map, which the target encodes, and every byte no argument covers, zero.
// Where `dense` (the block is the values' pointers in order, then the
// symbols, 8 bytes each: `count` - `num_values` of them), two copies do it.
template <typename Slot>
inline void pack_block(const Slot* slots, int count, void* const* values, const int64_t* symbols,
                       unsigned char* block, uint32_t bytes, bool dense = false,
                       int num_values = 0) {
  if (dense) {
    memcpy(block, values, sizeof(void*) * size_t(num_values));
    if (count > num_values) memcpy(block + 8 * num_values, symbols, 8 * size_t(count - num_values));
    return;
  }
  memset(block, 0, bytes);
  for (int a = 0; a < count; ++a) {
    const Slot& s = slots[a];
    unsigned char* dst = block + s.offset;
    switch (int(s.kind)) {
      case kArgPointer: memcpy(dst, &values[s.source], sizeof(void*)); break;
      case kArgSymbol: memcpy(dst, &symbols[s.source], sizeof(int64_t)); break;
      case kArgTensorMap: break;
      default: memcpy(dst, values[s.source], s.size); break;  // a scalar's or a struct's bytes
    }
  }
}

}  // namespace tilejit_abi

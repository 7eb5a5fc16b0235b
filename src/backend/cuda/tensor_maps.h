// The launch-time half of TMA: the tensor maps a kernel's argument block
// holds (Note [Tensor maps] in tma_copies.h), encoded from the call's
// tensors.
#pragma once

#include <cstdint>

#include "tilejit/runtime/kernel_abi.h"

namespace tilejit::cuda {

/// Encodes each kTensorMap argument of `abi` into `block` (packed by
/// KernelAbi::pack) from the tensor values[a.source] and the symbols its
/// shape reads. Throws ValueError naming the argument when TMA cannot read
/// the tensor (an address that is not a multiple of 16
/// bytes), and RuntimeError when the driver has no cuTensorMapEncodeTiled.
void encode_tensor_maps(const runtime::KernelAbi& abi, void* const* values,
                        const int64_t* symbols, void* block);

}  // namespace tilejit::cuda

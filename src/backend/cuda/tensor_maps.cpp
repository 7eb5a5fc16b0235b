// Note [Tensor maps] in tma_copies.h.
#include "backend/cuda/tensor_maps.h"

#include <cuda.h>

#include "backend/cuda/cuda_driver.h"
#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

CUtensorMapDataType element_type(int bytes) {
  // TMA moves bits: the unsigned type of the element's width, whose
  // out-of-bounds fill (zero bits) is 0 in every float format too.
  switch (bytes) {
    case 1: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case 2: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
    default: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  }
}

CUtensorMapSwizzle swizzle_mode(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

[[noreturn, gnu::cold]] void throw_unreadable(const runtime::AbiArg& a, const std::string& why) {
  TILEJIT_THROW(kValueError) << "argument '" << a.name << "': the kernel reads it through TMA "
                             << "(cp.async.bulk.tensor), which " << why;
}

}  // namespace

void encode_tensor_maps(const runtime::KernelAbi& abi, void* const* values,
                        const int64_t* symbols, void* block) {
  for (const runtime::AbiArg& a : abi.args) {
    if (a.kind != runtime::AbiArgKind::kTensorMap) continue;
    const runtime::AbiTensorMap& t = a.tensor_map;
    const uint64_t elem = uint64_t(a.dtype.bytes());
    cuuint64_t dims[runtime::AbiTensorMap::kMaxRank] = {}, strides[runtime::AbiTensorMap::kMaxRank] = {};
    cuuint32_t box[runtime::AbiTensorMap::kMaxRank] = {}, ones[runtime::AbiTensorMap::kMaxRank] = {};
    uint64_t pitch = elem;
    bool empty = false;
    for (int d = 0; d < t.rank; ++d) {
      const int64_t n = t.dims[d] >= 0 ? t.dims[d] : symbols[-1 - t.dims[d]];
      empty = empty || n <= 0;
      dims[d] = cuuint64_t(n);
      box[d] = t.box[d];
      ones[d] = 1;
      if (d > 0) strides[d - 1] = pitch;
      pitch *= uint64_t(n > 0 ? n : 1);
    }
    // A tensor without elements: no block reads it (every box is outside),
    // and the driver refuses extents of 0.
    if (empty) continue;
    const auto address = reinterpret_cast<uintptr_t>(values[a.source]);
    // The planner proved the pitches multiples of 16 bytes whatever the
    // symbols are (Note [TMA copies]); the address is the call's.
    if (address % 16 != 0) throw_unreadable(a, "needs its address 16-byte aligned");
    const DriverApi& api = driver();
    TILEJIT_CHECK(api.cuTensorMapEncodeTiled != nullptr, kRuntimeError)
        << "argument '" << a.name
        << "': the kernel reads it through TMA, and this CUDA driver has no "
           "cuTensorMapEncodeTiled (CUDA 12.0 or later)";
    auto* map = reinterpret_cast<CUtensorMap*>(static_cast<char*>(block) + a.offset);
    const CUresult r = api.cuTensorMapEncodeTiled(
        map, element_type(int(elem)), cuuint32_t(t.rank), values[a.source], dims, strides, box,
        ones, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_mode(t.swizzle),
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      throw_driver_error(r, "cuTensorMapEncodeTiled",
                         "argument '" + a.name + "': encoding its TMA descriptor");
    }
  }
}

}  // namespace tilejit::cuda

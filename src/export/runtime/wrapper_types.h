// The first part of an exported library's wrapper unit (Note [Exported
// library] in export_library.cpp), after the C header: the target's hooks,
// which its launcher unit defines, and the rows of the tables that
// export_codegen.cpp writes after this text (wrapper_tables.h stands in for
// them where the fixed code compiles on its own).
//
// The wrapper is C++17 that uses nothing of libstdc++ beyond what the C
// library provides (no exceptions, no allocation but aligned_alloc), so that
// it adds nothing to what the library needs at run time.
//
// No include guard: the unit holds this text once, and so does the chain of
// includes of the standalone compile (wrapper_tables.h, wrapper_check.cpp,
// wrapper_call.cpp).
#include "tilejit/runtime/abi_block.h"
// ---- embedded from the next line on ----
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TJ_API extern "C" __attribute__((visibility("default")))

// The target's hooks, defined by its launcher unit (runtime::ExportRequest
// in runtime/backend.h says what each does).
struct tilejit_export_call {
  int device_id;
  void* stream;
  void* target;
  void* saved;
};
extern "C" {
int tilejit_export_begin(tilejit_export_call* call, char* error, size_t error_size);
void tilejit_export_end(tilejit_export_call* call);
int tilejit_export_launch(tilejit_export_call* call, int launch, const void* block,
                          const int64_t* grid, int64_t smem, char* error, size_t error_size);
int tilejit_export_zero(tilejit_export_call* call, void* ptr, size_t bytes, char* error,
                        size_t error_size);
int tilejit_export_capturing(tilejit_export_call* call, int* capturing, char* error,
                             size_t error_size);
void* tilejit_export_alloc(tilejit_export_call* call, size_t bytes, int ordered);
int tilejit_export_graph_alloc(tilejit_export_call* call, size_t bytes, void** ptr,
                               void (*release)(void*), void* context, char* error,
                               size_t error_size);
void tilejit_export_free(void* target, void* ptr, size_t bytes, void* stream, int ordered);
int tilejit_export_tensor_map(tilejit_export_call* call, void* map, void* address, int elem_bytes,
                              int rank, const uint64_t* dims, const uint32_t* box, int swizzle,
                              const char* name, char* error, size_t error_size);
}

namespace {

enum : int { kOk = 0, kTypeError = 1, kValueError = 2, kRuntimeError = 3, kOutOfMemory = 4 };
enum : int { kInitEmpty = 0, kInitZero = 1, kInitZeroOnce = 2 };

struct InputSpec {
  const char* name;
  int param;
  int scalar;
  uint8_t code, bits;
  int rank;
  int64_t dims[8];     // -1: symbolic
  const char* dtype;   // "float32"
  const char* a_dtype; // "a float32"
  const char* shape;   // "[M, K]"
};
struct Binding {
  int symbol, input, dim;  // dim -1: a scalar input
  int64_t coeff, offset;
  const char* dim_expr;    // the declared extent, "2*s + 1"
  const char* source;      // "A.shape[1]", "scalar #2 'n'"
};
struct DimCheck {
  int input, dim, result;
  const char* symbol;  // the extent is this symbol (else nullptr)
  const char* source;  // where that symbol came from
  const char* expr;    // the declared extent
};
struct BufferSpec {
  const char* name;
  int param;
  uint8_t code, bits;
  int rank;
  int first;  // its extents are results [first, first + rank)
  int init;
  int64_t elem_bytes;
  const char* dtype;
  const char* a_dtype;
};
// The KernelAbi's arguments are tilejit_abi::AbiSlot rows (abi_block.h,
// whose text the unit holds before this one).
using AbiArgSpec = tilejit_abi::AbiSlot;
// A kTensorMap argument (Note [Tensor maps]): its tensor's dims innermost
// first, each an extent (>= 0) or symbol slot -1 - dims[d].
struct TensorMapSpec {
  int arg;  // its index in kAbiArgs
  int elem_bytes, rank, swizzle;
  int64_t dims[5];
  uint32_t box[5];
  const char* name;
};
union Scalar {
  int32_t i32;
  int64_t i64;
  float f32;
};

}  // namespace

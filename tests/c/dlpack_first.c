/* A program that includes <dlpack/dlpack.h> before an exported header: the
   header must then declare none of the DLPack structs again. dlpack.h's
   guard and version macros and its structs are declared here as dlpack.h
   declares them (this is compiled, with -Werror, not run). */
#include <stdint.h>

#define DLPACK_DLPACK_H_
#define DLPACK_VERSION 80
#define DLPACK_EXTERN_C
typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U } DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#include "libsplitk_gemm.h"
#include "libsplitk_gemm_counted.h"

int main(void) {
  DLTensor t = {0, {kDLCPU, 0}, 0, {kDLFloat, 32, 1}, 0, 0, 0};
  return (int)splitk_gemm_workspace_bytes(&t, &t) + (int)splitk_gemm_counted_workspace_bytes(&t, &t);
}

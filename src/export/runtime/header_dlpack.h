// The DLPack block of every exported library's C header (c_header() in
// export_codegen.cpp writes it after the header's includes): the few DLPack
// structs the C functions take, under dlpack.h's own guard, so that a
// consumer that includes <dlpack/dlpack.h> first compiles too. C, and C++.
#include <stdint.h>
// ---- embedded from the next line on ----
/* DLPack (https://github.com/dmlc/dlpack): the structs this header uses,
   declared after the public ABI. Include <dlpack/dlpack.h> before this
   header for the rest of it; this block is skipped then. */
#if !defined(DLPACK_DLPACK_H_) && !defined(DLPACK_VERSION)
#define DLPACK_DLPACK_H_
#ifndef DLPACK_EXTERN_C
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#endif
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13
} DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;
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
#endif

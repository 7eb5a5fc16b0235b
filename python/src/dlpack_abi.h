// The DLPack C ABI as the binding uses it: the tensor structs (DLPack 1.x)
// and the C exchange table that a framework publishes on its tensor type as
// `__dlpack_c_exchange_api__` (a PyCapsule named "dlpack_exchange_api",
// DLPack 1.3). Declared here from the published ABI rather than taken from a
// dlpack.h, so that the build needs no header from any framework; the layouts
// are fixed by the standard and must not change.
//
// Note [DLPack exchange]
// `obj.__dlpack__()` costs a Python method call, a capsule and a heap block
// per tensor (microseconds for torch). A type that publishes the exchange
// table lets a consumer read a tensor into a stack DLTensor with one C call
// (`dltensor_from_py_object_no_sync`), allocate new tensors in the
// framework's own allocator (`managed_tensor_allocator`, so torch's caching
// allocator and memory statistics see them), turn them into the framework's
// Python objects (`managed_tensor_to_py_object_no_sync`), and ask for the
// framework's current stream (`current_work_stream`). The binding looks the
// table up once per Python type and caches it (tensor_import.cpp).
#pragma once

#include <cstdint>

namespace tilejit::python::dl {

struct Version {
  uint32_t major;
  uint32_t minor;
};

struct Device {
  int32_t device_type;  // DLDeviceType: 1 CPU, 2 CUDA, 3 CUDA host, ...
  int32_t device_id;
};

struct DataType {
  uint8_t code;  // DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; may be null (row-major) before DLPack 1.2
  uint64_t byte_offset;
};

/// DLManagedTensor (the unversioned form, capsule name "dltensor").
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

inline constexpr uint64_t kFlagReadOnly = 1;

/// DLManagedTensorVersioned (capsule name "dltensor_versioned").
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

using SetErrorFn = void (*)(void* error_ctx, const char* kind, const char* message);

struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};

/// DLPackExchangeAPI. Every function returns 0 on success and -1 on failure;
/// the *_py_object_* and current_work_stream ones leave a Python exception
/// set on failure, the allocator reports through SetError instead.
struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(Tensor* prototype, ManagedTensorVersioned** out,
                                  void* error_ctx, SetErrorFn set_error);
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(ManagedTensorVersioned* tensor,
                                             void** out_py_object);
  /// May be null: the producer then supports only the managed form.
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

inline constexpr const char* kExchangeApiCapsuleName = "dlpack_exchange_api";
/// The exchange table's major version this binding understands.
inline constexpr uint32_t kExchangeApiMajor = 1;

}  // namespace tilejit::python::dl

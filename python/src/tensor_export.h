// A call's outputs as Python objects of the inputs' framework, and the
// framework's current stream.
//
// Note [Output frameworks]
// The first tensor argument decides (tensor_import.h's Origin):
//  - numpy, or another DLPack/buffer producer on the CPU, or no tensor at
//    all on the CPU: numpy arrays over memory from tilejit's allocator,
//    owned through a capsule (numpy_interop.h);
//  - a type with a DLPack exchange table (torch >= 2.10): its
//    managed_tensor_allocator makes the outputs inside the call, so they
//    come from the framework's own allocator (torch's caching allocator,
//    visible in its memory statistics), and managed_tensor_to_py_object
//    turns them into the framework's tensors;
//  - torch without the table: torch.empty(), called through a cached
//    callable from inside the call (the GIL is taken for it), then read
//    back through data_ptr();
//  - anything else off the CPU: an object with __dlpack__ and
//    __dlpack_device__ (nanobind's array-API ndarray) over memory from
//    tilejit's allocator, handed to the from_dlpack() of the package that
//    defines the first tensor's type when that package has one and is
//    imported (cupy.from_dlpack for cupy arrays: cupy arrays out), else
//    returned as it is, for the caller's framework to adopt.
// Tensors passed through out= come back as the very objects passed.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <vector>

#include "tensor_import.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/allocator.h"

namespace tilejit::python {

/// A TensorAllocator that makes tensors in a Python framework and can hand
/// each back as that framework's Python object, in allocation order.
class FrameworkAllocator : public runtime::TensorAllocator {
 public:
  /// The Python object for the k-th tensor this allocator made (new
  /// reference); may be called once per k, with the GIL held.
  virtual PyObject* take(size_t k) = 0;
};

/// Outputs through a DLPack exchange table (Note [Output frameworks]);
/// lives on the caller's stack for one call.
class ExchangeAllocator final : public FrameworkAllocator {
 public:
  explicit ExchangeAllocator(const dl::ExchangeApi* api) noexcept : api_(api) {}
  ~ExchangeAllocator() override;
  ExchangeAllocator(const ExchangeAllocator&) = delete;
  ExchangeAllocator& operator=(const ExchangeAllocator&) = delete;

  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream stream) override;
  PyObject* take(size_t k) override;

 private:
  const dl::ExchangeApi* api_;
  SmallArray<dl::ManagedTensorVersioned*, kMaxParams> made_;  // null once taken
};

/// Turns one call's Outputs into the Python result.
class OutputMaker {
 public:
  explicit OutputMaker(const Origin& origin);
  ~OutputMaker();

  /// The allocator for CallOptions::allocator (null: the backend's own).
  runtime::TensorAllocator* allocator() const noexcept { return allocator_; }

  /// None, one object, or a tuple in out_idx order (new reference).
  /// `supplied[o]` is the caller's out= object for output o, or null.
  PyObject* wrap(Outputs& outputs, PyObject* const* supplied);

 private:
  PyObject* wrap_one(Tensor& t, PyObject* supplied, size_t* allocated);

  Origin origin_;
  FrameworkAllocator* allocator_ = nullptr;
  std::optional<ExchangeAllocator> exchange_;  // the common case, without a heap allocation
  std::unique_ptr<FrameworkAllocator> torch_;
};

/// The stream a call on `device` launches on when the caller gave none: the
/// current stream of the inputs' framework (torch's current CUDA stream), or
/// nullptr for the backend's own. Always nullptr for the CPU.
void* framework_stream(const Origin& origin, Device device);

/// A stream= argument as a raw handle: an int, an object with
/// __cuda_stream__ (the CUDA stream protocol) or with a cuda_stream
/// attribute (torch.cuda.Stream). TypeError otherwise.
void* parse_stream(PyObject* stream);

}  // namespace tilejit::python

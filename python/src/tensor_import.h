// Python call arguments -> tilejit Args, without copying any tensor data.
//
// An argument is, in the order tried:
//  - a numpy array: read through numpy's C API (numpy_interop.h);
//  - a Python int or float, or a numpy integer or floating scalar: a scalar;
//  - None: an absent argument (the kernel reports what it expected);
//  - an object whose type publishes `__dlpack_c_exchange_api__` (torch):
//    read with the exchange table's C functions (Note [DLPack exchange]);
//  - any other object that nanobind's ndarray accepts: `__dlpack__`
//    producers (cupy, jax, ...) and buffer-protocol objects.
// Anything else is a TypeError naming the argument.
//
// The first tensor decides the call's Origin: which framework the outputs
// are made in (tensor_export.h).
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>
#include <vector>

#include "dlpack_abi.h"
#include "numpy_interop.h"
#include "tilejit/core/small_array.h"
#include "tilejit/core/tensor.h"
#include "tilejit/jit/kernel.h"

namespace tilejit::python {

/// Where a call's tensors came from.
enum class Framework : uint8_t {
  kNone,      // no tensor argument
  kNumpy,     // numpy.ndarray
  kExchange,  // a type with a DLPack exchange table (torch >= 2.10, ...)
  kTorch,     // torch without the exchange table
  kDLPack,    // any other DLPack or buffer-protocol producer
};

struct Origin {
  Framework framework = Framework::kNone;
  const dl::ExchangeApi* api = nullptr;  // kExchange
  PyTypeObject* type = nullptr;          // the first tensor's type
};

/// Says which argument a conversion is for, so that a failure names it the
/// way the library's own call errors do. Built cheaply on the hot path; its
/// text is assembled only on failure.
struct ArgContext {
  enum class Role : uint8_t { kInput, kOut, kWorkspace };
  const Kernel* kernel = nullptr;
  int index = 0;  // position among the inputs, or among out=
  Role role = Role::kInput;
  bool is_input() const noexcept { return role == Role::kInput; }
  /// "sparse_attention_fwd: argument #2 'Indices': ", "k: out[0] 'C': " or
  /// "k: workspace=: ".
  std::string prefix() const;
  /// "int32" (the dtype the parameter declares), or "" when unknown.
  std::string expected_dtype() const;
  /// "a float32 tensor", "an int32 scalar", "a tensor".
  std::string expected_what() const;
};

/// Storage for one call's converted arguments: the Tensors that Args point
/// at, and whatever keeps foreign views alive until the call returns.
struct ArgStorage {
  // One per argument, tensor or not. An input's Arg may point at its slot
  // of the descriptor cache instead (Note [Input descriptor cache]): read
  // tensors through args, never through this.
  SmallArray<Tensor, kMaxParams> tensors;
  SmallArray<Arg, kMaxParams> args;
  std::vector<nanobind::ndarray<nanobind::ro>> keep_alive;  // nanobind-imported views
};

/// Converts `obj` into `*arg` (a tensor lands in `*tensor`, which `*arg`
/// then points at). Updates `origin` at the first tensor. `writable` is for
/// out= and workspace= tensors. Throws tilejit::Error (TypeError/ValueError) naming the
/// argument, or nanobind::python_error for a producer's own failure.
/// `cache` is this argument slot's descriptor cache (numpy_interop.h).
void convert_arg(PyObject* obj, const ArgContext& ctx, bool writable, Tensor* tensor, Arg* arg,
                 Origin* origin, ArgStorage* storage, numpy::DescriptorCache cache = {});

/// Converts positional arguments args[0, n) into storage->args (and
/// storage->tensors, one per argument); n must be at most kMaxParams.
/// `caches` holds one descriptor cache slot per input, or is null; `share`
/// as in numpy::DescriptorCache.
void convert_args(PyObject* const* args, size_t n, const Kernel& kernel, Origin* origin,
                  ArgStorage* storage, Tensor* caches = nullptr, bool share = false);

/// The exchange table published by `type`, or null (cached per type).
const dl::ExchangeApi* exchange_api_of(PyTypeObject* type);

/// Whether `type` is torch's Tensor or a subclass, judged by module name so
/// that torch is never imported here.
bool is_torch_type(PyTypeObject* type);

/// A Tensor viewing `t` (DLPack's fields), with `deleter(context)` run when
/// the last reference goes. Checks rank and dtype against ctx on failure.
Tensor tensor_from_dlpack(const dl::Tensor& t, const ArgContext& ctx, Tensor::Deleter deleter,
                          void* context);

}  // namespace tilejit::python

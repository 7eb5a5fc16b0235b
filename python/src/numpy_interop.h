// numpy arrays in and out, through numpy's C API.
//
// Why not DLPack or the buffer protocol for numpy: a call reads three to
// eight arrays, and reading an ndarray's fields directly costs nanoseconds
// where `__dlpack__` or `PyObject_GetBuffer` cost a capsule or a format
// string each (and neither can describe ml_dtypes' bfloat16, which numpy
// knows only as a user-defined dtype). Outputs are made with
// PyArray_NewFromDescr over the tensor's memory, owned by a TensorOwner
// (tensor_owner.h), so
// no byte is copied either way. All of numpy's C API stays in
// numpy_interop.cpp.
#pragma once

#include <Python.h>

#include <string>

#include "tilejit/core/tensor.h"

namespace tilejit::python::numpy {

/// Imports numpy's C API. Called once when the extension is imported; throws
/// nanobind::python_error when numpy is missing or too old.
void init();

/// True for numpy.ndarray and its subclasses.
bool is_array(PyObject* o) noexcept;

/// For a numpy scalar (np.int32(3), np.float64(2.5)): 1 when it is an
/// integer, 2 when it is floating point, 0 when it is neither or not a numpy
/// scalar at all (np.bool_ is neither: a flag is not a count).
int scalar_kind(PyObject* o) noexcept;

enum class ImportStatus { kOk, kBadDtype, kBadRank, kBadStrides, kReadOnly };

/// Where a converted descriptor may come from and go to (Note [Input
/// descriptor cache]). `slot` null: no cache.
struct DescriptorCache {
  Tensor* slot = nullptr;
  /// Hand out the cached descriptor itself rather than a copy; only when
  /// nothing can replace `*slot` before the call ends.
  bool share = false;

  /// The descriptor a call uses once `*slot` holds the right one: the slot
  /// itself when `share`, else a copy in `*out`.
  const Tensor* hand_out(Tensor* out) const {
    if (share) return slot;
    *out = *slot;
    return out;
  }
};

/// Views `array` (a numpy array) as a CPU Tensor without copying; the array
/// must outlive the Tensor. On success `*result` points at the descriptor:
/// `out`, or the cache slot when `cache.share`. On failure returns the
/// reason and writes a description of the offending property to `*problem`
/// ("complex64", "rank 9", ...). `writable` rejects read-only arrays (for
/// out=).
///
/// Note [Input descriptor cache]
/// A Tensor made over numpy memory (or over a contiguous view read through
/// a DLPack exchange table: tensor_import.cpp) is a descriptor and owns
/// nothing, yet
/// making one costs an allocation, and copying one an atomic increment and
/// decrement. Callers pass the same arrays call after call (weights, an
/// input buffer), so each input slot of a kernel keeps the last descriptor
/// and reuses it when the new array's data pointer, dtype and shape are the
/// same and it is C-contiguous: the two descriptors are then identical,
/// whichever array object they came from. The slots are only touched with
/// the GIL held. When the call keeps the GIL throughout, the slot itself is
/// handed to the call (`share`); otherwise the call gets a copy, which
/// another thread cannot replace under it. A call nested in another on the
/// same thread does not touch the slots (kernel_call.cpp).
ImportStatus to_tensor(PyObject* array, bool writable, Tensor* out, std::string* problem,
                       DescriptorCache cache, const Tensor** result);

/// A numpy array over `t`'s memory that keeps `t` alive (new reference).
/// Throws TypeError for a bfloat16 tensor when ml_dtypes is not installed.
PyObject* from_tensor(Tensor t);

}  // namespace tilejit::python::numpy

// TensorOwner: the Python object that keeps a tilejit Tensor's memory alive
// while a numpy array (or a DLPack export) views it; the array's base.
//
// One small Python object with the Tensor inline. A PyCapsule over a heap
// Tensor would do the same with two allocations and a name check on every
// release; outputs are made on every call, so the difference shows.
#pragma once

#include <Python.h>

#include "tilejit/core/tensor.h"

namespace tilejit::python {

/// Creates the TensorOwner type (once, at import) and adds it to `module`.
void register_tensor_owner(PyObject* module);

/// A new TensorOwner holding `t` (new reference). Throws python_error.
PyObject* make_tensor_owner(Tensor t);

}  // namespace tilejit::python

#include "tensor_owner.h"

#include <nanobind/nanobind.h>

#include <new>
#include <string>

namespace nb = nanobind;

namespace tilejit::python {
namespace {

struct TensorOwner {
  PyObject_HEAD
  Tensor tensor;
};

PyTypeObject* g_owner_type = nullptr;

void owner_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<TensorOwner*>(self)->tensor.~Tensor();
  PyObject_Free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

PyObject* owner_repr(PyObject* self) {
  const Tensor& t = reinterpret_cast<TensorOwner*>(self)->tensor;
  const std::string text = "<tilejit memory of a " + t.dtype().name() + t.shape_str() +
                           " tensor on " + t.device().str() + ">";
  return PyUnicode_FromStringAndSize(text.data(), Py_ssize_t(text.size()));
}

PyObject* owner_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError, "tilejit.TensorOwner objects are made by tilejit only");
  return nullptr;
}

PyType_Slot owner_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(owner_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(owner_repr)},
    {Py_tp_new, reinterpret_cast<void*>(owner_new)},
    {Py_tp_doc, const_cast<char*>("Keeps tilejit memory alive for the arrays that view it.")},
    {0, nullptr},
};

PyType_Spec owner_spec = {
    "tilejit.TensorOwner", int(sizeof(TensorOwner)), 0, Py_TPFLAGS_DEFAULT, owner_slots,
};

}  // namespace

void register_tensor_owner(PyObject* module) {
  g_owner_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&owner_spec));
  if (g_owner_type == nullptr) throw nb::python_error();
  Py_INCREF(g_owner_type);  // one reference kept here for the process's life
  if (PyModule_AddObject(module, "TensorOwner", reinterpret_cast<PyObject*>(g_owner_type)) != 0) {
    throw nb::python_error();
  }
}

PyObject* make_tensor_owner(Tensor t) {
  // PyObject_Malloc + PyObject_Init rather than tp_alloc: no zeroing, no GC
  // bookkeeping (the object holds no Python references).
  void* memory = PyObject_Malloc(sizeof(TensorOwner));
  if (memory == nullptr) {
    PyErr_NoMemory();
    throw nb::python_error();
  }
  PyObject* self = PyObject_Init(static_cast<PyObject*>(memory), g_owner_type);  // increfs the type
  new (&reinterpret_cast<TensorOwner*>(self)->tensor) Tensor(std::move(t));
  return self;
}

}  // namespace tilejit::python

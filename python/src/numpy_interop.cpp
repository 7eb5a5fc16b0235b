// numpy's C API, confined to this file (numpy_interop.h says why). Built
// against numpy 2 headers with NPY_TARGET_VERSION at 1.22, the extension
// runs with numpy 1.22 and later, 1.x and 2.x alike: only the field readers
// (PyArray_DATA, ...) and three API calls are used.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tilejit_numpy_api
#include "numpy_interop.h"

#include <algorithm>

#include <nanobind/nanobind.h>
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include "errors.h"
#include "tensor_owner.h"

// numpy 1.x headers have no PyDataType_ELSIZE (numpy 2's is an inline
// function that reads the field where the running numpy keeps it); their
// descriptor has elsize as a plain field.
#if NPY_ABI_VERSION < 0x02000000
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

namespace nb = nanobind;

namespace tilejit::python::numpy {
namespace {

// numpy's descriptor of ml_dtypes.bfloat16 (a strong reference), once some
// array or output needed it and ml_dtypes was importable.
PyArray_Descr* g_bfloat16 = nullptr;

// Finds ml_dtypes' bfloat16 descriptor. `import` allows importing ml_dtypes;
// without it only an already imported ml_dtypes is consulted, which is all
// an input needs (an array of that dtype exists, so ml_dtypes is loaded).
PyArray_Descr* bfloat16_descr(bool import) {
  if (g_bfloat16 != nullptr) return g_bfloat16;
  PyObject* module = nullptr;
  if (import) {
    module = PyImport_ImportModule("ml_dtypes");
  } else {
    nb::str name("ml_dtypes");
    module = PyImport_GetModule(name.ptr());
  }
  if (module == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* scalar_type = PyObject_GetAttrString(module, "bfloat16");
  Py_DECREF(module);
  PyArray_Descr* descr = nullptr;
  if (scalar_type == nullptr || !PyArray_DescrConverter(scalar_type, &descr)) {
    Py_XDECREF(scalar_type);
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(scalar_type);
  g_bfloat16 = descr;
  return g_bfloat16;
}

// The tilejit dtype of an array's descriptor; false when there is none.
bool dtype_of(PyArrayObject* a, DataType* out) {
  PyArray_Descr* d = PyArray_DESCR(a);
  if (PyArray_ISBYTESWAPPED(a)) return false;
  const int64_t bits = int64_t(PyDataType_ELSIZE(d)) * 8;
  switch (d->kind) {
    case 'b': *out = DataType::boolean(); return bits == 8;
    case 'i': *out = DataType(DataType::kInt, uint8_t(bits)); return bits <= 64;
    case 'u': *out = DataType(DataType::kUInt, uint8_t(bits)); return bits <= 64;
    case 'f': *out = DataType(DataType::kFloat, uint8_t(bits)); return bits <= 64;
    default: break;
  }
  if (d->type_num >= NPY_USERDEF) {
    PyArray_Descr* bf16 = bfloat16_descr(/*import=*/false);
    if (bf16 != nullptr && d->type_num == bf16->type_num) {
      *out = DataType::bfloat16();
      return true;
    }
  }
  return false;
}

std::string describe_dtype(PyArrayObject* a) {
  PyObject* text = PyObject_Str(reinterpret_cast<PyObject*>(PyArray_DESCR(a)));
  if (text == nullptr) {
    PyErr_Clear();
    return "an unknown dtype";
  }
  std::string out = PyUnicode_AsUTF8(text);
  Py_DECREF(text);
  if (PyArray_ISBYTESWAPPED(a)) out += " (non-native byte order)";
  return out;
}

// A new reference to the descriptor of `t`.
PyArray_Descr* descr_for(DataType t) {
  int type_num = -1;
  if (t == DataType::float64()) type_num = NPY_FLOAT64;
  else if (t == DataType::float32()) type_num = NPY_FLOAT32;
  else if (t == DataType::float16()) type_num = NPY_FLOAT16;
  else if (t == DataType::int8()) type_num = NPY_INT8;
  else if (t == DataType::int16()) type_num = NPY_INT16;
  else if (t == DataType::int32()) type_num = NPY_INT32;
  else if (t == DataType::int64()) type_num = NPY_INT64;
  else if (t == DataType::uint8()) type_num = NPY_UINT8;
  else if (t == DataType::uint16()) type_num = NPY_UINT16;
  else if (t == DataType::uint32()) type_num = NPY_UINT32;
  else if (t == DataType::uint64()) type_num = NPY_UINT64;
  else if (t == DataType::boolean()) type_num = NPY_BOOL;
  if (type_num >= 0) return PyArray_DescrFromType(type_num);
  if (t == DataType::bfloat16()) {
    PyArray_Descr* bf16 = bfloat16_descr(/*import=*/true);
    if (bf16 == nullptr) {
      throw_error(ErrorKind::kTypeError,
                  "a bfloat16 result cannot be returned as a numpy array without the "
                  "ml_dtypes package (pip install ml_dtypes); pass torch tensors, or install "
                  "ml_dtypes");
    }
    Py_INCREF(bf16);
    return bf16;
  }
  throw_error(ErrorKind::kInternalError, "no numpy dtype for " + t.name());
}

}  // namespace

void init() {
  if (_import_array() < 0) throw nb::python_error();
}

bool is_array(PyObject* o) noexcept { return PyArray_Check(o); }

int scalar_kind(PyObject* o) noexcept {
  if (!PyArray_IsScalar(o, Generic)) return 0;
  if (PyArray_IsScalar(o, Integer)) return 1;
  if (PyArray_IsScalar(o, Floating)) return 2;
  return 0;
}

ImportStatus to_tensor(PyObject* array, bool writable, Tensor* out, std::string* problem,
                       DescriptorCache cache, const Tensor** result) {
  *result = out;
  auto* a = reinterpret_cast<PyArrayObject*>(array);
  DataType dtype;
  if (!dtype_of(a, &dtype)) [[unlikely]] {
    *problem = describe_dtype(a);
    return ImportStatus::kBadDtype;
  }
  const int ndim = PyArray_NDIM(a);
  if (ndim > kMaxRank) [[unlikely]] {
    *problem = "rank " + std::to_string(ndim);
    return ImportStatus::kBadRank;
  }
  if (writable && !PyArray_ISWRITEABLE(a)) [[unlikely]] return ImportStatus::kReadOnly;
  int64_t shape[kMaxRank];
  const npy_intp* dims = PyArray_DIMS(a);
  for (int d = 0; d < ndim; ++d) shape[d] = dims[d];
  std::span<const int64_t> shape_span(shape, size_t(ndim));
  // The common case: C-contiguous, where numpy has already decided what the
  // strides mean and none need converting.
  if (PyArray_IS_C_CONTIGUOUS(a)) [[likely]] {
    void* data = PyArray_DATA(a);
    Tensor* slot = cache.slot;  // Note [Input descriptor cache]
    if (slot == nullptr) {
      *out = Tensor::from_blob(data, shape_span, dtype, Device::cpu());
      return ImportStatus::kOk;
    }
    const bool hit = slot->defined() && slot->data() == data && slot->dtype() == dtype &&
                     slot->ndim() == ndim && std::equal(shape, shape + ndim, slot->shape().begin());
    if (!hit) *slot = Tensor::from_blob(data, shape_span, dtype, Device::cpu());
    *result = cache.hand_out(out);
    return ImportStatus::kOk;
  }
  int64_t strides[kMaxRank];
  const npy_intp* byte_strides = PyArray_STRIDES(a);
  const int64_t itemsize = dtype.bytes();
  for (int d = 0; d < ndim; ++d) {
    if (byte_strides[d] % itemsize != 0) {
      // DLPack strides count elements; a view whose byte strides do not
      // (a field of a structured array) has no such form.
      *problem = "byte strides [";
      for (int e = 0; e < ndim; ++e) {
        *problem += (e ? ", " : "") + std::to_string(byte_strides[e]);
      }
      *problem += "], not multiples of the element size " + std::to_string(itemsize);
      return ImportStatus::kBadStrides;
    }
    strides[d] = byte_strides[d] / itemsize;
  }
  *out = Tensor::from_blob(PyArray_DATA(a), shape_span, dtype, Device::cpu(), nullptr, nullptr,
                           std::span<const int64_t>(strides, size_t(ndim)));
  return ImportStatus::kOk;
}

PyObject* from_tensor(Tensor t) {
  PyArray_Descr* descr = descr_for(t.dtype());
  npy_intp dims[kMaxRank];
  for (int d = 0; d < t.ndim(); ++d) dims[d] = npy_intp(t.shape(d));
  // Steals `descr`. Strides null: C order, which is what the allocators give.
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, descr, t.ndim(), dims, nullptr, t.data(),
                                         NPY_ARRAY_CARRAY, nullptr);
  if (array == nullptr) throw nb::python_error();
  PyObject* owner;
  try {
    owner = make_tensor_owner(std::move(t));
  } catch (...) {
    Py_DECREF(array);
    throw;
  }
  // Steals `owner`; the array's memory now lives as long as the array.
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner) != 0) {
    Py_DECREF(array);
    throw nb::python_error();
  }
  return array;
}

}  // namespace tilejit::python::numpy

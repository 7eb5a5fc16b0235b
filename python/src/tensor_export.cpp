#include "tensor_export.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>
#include <vector>

#include "errors.h"
#include "numpy_interop.h"
#include "tensor_owner.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// What a framework's allocator reported through DLPack's SetError; filled
// without touching Python (the GIL may be released during a call).
struct ErrorSink {
  std::string kind;
  std::string message;
};

void sink_error(void* ctx, const char* kind, const char* message) {
  auto* sink = static_cast<ErrorSink*>(ctx);
  sink->kind = kind ? kind : "";
  sink->message = message ? message : "";
}

std::string shape_text(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

ExchangeAllocator::~ExchangeAllocator() {
  // Tensors made but never taken (the call failed after allocating).
  for (size_t k = 0; k < made_.size(); ++k) {
    dl::ManagedTensorVersioned* m = made_[k];
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

Tensor ExchangeAllocator::empty(std::span<const int64_t> shape, DataType dtype, Device device,
                                runtime::Stream) {
  dl::Tensor proto{};
  proto.device = {int32_t(device.type), device.id};
  proto.ndim = int32_t(shape.size());
  proto.dtype = {dtype.code, dtype.bits, dtype.lanes};
  proto.shape = const_cast<int64_t*>(shape.data());
  dl::ManagedTensorVersioned* m = nullptr;
  ErrorSink sink;
  if (api_->managed_tensor_allocator(&proto, &m, &sink, sink_error) != 0 || m == nullptr) {
    const bool oom = sink.kind.find("Memory") != std::string::npos;
    throw_error(oom ? ErrorKind::kOutOfMemoryError : ErrorKind::kRuntimeError,
                "the framework could not allocate an output of shape " + shape_text(shape) +
                    " and dtype " + dtype.name() + " on " + device.str() + ": " +
                    (sink.kind.empty() ? "" : sink.kind + ": ") + sink.message);
  }
  made_.emplace_back(m);
  void* data = static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
  // No deleter: `m` owns the memory until take() hands it to Python.
  return Tensor::from_blob(data, shape, dtype, device);
}

PyObject* ExchangeAllocator::take(size_t k) {
  if (k >= made_.size()) throw_error(ErrorKind::kInternalError, "take of an output never made");
  dl::ManagedTensorVersioned* m = made_[k];
  made_[k] = nullptr;
  void* out = nullptr;
  // Steals `m`, on failure too (the producer calls its deleter).
  if (api_->managed_tensor_to_py_object_no_sync(m, &out) != 0) throw nb::python_error();
  return static_cast<PyObject*>(out);
}

namespace {

// torch.empty, for a torch without the exchange table. The module and its
// attributes are looked up once; torch is already imported (a torch tensor
// was passed), so nothing here imports it.
class TorchAllocator final : public FrameworkAllocator {
 public:
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream) override {
    nb::gil_scoped_acquire gil;  // the call runs with the GIL released
    nb::module_ torch = nb::module_::import_("torch");
    nb::tuple dims = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(shape.size())));
    for (size_t i = 0; i < shape.size(); ++i) {
      PyTuple_SET_ITEM(dims.ptr(), Py_ssize_t(i), PyLong_FromLongLong(shape[i]));
    }
    const std::string device_name =
        device.type == DeviceType::kCPU ? std::string("cpu") : device.str();
    nb::object t = torch.attr("empty")(dims, nb::arg("dtype") = torch.attr(dtype.name().c_str()),
                                       nb::arg("device") = device_name);
    void* data = reinterpret_cast<void*>(nb::cast<uintptr_t>(t.attr("data_ptr")()));
    made_.push_back(std::move(t));
    return Tensor::from_blob(data, shape, dtype, device);
  }

  PyObject* take(size_t k) override { return made_.at(k).release().ptr(); }

  ~TorchAllocator() override {
    if (made_.empty()) return;
    nb::gil_scoped_acquire gil;
    made_.clear();
  }

 private:
  std::vector<nb::object> made_;
};

// An object with __dlpack__ / __dlpack_device__ over `t`, for devices numpy
// cannot hold.
PyObject* array_api_object(Tensor t) {
  size_t shape[kMaxRank];
  int64_t strides[kMaxRank];
  for (int d = 0; d < t.ndim(); ++d) {
    shape[d] = size_t(t.shape(d));
    strides[d] = t.stride(d);
  }
  const DataType dt = t.dtype();
  nb::object owner = nb::steal(make_tensor_owner(t));
  nb::ndarray<nb::array_api> array(t.data(), size_t(t.ndim()), shape, owner, strides,
                                   nb::dlpack::dtype{dt.code, dt.bits, dt.lanes},
                                   int32_t(t.device().type), t.device().id);
  return nb::cast(array).release().ptr();
}

// The `from_dlpack` of the package that defines `type` (cupy.from_dlpack for
// cupy.ndarray), looked up in sys.modules without importing anything; null
// when there is none. Cached per type, like the exchange tables: types are
// few, and a strong reference keeps each one's address from being reused.
// Guarded by the GIL.
PyObject* package_from_dlpack(PyTypeObject* type) {
  struct Entry {
    PyTypeObject* type;
    PyObject* from_dlpack;  // strong, or null
  };
  static auto* cache = new std::vector<Entry>();  // never destroyed: types outlive it
  for (const Entry& e : *cache) {
    if (e.type == type) return e.from_dlpack;
  }
  PyObject* fn = nullptr;
  PyObject* module_name = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  const char* text = module_name && PyUnicode_Check(module_name) ? PyUnicode_AsUTF8(module_name)
                                                                   : nullptr;
  if (text != nullptr) {
    const std::string package(text, std::strcspn(text, "."));
    PyObject* name = PyUnicode_FromStringAndSize(package.data(), Py_ssize_t(package.size()));
    PyObject* module = name ? PyImport_GetModule(name) : nullptr;  // new reference, or null
    if (module != nullptr) {
      fn = PyObject_GetAttrString(module, "from_dlpack");
      if (fn != nullptr && !PyCallable_Check(fn)) Py_CLEAR(fn);
      Py_DECREF(module);
    }
    Py_XDECREF(name);
  }
  Py_XDECREF(module_name);
  PyErr_Clear();
  Py_INCREF(type);
  cache->push_back({type, fn});
  return fn;
}

// Note [Output frameworks], last case: the output in the inputs' framework
// when the package of the first tensor's type has a from_dlpack() (cupy),
// else the object with __dlpack__ itself. A from_dlpack() that refuses
// leaves the caller that object rather than losing the output.
PyObject* foreign_output(Tensor t, const Origin& origin) {
  PyObject* array = array_api_object(std::move(t));
  PyObject* from_dlpack =
      origin.framework == Framework::kDLPack && origin.type != nullptr
          ? package_from_dlpack(origin.type)
          : nullptr;
  if (from_dlpack == nullptr) return array;
  PyObject* adopted = PyObject_CallOneArg(from_dlpack, array);
  if (adopted == nullptr) {
    PyErr_Clear();
    return array;
  }
  Py_DECREF(array);
  return adopted;
}

}  // namespace

OutputMaker::OutputMaker(const Origin& origin) : origin_(origin) {
  if (origin.framework == Framework::kExchange) {
    allocator_ = &exchange_.emplace(origin.api);
  } else if (origin.framework == Framework::kTorch) {
    torch_ = std::make_unique<TorchAllocator>();
    allocator_ = torch_.get();
  }
}

OutputMaker::~OutputMaker() = default;

PyObject* OutputMaker::wrap_one(Tensor& t, PyObject* supplied, size_t* allocated) {
  if (supplied != nullptr) {
    Py_INCREF(supplied);
    return supplied;
  }
  if (allocator_) return allocator_->take((*allocated)++);
  if (t.device().type == DeviceType::kCPU) return numpy::from_tensor(std::move(t));
  return foreign_output(std::move(t), origin_);
}

PyObject* OutputMaker::wrap(Outputs& outputs, PyObject* const* supplied) {
  Tensor* tensors = outputs.data();
  size_t allocated = 0;
  if (outputs.empty()) Py_RETURN_NONE;
  if (outputs.size() == 1) return wrap_one(tensors[0], supplied ? supplied[0] : nullptr, &allocated);
  nb::object result = nb::steal(PyTuple_New(Py_ssize_t(outputs.size())));
  if (!result.is_valid()) throw nb::python_error();
  for (size_t o = 0; o < outputs.size(); ++o) {
    PyObject* item = wrap_one(tensors[o], supplied ? supplied[o] : nullptr, &allocated);
    PyTuple_SET_ITEM(result.ptr(), Py_ssize_t(o), item);
  }
  return result.release().ptr();
}

void* framework_stream(const Origin& origin, Device device) {
  if (device.type == DeviceType::kCPU) return nullptr;
  if (origin.framework == Framework::kExchange && origin.api->current_work_stream != nullptr) {
    void* stream = nullptr;
    if (origin.api->current_work_stream(int32_t(device.type), device.id, &stream) != 0) {
      throw nb::python_error();
    }
    return stream;
  }
  if (origin.framework == Framework::kTorch && device.type == DeviceType::kCUDA) {
    nb::module_ torch = nb::module_::import_("torch");
    nb::object stream = torch.attr("cuda").attr("current_stream")(device.id);
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(stream.attr("cuda_stream")));
  }
  return nullptr;
}

void* parse_stream(PyObject* stream) {
  nb::handle s(stream);
  if (PyLong_Check(stream)) {
    const unsigned long long handle = PyLong_AsUnsignedLongLong(stream);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw_error(ErrorKind::kValueError,
                  "stream= " + std::string(nb::str(s).c_str()) + " is not a stream handle");
    }
    return reinterpret_cast<void*>(uintptr_t(handle));
  }
  if (nb::hasattr(s, "__cuda_stream__")) {
    // The CUDA stream protocol: (version, handle as an int).
    nb::tuple info = nb::cast<nb::tuple>(s.attr("__cuda_stream__")());
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(info[1]));
  }
  if (nb::hasattr(s, "cuda_stream")) {
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(s.attr("cuda_stream")));
  }
  throw_error(ErrorKind::kTypeError,
              std::string("stream= expects None, an int handle, or an object with "
                          "__cuda_stream__ or cuda_stream; got an object of type ") +
                  Py_TYPE(stream)->tp_name);
}

}  // namespace tilejit::python

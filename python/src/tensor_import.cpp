#include "tensor_import.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "errors.h"
#include "tilejit/jit/call_messages.h"
#include "numpy_interop.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// Per-type cache of exchange tables (null: the type has none). Types are
// few (torch.Tensor, nn.Parameter, ...); a strong reference to each type
// keeps its address from being reused by another. Guarded by the GIL.
struct ApiCacheEntry {
  PyTypeObject* type;
  const dl::ExchangeApi* api;
};
std::vector<ApiCacheEntry>& api_cache() {
  static auto* cache = new std::vector<ApiCacheEntry>();  // never destroyed: types outlive it
  return *cache;
}

const dl::ExchangeApi* lookup_exchange_api(PyTypeObject* type) {
  // The DLPack 1.3 name, then the name tvm-ffi used before the rename.
  for (const char* attr : {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"}) {
    PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), attr);
    if (capsule == nullptr) {
      PyErr_Clear();
      continue;
    }
    void* ptr = nullptr;
    if (PyCapsule_IsValid(capsule, dl::kExchangeApiCapsuleName)) {
      ptr = PyCapsule_GetPointer(capsule, dl::kExchangeApiCapsuleName);
    }
    Py_DECREF(capsule);  // the table itself is static in its producer
    // Walk to a version this binding understands; newer major versions may
    // chain older tables behind them.
    auto* header = static_cast<dl::ExchangeApiHeader*>(ptr);
    while (header != nullptr && header->version.major > dl::kExchangeApiMajor) {
      header = header->prev_api;
    }
    if (header != nullptr && header->version.major == dl::kExchangeApiMajor) {
      return reinterpret_cast<const dl::ExchangeApi*>(header);
    }
  }
  return nullptr;
}

std::string dl_dtype_name(dl::DataType t) {
  const char* base = nullptr;
  switch (t.code) {
    case 0: base = "int"; break;
    case 1: base = "uint"; break;
    case 2: base = "float"; break;
    case 4: base = "bfloat"; break;
    case 5: base = "complex"; break;
    case 6: base = "bool"; break;
    case 7: base = "bcomplex"; break;
    default: base = "dlpack_type_code"; break;
  }
  std::string out = base + std::to_string(t.bits);
  if (t.lanes != 1) out += "x" + std::to_string(t.lanes);
  return out;
}

// "str", "numpy.ndarray": the type as Python names it in its own errors.
std::string type_name_of(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

[[noreturn, gnu::cold]] void bad_dtype(const ArgContext& ctx, const std::string& got) {
  const std::string expected = ctx.expected_dtype();
  throw_error(ErrorKind::kTypeError, ctx.prefix() + "expected " +
                                         (expected.empty() ? "a supported dtype" : expected) +
                                         ", got " + got);
}

[[noreturn, gnu::cold]] void bad_rank(const ArgContext& ctx, int64_t ndim) {
  throw_error(ErrorKind::kValueError, ctx.prefix() + "has rank " + std::to_string(ndim) +
                                          "; tilejit supports at most " +
                                          std::to_string(kMaxRank) + " dimensions");
}

[[noreturn, gnu::cold]] void unsupported_object(const ArgContext& ctx, PyObject* obj) {
  // The hint about tensors is only for a place that takes a tensor.
  const bool scalar = ctx.is_input() && size_t(ctx.index) < ctx.kernel->plan().inputs.size() &&
                      ctx.kernel->plan().inputs[ctx.index].scalar;
  throw_error(ErrorKind::kTypeError,
              ctx.prefix() + "expected " + ctx.expected_what() + ", got an object of type " +
                  type_name_of(obj) +
                  (scalar ? ""
                          : " (tensors are numpy arrays, torch tensors or objects with "
                            "__dlpack__)"));
}

[[noreturn, gnu::cold]] void numpy_failure(const ArgContext& ctx, numpy::ImportStatus status,
                                           const std::string& problem) {
  switch (status) {
    case numpy::ImportStatus::kBadDtype: bad_dtype(ctx, problem);
    case numpy::ImportStatus::kBadRank:
      throw_error(ErrorKind::kValueError, ctx.prefix() + "has " + problem +  // "rank 9"
                                              "; tilejit supports at most " +
                                              std::to_string(kMaxRank) + " dimensions");
    case numpy::ImportStatus::kBadStrides:
      throw_error(ErrorKind::kValueError, ctx.prefix() + "is not contiguous (" + problem + ")");
    case numpy::ImportStatus::kReadOnly:
      throw_error(ErrorKind::kValueError,
                  ctx.prefix() + "the array is read-only; " +
                      (ctx.role == ArgContext::Role::kWorkspace ? "a workspace" : "outputs") +
                      " must be writable");
    case numpy::ImportStatus::kOk: break;
  }
  throw_error(ErrorKind::kInternalError, "numpy_failure without a failure");
}

// A producer's own exception (a BufferError from __dlpack__, say), raised
// again as the same type with the argument named in front.
[[noreturn, gnu::cold]] void producer_failure(const ArgContext& ctx) {
  nb::python_error original;  // takes the pending Python error
  const std::string message = ctx.prefix() + "the tensor could not be read through DLPack: " +
                              nb::str(original.value()).c_str();
  PyErr_SetString(original.type().ptr(), message.c_str());
  throw nb::python_error();
}

// nanobind's importer swallows a producer's exception; ask the producer
// again so that the caller sees why (a BufferError from __dlpack__, say).
[[noreturn, gnu::cold]] void explain_refusal(const ArgContext& ctx, PyObject* obj) {
  if (PyErr_Occurred()) producer_failure(ctx);
  if (PyObject_HasAttrString(obj, "__dlpack__")) {
    PyObject* capsule = PyObject_CallMethod(obj, "__dlpack__", nullptr);
    if (capsule == nullptr) producer_failure(ctx);
    Py_DECREF(capsule);  // an unused capsule frees its tensor
  }
  unsupported_object(ctx, obj);
}

void delete_managed_versioned(void* context) noexcept {
  auto* m = static_cast<dl::ManagedTensorVersioned*>(context);
  if (m->deleter) m->deleter(m);
}

bool is_supported_code(uint8_t code) {
  return code == 0 || code == 1 || code == 2 || code == 4 || code == 6;
}

// Contiguous as Tensor::is_contiguous() judges it (the library's rule).
bool contiguous_view(const dl::Tensor& t) {
  if (t.strides == nullptr) return true;
  return tilejit::is_contiguous(std::span<const int64_t>(t.shape, size_t(t.ndim)),
                       std::span<const int64_t>(t.strides, size_t(t.ndim)));
}

// Note [Input descriptor cache] (numpy_interop.h), for contiguous views read
// through an exchange table: the slot's descriptor is reused when it
// describes the same memory the same way. Returns the descriptor the call
// uses: the slot itself when `cache.share`, else `*tensor`.
const Tensor* cached_view(const dl::Tensor& t, const ArgContext& ctx, numpy::DescriptorCache cache,
                          Tensor* tensor) {
  Tensor* slot = cache.slot;
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  const bool hit = slot->defined() && slot->data() == data &&
                   slot->dtype() == DataType(DataType::Code(t.dtype.code), t.dtype.bits,
                                             t.dtype.lanes) &&
                   slot->device() == Device{DeviceType(t.device.device_type), t.device.device_id} &&
                   slot->ndim() == t.ndim && std::equal(t.shape, t.shape + t.ndim, slot->shape().begin());
  if (!hit) {
    dl::Tensor canonical = t;
    canonical.strides = nullptr;  // contiguous: the row-major strides
    *slot = tensor_from_dlpack(canonical, ctx, nullptr, nullptr);
  }
  return cache.hand_out(tensor);
}

void note_origin(Origin* origin, Framework framework, PyTypeObject* type,
                 const dl::ExchangeApi* api = nullptr) {
  if (origin->framework != Framework::kNone) return;
  origin->framework = framework;
  origin->type = type;
  origin->api = api;
}

}  // namespace

// The library's own wording (tilejit/jit/call_messages.h).
std::string ArgContext::prefix() const {
  if (role == Role::kWorkspace) return call_messages::workspace_prefix(*kernel);
  if (role == Role::kOut) return call_messages::out_prefix(*kernel, size_t(index));
  return call_messages::input_prefix(*kernel, size_t(index));
}

std::string ArgContext::expected_dtype() const {
  const CallPlan& plan = kernel->plan();
  if (role == Role::kWorkspace) return "";
  if (role == Role::kOut) {
    return size_t(index) < plan.outputs.size() ? plan.outputs[index].dtype.name() : "";
  }
  return size_t(index) < plan.inputs.size() ? plan.inputs[index].dtype.name() : "";
}

std::string ArgContext::expected_what() const {
  if (is_input()) return call_messages::expected_input(*kernel, size_t(index));
  const std::string dtype = expected_dtype();
  return dtype.empty() ? "a tensor" : call_messages::with_article(dtype) + " tensor";
}

const dl::ExchangeApi* exchange_api_of(PyTypeObject* type) {
  for (const ApiCacheEntry& e : api_cache()) {
    if (e.type == type) return e.api;
  }
  const dl::ExchangeApi* api = lookup_exchange_api(type);
  Py_INCREF(type);
  api_cache().push_back({type, api});
  return api;
}

bool is_torch_type(PyTypeObject* type) {
  // torch.Tensor or a subclass (nn.Parameter, a user's subclass defined in
  // any module): some class on the MRO lives in the module "torch".
  PyObject* mro = type->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* module = PyObject_GetAttrString(PyTuple_GET_ITEM(mro, i), "__module__");
    if (module == nullptr) {
      PyErr_Clear();
      continue;
    }
    const char* text = PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : nullptr;
    const bool torch = text != nullptr && std::strcmp(text, "torch") == 0;
    Py_DECREF(module);
    if (torch) return true;
  }
  return false;
}

Tensor tensor_from_dlpack(const dl::Tensor& t, const ArgContext& ctx, Tensor::Deleter deleter,
                          void* context) {
  // On failure the deleter still runs: the caller handed ownership over.
  auto fail = [&](auto&& raise) {
    if (deleter) deleter(context);
    raise();
  };
  if (t.ndim < 0 || t.ndim > kMaxRank) [[unlikely]] {
    fail([&] { bad_rank(ctx, t.ndim); });
  }
  if (!is_supported_code(t.dtype.code)) [[unlikely]] {
    fail([&] { bad_dtype(ctx, dl_dtype_name(t.dtype)); });
  }
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  const DataType dtype(DataType::Code(t.dtype.code), t.dtype.bits, t.dtype.lanes);
  const Device device{DeviceType(t.device.device_type), t.device.device_id};
  std::span<const int64_t> shape(t.shape, size_t(t.ndim));
  std::span<const int64_t> strides;
  if (t.strides != nullptr) strides = std::span<const int64_t>(t.strides, size_t(t.ndim));
  try {
    return Tensor::from_blob(data, shape, dtype, device, deleter, context, strides);
  } catch (...) {
    if (deleter) deleter(context);
    throw;
  }
}

void convert_arg(PyObject* obj, const ArgContext& ctx, bool writable, Tensor* tensor, Arg* arg,
                 Origin* origin, ArgStorage* storage, numpy::DescriptorCache cache) {
  PyTypeObject* type = Py_TYPE(obj);
  if (numpy::is_array(obj)) {
    std::string problem;
    const Tensor* result = nullptr;
    const numpy::ImportStatus status =
        numpy::to_tensor(obj, writable, tensor, &problem, cache, &result);
    if (status != numpy::ImportStatus::kOk) [[unlikely]] numpy_failure(ctx, status, problem);
    *arg = Arg(*result);
    note_origin(origin, Framework::kNumpy, type);
    return;
  }
  if (ctx.is_input()) {
    if (PyLong_Check(obj) && !PyBool_Check(obj)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow != 0) [[unlikely]] {
        throw_error(ErrorKind::kValueError, ctx.prefix() + "integer " +
                                                nb::cast<std::string>(nb::str(obj)) +
                                                " does not fit in int64");
      }
      *arg = Arg(v);
      return;
    }
    if (PyFloat_Check(obj)) {
      *arg = Arg(PyFloat_AS_DOUBLE(obj));
      return;
    }
    if (obj == Py_None) {
      *arg = Arg();
      return;
    }
    if (const int kind = numpy::scalar_kind(obj); kind != 0) {
      // np.int64(3) or np.float32(0.5): numbers, not 0-d tensors.
      nb::object as_python = nb::steal(kind == 1 ? PyNumber_Index(obj) : PyNumber_Float(obj));
      if (!as_python.is_valid()) throw nb::python_error();
      convert_arg(as_python.ptr(), ctx, writable, tensor, arg, origin, storage);
      return;
    }
  }
  if (const dl::ExchangeApi* api = exchange_api_of(type)) {
    if (api->dltensor_from_py_object_no_sync != nullptr) {
      // A borrowed view, valid while `obj` lives (the caller's arguments
      // outlive the call).
      dl::Tensor view;
      if (api->dltensor_from_py_object_no_sync(obj, &view) != 0) [[unlikely]] {
        producer_failure(ctx);
      }
      if (cache.slot != nullptr && view.ndim >= 0 && view.ndim <= kMaxRank &&
          contiguous_view(view)) {
        *arg = Arg(*cached_view(view, ctx, cache, tensor));
        note_origin(origin, Framework::kExchange, type, api);
        return;
      }
      *tensor = tensor_from_dlpack(view, ctx, nullptr, nullptr);
    } else {
      dl::ManagedTensorVersioned* managed = nullptr;
      if (api->managed_tensor_from_py_object_no_sync(obj, &managed) != 0) [[unlikely]] {
        producer_failure(ctx);
      }
      *tensor = tensor_from_dlpack(managed->dl_tensor, ctx, delete_managed_versioned, managed);
    }
    *arg = Arg(*tensor);
    note_origin(origin, Framework::kExchange, type, api);
    return;
  }
  // Everything else: nanobind's importer (DLPack capsules of any version,
  // legacy to_dlpack(), the buffer protocol). No dtype or order constraint
  // is given, so it never converts or copies.
  nb::ndarray<nb::ro> view;
  if (!nb::try_cast(nb::handle(obj), view, /*convert=*/false)) [[unlikely]] {
    explain_refusal(ctx, obj);
  }
  dl::Tensor t{};
  t.data = const_cast<void*>(view.data());
  t.device = {view.device_type(), view.device_id()};
  t.ndim = int32_t(view.ndim());
  t.dtype = {view.dtype().code, view.dtype().bits, view.dtype().lanes};
  t.shape = const_cast<int64_t*>(view.shape_ptr());
  t.strides = const_cast<int64_t*>(view.stride_ptr());
  t.byte_offset = 0;  // nanobind's data() already includes it
  *tensor = tensor_from_dlpack(t, ctx, nullptr, nullptr);
  storage->keep_alive.push_back(std::move(view));
  *arg = Arg(*tensor);
  if (origin->framework == Framework::kNone) {
    note_origin(origin, is_torch_type(type) ? Framework::kTorch : Framework::kDLPack, type);
  }
}

void convert_args(PyObject* const* args, size_t n, const Kernel& kernel, Origin* origin,
                  ArgStorage* storage, Tensor* caches, bool share) {
  ArgContext ctx;
  ctx.kernel = &kernel;
  for (size_t i = 0; i < n; ++i) {
    ctx.index = int(i);
    Tensor& tensor = storage->tensors.emplace_back();
    Arg& arg = storage->args.emplace_back();
    convert_arg(args[i], ctx, /*writable=*/false, &tensor, &arg, origin, storage,
                numpy::DescriptorCache{caches != nullptr ? &caches[i] : nullptr, share});
  }
}

}  // namespace tilejit::python

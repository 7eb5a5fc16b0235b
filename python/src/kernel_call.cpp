// The call path of tilejit._C.Kernel (Note [Call path] in kernel_object.h):
// arguments and keywords converted in C++, Kernel::call with the GIL
// released, outputs wrapped in the inputs' framework.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <vector>

#include "errors.h"
#include "kernel_object.h"
#include "tensor_export.h"
#include "tensor_import.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// Note [GIL during a call]
// Kernel::call runs without the GIL when another Python thread exists, so
// that thread runs while this one's kernel does. Releasing and retaking the
// GIL costs about 50 ns, an eighth of a whole small call, and buys nothing
// when this is the only Python thread: the kernel's own workers are not
// Python threads. So the GIL is released only when the interpreter has
// another thread state. A thread that starts Python code during the call
// (a C thread entering through PyGILState_Ensure) waits for the call, as it
// would for any extension that keeps the GIL. Code that runs inside the
// call and needs Python (the torch fallback allocator) takes the GIL with
// PyGILState_Ensure, which works whether or not it was released.
bool other_python_threads() noexcept {
  PyThreadState* self = PyThreadState_Get();
  PyThreadState* head = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(self));
  return head != self || PyThreadState_Next(head) != nullptr;
}

// Releases the GIL for a scope when asked to; restores it on every path,
// exceptions included, before any Python object is touched again.
class GilRelease {
 public:
  explicit GilRelease(bool release) noexcept : state_(release ? PyEval_SaveThread() : nullptr) {}
  ~GilRelease() {
    if (state_ != nullptr) PyEval_RestoreThread(state_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

// Counts a call in progress (PyKernel::active_calls) for its scope.
class ActiveCall {
 public:
  explicit ActiveCall(int* count) noexcept : count_(count) { ++*count_; }
  ~ActiveCall() { --*count_; }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  int* count_;
};

// The library's own arity message: a call with `nargs` empty arguments
// fails in Kernel::call's first check.
[[noreturn, gnu::cold]] void arity_error(const Kernel& kernel, size_t nargs) {
  std::vector<Arg> empty(nargs);
  kernel.call(empty);
  throw_error(ErrorKind::kInternalError, kernel.name() + ": arity check did not fail");
}

// The keyword arguments of a call, converted.
struct CallKeywords {
  SmallArray<Tensor, kMaxParams> out_tensors;  // undefined where out= had None
  // Borrowed: the caller's out= objects (null where None), one per
  // out_tensors entry; only those entries are set.
  PyObject* supplied[kMaxParams];
  bool has_out = false;
  Tensor workspace;
};

[[noreturn, gnu::cold]] void bad_keyword(const Kernel& kernel, PyObject* key) {
  nb::str text = nb::str(nb::handle(key));
  throw_error(ErrorKind::kTypeError,
              kernel.name() + ": unexpected keyword argument '" + text.c_str() +
                  "'; a call takes the inputs positionally, and stream=, out= and workspace=");
}

void parse_out(const PyKernel& k, PyObject* value, CallKeywords* kw, Origin* origin,
               ArgStorage* storage) {
  if (value == Py_None) return;
  ArgContext ctx;
  ctx.kernel = &k.kernel;
  ctx.role = ArgContext::Role::kOut;
  Arg unused;
  // A bare tensor stands for a one-element list.
  const bool sequence = PyList_Check(value) || PyTuple_Check(value);
  const size_t n = sequence ? size_t(PySequence_Fast_GET_SIZE(value)) : 1;
  if (n > size_t(kMaxParams)) {
    throw_error(ErrorKind::kValueError, k.kernel.name() + ": out= has " + std::to_string(n) +
                                            " tensors; the kernel has " +
                                            std::to_string(k.num_outputs) + " outputs");
  }
  PyObject* const* items = sequence ? PySequence_Fast_ITEMS(value) : &value;
  for (size_t o = 0; o < n; ++o) {
    Tensor& t = kw->out_tensors.emplace_back();
    kw->supplied[o] = nullptr;
    if (items[o] == Py_None) continue;  // allocated as usual
    ctx.index = int(o);
    convert_arg(items[o], ctx, /*writable=*/true, &t, &unused, origin, storage);
    kw->supplied[o] = items[o];
  }
  kw->has_out = true;
}

// Keyword arguments as vectorcall passes them: names in `kwnames`, values
// in `values`.
void parse_keywords(const PyKernel& k, PyObject* kwnames, PyObject* const* values,
                    CallOptions* options, CallKeywords* kw, Origin* origin, ArgStorage* storage) {
  const Py_ssize_t count = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = values[i];
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (name == nullptr) bad_keyword(k.kernel, key);
    if (std::strcmp(name, "stream") == 0) {
      if (value != Py_None) {
        options->has_stream = true;
        options->stream = parse_stream(value);
      }
    } else if (std::strcmp(name, "out") == 0) {
      parse_out(k, value, kw, origin, storage);
    } else if (std::strcmp(name, "workspace") == 0) {
      if (value == Py_None) continue;
      ArgContext ctx;
      ctx.kernel = &k.kernel;
      ctx.role = ArgContext::Role::kWorkspace;
      Arg unused;
      convert_arg(value, ctx, /*writable=*/true, &kw->workspace, &unused, origin, storage);
      options->workspace = kw->workspace;
    } else {
      bad_keyword(k.kernel, key);
    }
  }
  if (kw->has_out) {
    options->out = std::span<const Tensor>(kw->out_tensors.data(), kw->out_tensors.size());
  }
}

// The device of the first tensor among the inputs (for the default stream).
Device first_device(const ArgStorage& storage, size_t nargs, const Kernel& kernel) {
  for (size_t i = 0; i < nargs; ++i) {
    if (storage.args[i].kind() == Arg::Kind::kTensor) return storage.args[i].tensor().device();
  }
  // Only out= or workspace= carried a tensor: the kernel's own device type.
  return kernel.target() == "cpu" ? Device::cpu() : Device::cuda(0);
}

}  // namespace

PyObject* PyKernel::call(PyObject* const* args, size_t nargs, PyObject* kwnames) const {
  if (nargs != num_inputs) [[unlikely]] arity_error(kernel, nargs);
  // Note [GIL during a call]; Note [Input descriptor cache] in numpy_interop.h.
  // Keeping the GIL, this thread alone runs Python until the call returns,
  // so the cache slots can be handed to the call itself. The one exception
  // is a call nested in another on this thread (Python code that a
  // producer's __dlpack__ or an allocator runs): it leaves the slots alone,
  // since the outer call may be holding them.
  const bool release_gil = other_python_threads();
  const bool nested = !release_gil && active_calls > 0;
  ActiveCall active(&active_calls);
  ArgStorage storage;
  Origin origin;
  convert_args(args, nargs, kernel, &origin, &storage, nested ? nullptr : input_cache.data(),
               /*share=*/!release_gil);
  CallOptions options;
  CallKeywords keywords;
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    parse_keywords(*this, kwnames, args + nargs, &options, &keywords, &origin, &storage);
  }
  OutputMaker maker(origin);
  options.allocator = maker.allocator();
  if (!options.has_stream && origin.framework != Framework::kNumpy &&
      origin.framework != Framework::kNone) {
    if (void* stream = framework_stream(origin, first_device(storage, nargs, kernel))) {
      options.has_stream = true;
      options.stream = stream;
    }
  }
  // Built in place (no move of the list): the GIL is back before `outputs`
  // is touched.
  Outputs outputs = [&] {
    GilRelease nogil(release_gil);
    return kernel.call(std::span<const Arg>(storage.args.data(), nargs), options);
  }();
  return maker.wrap(outputs, keywords.has_out ? keywords.supplied : nullptr);
}

size_t PyKernel::workspace_bytes(PyObject* const* args, size_t nargs) const {
  if (nargs != num_inputs) arity_error(kernel, nargs);
  ArgStorage storage;
  Origin origin;
  convert_args(args, nargs, kernel, &origin, &storage);
  return kernel.workspace_bytes(std::span<const Arg>(storage.args.data(), nargs));
}

nb::list PyKernel::workspace_layout(PyObject* const* args, size_t nargs) const {
  if (nargs != num_inputs) arity_error(kernel, nargs);
  ArgStorage storage;
  Origin origin;
  convert_args(args, nargs, kernel, &origin, &storage);
  nb::list result;
  const std::span<const Arg> inputs(storage.args.data(), nargs);
  for (const WorkspaceSlice& s : kernel.workspace_layout(inputs)) {
    nb::dict d;
    d["name"] = s.name;
    d["offset"] = s.offset;
    d["bytes"] = s.bytes;
    d["shape"] = nb::tuple(nb::cast(s.shape));
    d["dtype"] = s.dtype.name();
    d["init"] = workspace_init_name(s.init);
    result.append(d);
  }
  return result;
}

}  // namespace tilejit::python

// The call path of tilejit._C.Kernel (Note [Call path] in kernel_object.h):
// arguments and keywords converted in C++, Kernel::call with the GIL
// released, outputs wrapped in the inputs' framework.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <vector>

#include "errors.h"
#include "tilejit/jit/call_messages.h"
#include "input_keywords.h"
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

// The keyword arguments of a call, converted.
struct CallKeywords {
  SmallArray<Tensor, kMaxParams> out_tensors;  // undefined where out= had None
  // Borrowed: the caller's out= objects (null where None), one per
  // out_tensors entry; only those entries are set.
  PyObject* supplied[kMaxParams];
  bool has_out = false;
  Tensor workspace;
};

// The options of a call, and of the workspace queries (Note [Inputs by
// keyword]).
constexpr const char* kCallOptionNames[] = {"stream", "out", "workspace"};
constexpr const char* kQueryOptionNames[] = {"shapes"};
constexpr OptionNames kCallOptions{kCallOptionNames, "stream=, out=, workspace="};
constexpr OptionNames kQueryOptions{kQueryOptionNames, "shapes="};

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
    throw_error(ErrorKind::kValueError, call_messages::out_count(k.kernel, n));
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

// The option keywords of a call: names kw_names[0, count) (str objects),
// values kw_values[0, count). A keyword that is no option is an error here:
// every input was given positionally (PyKernel::call).
void parse_keywords(const PyKernel& k, PyObject* const* kw_names, PyObject* const* kw_values,
                    size_t count, CallOptions* options, CallKeywords* kw, Origin* origin,
                    ArgStorage* storage) {
  for (size_t i = 0; i < count; ++i) {
    PyObject* key = kw_names[i];
    PyObject* value = kw_values[i];
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (name == nullptr) extra_keyword(k, key, kCallOptions);
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
      extra_keyword(k, key, kCallOptions);
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
  // Only out= or workspace= carried a tensor: the backend's default device.
  return kernel.default_device();
}

}  // namespace

PyObject* PyKernel::call(PyObject* const* args, size_t nargs, PyObject* kwnames) const {
  size_t num_kw = 0;
  PyObject* const* kw_names = nullptr;
  if (kwnames != nullptr) {
    num_kw = size_t(PyTuple_GET_SIZE(kwnames));
    kw_names = PySequence_Fast_ITEMS(kwnames);
  }
  // Every input positional: the fast path, whatever the keywords (one that
  // is no option is then an error, found by parse_keywords).
  if (nargs != num_inputs) [[unlikely]] return call_by_name(args, nargs, kw_names, num_kw);
  return call_ordered(args, kw_names, args + nargs, num_kw);
}

PyObject* PyKernel::call_by_name(PyObject* const* args, size_t nargs, PyObject* const* kw_names,
                                 size_t num_kw) const {
  const SplitKeywords kw = split_keywords(*this, kw_names, args + nargs, num_kw, kCallOptions);
  PyObject* ordered[kMaxParams];
  order_inputs(*this, args, nargs, kw, kCallOptions, ordered);
  return call_ordered(ordered, kw.option_keys, kw.option_values, kw.num_options);
}

PyObject* PyKernel::call_ordered(PyObject* const* args, PyObject* const* kw_names,
                                 PyObject* const* kw_values, size_t num_kw) const {
  const size_t nargs = num_inputs;
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
  if (num_kw != 0) {
    parse_keywords(*this, kw_names, kw_values, num_kw, &options, &keywords, &origin, &storage);
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

namespace {

// The inputs of a query, converted, or the shapes= that stand for them.
struct QueryInputs {
  ArgStorage storage;
  Origin origin;
  bool by_shapes = false;
  std::vector<ShapeArg> shapes;
};

void query_inputs(const PyKernel& k, PyObject* const* args, size_t nargs, PyObject* kwnames,
                  OptionNames options, QueryInputs* q) {
  const size_t num_kw = kwnames != nullptr ? size_t(PyTuple_GET_SIZE(kwnames)) : 0;
  PyObject* const* kw_names = num_kw != 0 ? PySequence_Fast_ITEMS(kwnames) : nullptr;
  const SplitKeywords kw = split_keywords(k, kw_names, args + nargs, num_kw, options);
  if (PyObject* shapes = kw.option("shapes"); shapes != nullptr && shapes != Py_None) {
    if (nargs != 0 || !kw.names.empty()) {
      throw_error(ErrorKind::kTypeError,
                  k.kernel.name() + ": give the inputs or shapes=, not both");
    }
    q->shapes = parse_shapes(k, shapes);
    q->by_shapes = true;
    return;
  }
  PyObject* ordered[kMaxParams];
  PyObject* const* inputs = args;
  if (nargs != k.num_inputs || !kw.names.empty()) {
    order_inputs(k, args, nargs, kw, options, ordered);
    inputs = ordered;
  }
  convert_args(inputs, k.num_inputs, k.kernel, &q->origin, &q->storage);
}

constexpr size_t kArenaAlign = 256;

// An arena of `bytes` in the framework of `origin` (Note [Output
// frameworks]). tilejit's own allocators align to 256 bytes, as do torch's
// and cupy's CUDA allocators; torch's CPU allocator aligns to 64 only, so an
// arena that comes unaligned is made again as a 256-aligned view into
// bytes + 255 of the framework's memory.
PyObject* framework_arena(const Origin& origin, Device device, int64_t bytes) {
  for (const int64_t extra : {int64_t(0), int64_t(kArenaAlign - 1)}) {
    OutputMaker maker(origin);  // frees what it made and did not hand out
    const int64_t size = bytes + extra;
    Tensor t = maker.allocator()->empty(std::span<const int64_t>(&size, 1), DataType::uint8(),
                                        device, nullptr);
    const uintptr_t address = reinterpret_cast<uintptr_t>(t.data());
    const int64_t offset = int64_t((kArenaAlign - address % kArenaAlign) % kArenaAlign);
    if (offset != 0 && extra == 0) continue;
    Outputs outputs;
    outputs.push_back(std::move(t));
    nb::object whole = nb::steal(maker.wrap(outputs, nullptr));
    // The larger arena may come aligned: it is still cut to `bytes`.
    if (offset == 0 && extra == 0) return whole.release().ptr();
    nb::object start = nb::steal(PyLong_FromLongLong(offset));
    nb::object stop = nb::steal(PyLong_FromLongLong(offset + bytes));
    nb::object range = nb::steal(PySlice_New(start.ptr(), stop.ptr(), nullptr));
    PyObject* view = PyObject_GetItem(whole.ptr(), range.ptr());
    if (view == nullptr) throw nb::python_error();
    return view;
  }
  throw_error(ErrorKind::kInternalError, "no 256-byte aligned view in an arena of 255 extra bytes");
}

}  // namespace

size_t PyKernel::workspace_bytes(PyObject* const* args, size_t nargs, PyObject* kwnames) const {
  QueryInputs q;
  query_inputs(*this, args, nargs, kwnames, kQueryOptions, &q);
  if (q.by_shapes) return kernel.workspace_bytes_for_shapes(q.shapes);
  return kernel.workspace_bytes(std::span<const Arg>(q.storage.args.data(), num_inputs));
}

nb::list PyKernel::workspace_layout(PyObject* const* args, size_t nargs, PyObject* kwnames) const {
  QueryInputs q;
  query_inputs(*this, args, nargs, kwnames, kQueryOptions, &q);
  std::vector<WorkspaceSlice> slices;
  if (q.by_shapes) {
    slices = kernel.workspace_layout_for_shapes(q.shapes);
  } else {
    slices = kernel.workspace_layout(std::span<const Arg>(q.storage.args.data(), num_inputs));
  }
  nb::list result;
  for (const WorkspaceSlice& s : slices) {
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

PyObject* PyKernel::empty_workspace(PyObject* const* args, size_t nargs, PyObject* kwnames) const {
  QueryInputs q;
  query_inputs(*this, args, nargs, kwnames, OptionNames{}, &q);
  const std::span<const Arg> inputs(q.storage.args.data(), num_inputs);
  OutputMaker maker(q.origin);
  if (maker.allocator() == nullptr) {
    // tilejit's allocator (numpy arrays on the CPU, cupy and other DLPack
    // arrays on a GPU): 256-byte aligned already.
    Outputs outputs;
    outputs.push_back(kernel.empty_workspace(inputs));
    return maker.wrap(outputs, nullptr);
  }
  const int64_t bytes = int64_t(kernel.workspace_bytes(inputs));
  return framework_arena(q.origin, first_device(q.storage, num_inputs, kernel), bytes);
}

}  // namespace tilejit::python

#include "kernel_object.h"

#include <structmember.h>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "errors.h"
#include "lowering_report.h"
#include "shape_export.h"
#include "tilejit/export/export_library.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// The instance layout of tilejit.Kernel.
struct KernelObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;  // at __vectorcalloffset__
  PyKernel* kernel;           // owned
};

PyTypeObject* g_kernel_type = nullptr;

const PyKernel& as_kernel(PyObject* self) {
  return *reinterpret_cast<KernelObject*>(self)->kernel;
}

// Runs `f` and turns any C++ exception into the Python error.
template <typename F>
PyObject* guarded(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
  return guarded([&] {
    return as_kernel(self).call(args, size_t(PyVectorcall_NARGS(nargsf)), kwnames);
  });
}

void kernel_dealloc(PyObject* self) {
  delete reinterpret_cast<KernelObject*>(self)->kernel;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

PyObject* kernel_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError,
                  "tilejit.Kernel objects are made by tilejit.jit and tilejit.compile");
  return nullptr;
}

PyObject* kernel_repr(PyObject* self) {
  return guarded([&] {
    const Kernel& k = as_kernel(self).kernel;
    std::string inputs;
    for (const std::string& n : k.input_names()) inputs += (inputs.empty() ? "" : ", ") + n;
    const std::string text =
        "<tilejit.Kernel " + k.name() + "(" + inputs + ") target='" + k.target() + "'>";
    return PyUnicode_FromStringAndSize(text.data(), Py_ssize_t(text.size()));
  });
}

PyObject* m_workspace_bytes(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  return guarded([&] {
    return PyLong_FromSize_t(as_kernel(self).workspace_bytes(args, size_t(nargs), kwnames));
  });
}

PyObject* m_workspace_layout(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  return guarded([&] {
    return as_kernel(self).workspace_layout(args, size_t(nargs), kwnames).release().ptr();
  });
}

PyObject* m_empty_workspace(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  return guarded([&] { return as_kernel(self).empty_workspace(args, size_t(nargs), kwnames); });
}

PyObject* m_get_source(PyObject* self, PyObject*) {
  return guarded([&] { return nb::cast(as_kernel(self).kernel.source()).release().ptr(); });
}

PyObject* m_lowering_report(PyObject* self, PyObject*) {
  return guarded([&] { return lowering_report_list(as_kernel(self).kernel).release().ptr(); });
}

std::vector<std::string> param_names(const Kernel& k, const std::vector<BufferSpec>& specs) {
  std::vector<std::string> names;
  for (const BufferSpec& b : specs) names.push_back(k.prim_func().params[b.param].name);
  return names;
}

// Read-only attributes; `which` selects one (the getset closure).
enum Attr : intptr_t {
  kName, kTarget, kDevice, kSource, kPrimFunc, kInputNames, kOutputNames, kWorkspaceNames, kSymbols,
  kShapeProgram, kDiagnostics,
};

// Kernel.diagnostics: one dict per runtime::Diagnostic.
nb::list diagnostics_list(const Kernel& k) {
  nb::list out;
  for (const runtime::Diagnostic& d : k.diagnostics()) {
    nb::dict x;
    x["op"] = d.op;
    x["file"] = d.span.file;
    x["line"] = d.span.line;
    x["col"] = d.span.col;
    x["path"] = d.path;
    x["reason"] = d.reason;
    x["message"] = d.message(k.name());
    out.append(x);
  }
  return out;
}

PyObject* get_attr(PyObject* self, void* closure) {
  return guarded([&]() -> PyObject* {
    const Kernel& k = as_kernel(self).kernel;
    switch (Attr(reinterpret_cast<intptr_t>(closure))) {
      case kName: return nb::cast(k.name()).release().ptr();
      case kTarget: return nb::cast(k.target()).release().ptr();
      case kDevice: return nb::cast(k.default_device().str()).release().ptr();
      case kSource: return nb::cast(k.source()).release().ptr();
      case kPrimFunc: return nb::cast(k.prim_func()).release().ptr();
      case kInputNames: return nb::cast(k.input_names()).release().ptr();
      case kOutputNames: return nb::cast(param_names(k, k.plan().outputs)).release().ptr();
      case kWorkspaceNames: return nb::cast(param_names(k, k.plan().workspaces)).release().ptr();
      case kSymbols: return nb::cast(k.plan().symbols).release().ptr();
      case kShapeProgram: return shape_program_dict(k).release().ptr();
      case kDiagnostics: return diagnostics_list(k).release().ptr();
    }
    Py_RETURN_NONE;
  });
}

#define TILEJIT_ATTR(name, which, doc) \
  {name, get_attr, nullptr, doc, reinterpret_cast<void*>(intptr_t(which))}

PyGetSetDef kernel_getset[] = {
    TILEJIT_ATTR("name", kName, "The kernel's name (the jit factory's, or the prim_func's)."),
    TILEJIT_ATTR("target", kTarget, "'cpu' or 'cuda'."),
    TILEJIT_ATTR("device", kDevice,
                 "Where a call runs when no tensor argument says: the target's default device "
                 "('cpu', 'cuda:0')."),
    TILEJIT_ATTR("source", kSource, "The generated translation unit."),
    TILEJIT_ATTR("prim_func", kPrimFunc, "The declared PrimFunc."),
    TILEJIT_ATTR("input_names", kInputNames, "Names of the inputs, in call order."),
    TILEJIT_ATTR("output_names", kOutputNames, "Names of the outputs, in return order."),
    TILEJIT_ATTR("workspace_names", kWorkspaceNames, "Names of the workspaces."),
    TILEJIT_ATTR("symbols", kSymbols, "The dynamic symbols, bound at each call."),
    TILEJIT_ATTR("shape_program", kShapeProgram,
                 "How a call binds the symbols, checks the inputs' dimensions and computes the "
                 "outputs' and workspaces' shapes, as a dict of lists (a new one per access): "
                 "symbols, inputs, bindings, checks, outputs, workspaces. Shape values are "
                 "expression trees: an int, a symbol name, or (op, a, b) with op in add, sub, "
                 "mul, floordiv, floormod, ceildiv, min, max."),
    TILEJIT_ATTR("diagnostics", kDiagnostics,
                 "What the target's lowering did another way than the program asked, and why "
                 "(each also raised as a tilejit.PerformanceWarning when the kernel was "
                 "compiled): a list of dicts with op, file, line, col, path (what it did), "
                 "reason and message."),
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
#undef TILEJIT_ATTR

#define TILEJIT_FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

PyMethodDef kernel_methods[] = {
    {"workspace_bytes", TILEJIT_FASTCALL(m_workspace_bytes), METH_FASTCALL | METH_KEYWORDS,
     "workspace_bytes(*inputs, **inputs_by_name) or workspace_bytes(shapes=[...]): the bytes of "
     "workspace arena a call with these inputs leases, without launching (the inputs are "
     "checked as by a call). shapes= has one entry per input in call order: a shape (a tuple "
     "of ints) for a tensor input, the value for a scalar input."},
    {"workspace_layout", TILEJIT_FASTCALL(m_workspace_layout), METH_FASTCALL | METH_KEYWORDS,
     "workspace_layout(*inputs, **inputs_by_name) or workspace_layout(shapes=[...]): where "
     "each workspace lies in the arena for these inputs, as a list of dicts with name, offset, "
     "bytes, shape, dtype and init."},
    {"empty_workspace", TILEJIT_FASTCALL(m_empty_workspace), METH_FASTCALL | METH_KEYWORDS,
     "empty_workspace(*inputs, **inputs_by_name): an uninitialised arena for workspace=, of "
     "workspace_bytes() bytes with a 256-byte aligned data pointer, on the inputs' device and "
     "in their framework (a numpy uint8 array for numpy inputs, a torch uint8 tensor for torch "
     "ones)."},
    {"get_source", m_get_source, METH_NOARGS, "The generated translation unit."},
    {"lowering_report", m_lowering_report, METH_NOARGS,
     "lowering_report(): where the target's lowering placed each buffer and which path each "
     "tile op took, and why not a faster one: a list of JSON-serialisable dicts, "
     "{'kind': 'buffer', 'name', 'scope', 'placement', 'storage', 'bytes', 'file', 'line', "
     "'forced_by'} "
     "(placement 'registers', 'shared', 'global' or 'local'; forced_by None or the op that "
     "kept the buffer from a faster placement, {'op', 'file', 'line', 'reason'}), then "
     "{'kind': 'op', 'op', 'file', 'line', 'path', 'reason'} in program order."},
    {nullptr, nullptr, 0, nullptr},
};
#undef TILEJIT_FASTCALL

PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, Py_ssize_t(offsetof(KernelObject, vectorcall)), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kernel_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(kernel_dealloc)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_new, reinterpret_cast<void*>(kernel_new)},
    {Py_tp_repr, reinterpret_cast<void*>(kernel_repr)},
    {Py_tp_methods, kernel_methods},
    {Py_tp_getset, kernel_getset},
    {Py_tp_members, kernel_members},
    {Py_tp_doc, const_cast<char*>(
         "A compiled kernel. Call it with its inputs (tensors and scalars, in signature order,\n"
         "positionally or by parameter name):\n"
         "kernel(*inputs, stream=None, out=None, workspace=None, **inputs_by_name) returns\n"
         "None, one tensor or a tuple of tensors in out_idx order, in the inputs' framework.\n"
         "stream=, out= and workspace= always mean the options: an input with one of those\n"
         "names is passed positionally.")},
    {0, nullptr},
};

PyType_Spec kernel_spec = {
    "tilejit.Kernel",
    int(sizeof(KernelObject)),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    kernel_slots,
};

IndexSpec parse_index_spec(const std::string& kernel, const char* what, nb::handle h) {
  if (h.is_none()) return IndexSpec();
  const std::string name = kernel + ": " + what;
  // `where` is "" for a bare int, "[k]" for a list's k-th element.
  auto as_int = [&](nb::handle item, const std::string& where) -> int64_t {
    if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr())) {
      throw_error(ErrorKind::kTypeError,
                  where.empty() ? name + " must be None, an int or a list of ints; got " +
                                      Py_TYPE(item.ptr())->tp_name
                                : name + where + " must be an int; got " +
                                      Py_TYPE(item.ptr())->tp_name);
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(item.ptr(), &overflow);
    if (overflow != 0) {
      throw_error(ErrorKind::kValueError,
                  name + where + " = " + nb::str(item).c_str() + " is out of range");
    }
    return v;
  };
  if (PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()) || !PySequence_Check(h.ptr())) {
    return IndexSpec(as_int(h, ""));
  }
  // A copy: the caller's list is read once and never kept or changed.
  std::vector<int64_t> values;
  for (nb::handle item : nb::borrow<nb::sequence>(h)) {
    std::string where = "[";  // appended, not "[" + ...: GCC 12 warns falsely (-Wrestrict)
    where += std::to_string(values.size());
    where += "]";
    values.push_back(as_int(item, where));
  }
  return IndexSpec(std::move(values));
}

std::vector<std::string> parse_flags(const std::string& kernel, const char* what, nb::handle h) {
  std::vector<std::string> flags;
  if (h.is_none()) return flags;
  if (PyUnicode_Check(h.ptr()) || !PySequence_Check(h.ptr())) {
    throw_error(ErrorKind::kTypeError, kernel + ": " + what +
                                           " must be None or a list of strings; got " +
                                           Py_TYPE(h.ptr())->tp_name);
  }
  for (nb::handle item : nb::borrow<nb::sequence>(h)) {
    if (!PyUnicode_Check(item.ptr())) {
      throw_error(ErrorKind::kTypeError, kernel + ": " + what + " must hold strings; got " +
                                             Py_TYPE(item.ptr())->tp_name);
    }
    flags.push_back(nb::cast<std::string>(item));
  }
  return flags;
}

}  // namespace

nb::object make_kernel(const ir::PrimFunc& func, nb::handle out_idx, nb::handle workspace_idx,
                       const std::string& target, nb::handle workspace_init,
                       nb::handle compile_flags, nb::handle extra_compile_flags, bool disk_cache,
                       bool debug_bounds, bool tma, bool warp_specialize,
                       bool cluster_multicast, bool coarse_k_steps, bool staged_epilogue) {
  JitOptions options;
  options.out_idx = parse_index_spec(func.name, "out_idx", out_idx);
  options.workspace_idx = parse_index_spec(func.name, "workspace_idx", workspace_idx);
  options.target = target;
  options.disk_cache = disk_cache;
  options.debug_bounds = debug_bounds;
  options.tma = tma;
  options.warp_specialize = warp_specialize;
  options.cluster_multicast = cluster_multicast;
  options.coarse_k_steps = coarse_k_steps;
  options.staged_epilogue = staged_epilogue;
  if (!workspace_init.is_none()) {
    if (!PyDict_Check(workspace_init.ptr())) {
      throw_error(ErrorKind::kTypeError,
                  func.name + ": workspace_init must be None or a dict {name: 'empty' | 'zero' | "
                              "'zero_once'}; got " + Py_TYPE(workspace_init.ptr())->tp_name);
    }
    for (auto [key, value] : nb::borrow<nb::dict>(workspace_init)) {
      if (!PyUnicode_Check(key.ptr()) || !PyUnicode_Check(value.ptr())) {
        throw_error(ErrorKind::kTypeError,
                    func.name + ": workspace_init maps workspace names (str) to 'empty', 'zero' "
                                "or 'zero_once'");
      }
      const std::string workspace = nb::cast<std::string>(key);
      options.workspace_init[workspace] =
          parse_workspace_init(nb::cast<std::string>(value), func.name, workspace);
    }
  }
  options.compile.flags = parse_flags(func.name, "compile_flags", compile_flags);
  options.compile.extra_flags = parse_flags(func.name, "extra_compile_flags", extra_compile_flags);

  auto k = std::make_unique<PyKernel>();
  {
    // Compiling can take a second; other Python threads go on meanwhile.
    nb::gil_scoped_release nogil;
    k->kernel = jit(func, options);
  }
  k->num_inputs = k->kernel.plan().inputs.size();
  k->num_outputs = k->kernel.plan().outputs.size();
  k->input_cache.resize(k->num_inputs);
  warn(k->kernel.name(), k->kernel.diagnostics());
  PyObject* obj = g_kernel_type->tp_alloc(g_kernel_type, 0);
  if (obj == nullptr) throw nb::python_error();
  auto* ko = reinterpret_cast<KernelObject*>(obj);
  ko->vectorcall = kernel_vectorcall;
  ko->kernel = k.release();
  return nb::steal(obj);
}

void bind_kernel(nb::module_& m) {
  g_kernel_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kernel_spec));
  if (g_kernel_type == nullptr) throw nb::python_error();
  Py_INCREF(g_kernel_type);  // one reference kept here for the process's life
  if (PyModule_AddObject(m.ptr(), "Kernel", reinterpret_cast<PyObject*>(g_kernel_type)) != 0) {
    throw nb::python_error();
  }
  m.def("jit", &make_kernel, nb::arg("prim_func"), nb::arg("out_idx").none(),
        nb::arg("workspace_idx").none(), nb::arg("target"), nb::arg("workspace_init").none(),
        nb::arg("compile_flags").none(), nb::arg("extra_compile_flags").none(),
        nb::arg("disk_cache"), nb::arg("debug_bounds") = false, nb::arg("tma") = true,
        nb::arg("warp_specialize") = true, nb::arg("cluster_multicast") = true,
        nb::arg("coarse_k_steps") = true, nb::arg("staged_epilogue") = true);
  m.def(
      "export_library",
      [](nb::handle kernel, const std::string& path) {
        if (!PyObject_TypeCheck(kernel.ptr(), g_kernel_type)) {
          throw nb::type_error(("export: expected a tilejit.Kernel, got " +
                                std::string(Py_TYPE(kernel.ptr())->tp_name))
                                   .c_str());
        }
        const Kernel& k = as_kernel(kernel.ptr()).kernel;
        // Compiling takes a second or more; other Python threads go on.
        nb::gil_scoped_release nogil;
        export_library(k, path);
      },
      nb::arg("kernel"), nb::arg("path"),
      "Writes the kernel as a standalone shared library `path` with a C header beside it.");
  m.def("export_c_name", &export_c_name, nb::arg("name"),
        "The C identifier an exported kernel's functions start with.");
}

}  // namespace tilejit::python

#include "errors.h"

#include <nanobind/nanobind.h>

#include <new>

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// The tilejit-specific exception types; strong references held for the life
// of the process (the module keeps them too).
PyObject* g_compile_error = nullptr;
PyObject* g_out_of_memory_error = nullptr;
PyObject* g_internal_error = nullptr;
PyObject* g_performance_warning = nullptr;

PyObject* new_exception(PyObject* module, const char* qualified, const char* short_name,
                        PyObject* base, const char* doc) {
  PyObject* type = PyErr_NewExceptionWithDoc(qualified, doc, base, nullptr);
  if (type == nullptr) throw nb::python_error();
  Py_INCREF(type);  // one reference for the module, one kept here
  if (PyModule_AddObject(module, short_name, type) != 0) {
    Py_DECREF(type);
    throw nb::python_error();
  }
  return type;
}

PyObject* builtin_type(nb::exception_type type) {
  switch (type) {
    case nb::exception_type::stop_iteration: return PyExc_StopIteration;
    case nb::exception_type::index_error: return PyExc_IndexError;
    case nb::exception_type::key_error: return PyExc_KeyError;
    case nb::exception_type::value_error: return PyExc_ValueError;
    case nb::exception_type::type_error: return PyExc_TypeError;
    case nb::exception_type::buffer_error: return PyExc_BufferError;
    case nb::exception_type::import_error: return PyExc_ImportError;
    case nb::exception_type::attribute_error: return PyExc_AttributeError;
    default: return PyExc_RuntimeError;
  }
}

// A str from UTF-8 text; bytes that are not UTF-8 become U+FFFD.
PyObject* text(const std::string& s) {
  return PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "replace");
}

// The CompileError with the source it failed on as `.source`, and where it
// was kept (TILEJIT_KEEP_FAILED=1) as `.kept_path` (None when it was not).
void set_compile_error(const CompileError& e) noexcept {
  PyObject* message = text(e.message());
  PyObject* exc = message ? PyObject_CallOneArg(g_compile_error, message) : nullptr;
  Py_XDECREF(message);
  PyObject* source = exc ? text(e.source()) : nullptr;
  PyObject* kept = Py_None;
  if (e.kept_path().empty()) {
    Py_INCREF(kept);
  } else {
    kept = text(e.kept_path());
  }
  const bool ok = exc && source && kept && PyObject_SetAttrString(exc, "source", source) == 0 &&
                  PyObject_SetAttrString(exc, "kept_path", kept) == 0;
  Py_XDECREF(source);
  Py_XDECREF(kept);
  if (ok) {
    PyErr_SetObject(g_compile_error, exc);
  } else {
    PyErr_Clear();
    PyErr_SetString(g_compile_error, e.message().c_str());
  }
  Py_XDECREF(exc);
}

void set_error(const Error& e) noexcept {
  if (const auto* c = dynamic_cast<const CompileError*>(&e)) {
    set_compile_error(*c);
  } else {
    PyErr_SetString(exception_type(e.kind()), e.message().c_str());
  }
}

}  // namespace

PyObject* exception_type(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValueError: return PyExc_ValueError;
    case ErrorKind::kTypeError: return PyExc_TypeError;
    case ErrorKind::kRuntimeError: return PyExc_RuntimeError;
    case ErrorKind::kCompileError: return g_compile_error;
    case ErrorKind::kOutOfMemoryError: return g_out_of_memory_error;
    case ErrorKind::kInternalError: return g_internal_error;
  }
  return g_internal_error;
}

void register_errors(PyObject* module) {
  g_compile_error = new_exception(
      module, "tilejit.CompileError", "CompileError", PyExc_Exception,
      "A kernel's generated source did not compile. The message holds the compiler's "
      "command, its log and the numbered source lines around the first error; .source is "
      "the whole source, and .kept_path the file it was left in under TILEJIT_KEEP_FAILED=1 "
      "(None otherwise).");
  g_out_of_memory_error = new_exception(
      module, "tilejit.OutOfMemoryError", "OutOfMemoryError", PyExc_MemoryError,
      "An allocation failed or a memory cap was hit. The message says what was asked, "
      "what is held and which setting caps it.");
  g_internal_error = new_exception(module, "tilejit.InternalError", "InternalError",
                                   PyExc_RuntimeError,
                                   "A bug in tilejit itself; please report it with the message.");
  g_performance_warning = new_exception(
      module, "tilejit.PerformanceWarning", "PerformanceWarning", PyExc_UserWarning,
      "The kernel is correct, but a part of it was compiled another way than the program "
      "asked for (a T.copy of a T.Pipelined loop left synchronous, say). Raised at the line "
      "of the program it concerns, when the kernel is compiled; Kernel.diagnostics lists "
      "them.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_error(e);
    }
  });
}

void set_python_error(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    set_error(e);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    PyErr_SetString(builtin_type(e.type()), e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::bad_cast& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(g_internal_error, e.what());
  } catch (...) {
    PyErr_SetString(g_internal_error, "unknown C++ exception");
  }
}

void throw_error(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

void warn(const std::string& func_name, const std::vector<runtime::Diagnostic>& diagnostics) {
  for (const runtime::Diagnostic& d : diagnostics) {
    nb::object message = nb::steal(text(d.message(func_name)));
    nb::object file = nb::steal(text(d.span.file.empty() ? "<" + func_name + ">" : d.span.file));
    if (!message.is_valid() || !file.is_valid()) throw nb::python_error();
    if (PyErr_WarnExplicitObject(g_performance_warning, message.ptr(), file.ptr(), d.span.line,
                                 nullptr, nullptr) != 0) {
      throw nb::python_error();
    }
  }
}

}  // namespace tilejit::python

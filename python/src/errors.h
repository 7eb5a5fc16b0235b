// Python exceptions for tilejit::Error kinds, and warnings for the
// lowering's diagnostics.
//
//   kValueError       -> ValueError
//   kTypeError        -> TypeError
//   kRuntimeError     -> RuntimeError
//   kCompileError     -> tilejit.CompileError     (subclass of Exception)
//   kOutOfMemoryError -> tilejit.OutOfMemoryError (subclass of MemoryError)
//   kInternalError    -> tilejit.InternalError    (subclass of RuntimeError)
//
// The Python message is Error::message() exactly (no "ValueError: " prefix:
// Python prints the type itself). CompileError derives from Exception, not
// RuntimeError, so that `except RuntimeError` around a call (a driver
// failure, say) does not swallow a broken kernel body by accident.
//
// A runtime::Diagnostic (what a backend's lowering did another way than the
// program asked, and why) becomes a tilejit.PerformanceWarning (a
// UserWarning) at the author's file and line, its text
// Diagnostic::message().
#pragma once

#include <Python.h>

#include <exception>
#include <string>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::python {

/// Creates the three tilejit exception types and tilejit.PerformanceWarning,
/// adds them to `module` and registers a nanobind translator for
/// tilejit::Error. Called once at import.
void register_errors(PyObject* module);

/// Issues one tilejit.PerformanceWarning per diagnostic of kernel
/// `func_name`, in order, with the GIL held. Throws nb::python_error when
/// a warning filter turns one into an exception.
void warn(const std::string& func_name, const std::vector<runtime::Diagnostic>& diagnostics);

/// The Python exception type for `kind` (a borrowed reference).
PyObject* exception_type(ErrorKind kind);

/// Sets the Python error for the exception in flight; for code outside
/// nanobind's dispatch (the kernel's tp_call). Handles tilejit::Error,
/// nanobind's python_error and builtin exceptions, std::bad_alloc and any
/// other std::exception (as InternalError).
void set_python_error(const std::exception_ptr& error) noexcept;

/// Throws a tilejit::Error of `kind` with `message`; for errors the binding
/// itself detects, so that they read and map like the library's.
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

}  // namespace tilejit::python

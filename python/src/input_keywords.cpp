#include "input_keywords.h"

#include <cstring>
#include <string>

#include "errors.h"
#include "tilejit/jit/call_messages.h"
#include "numpy_interop.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

// The keyword's UTF-8 text, or null when it is not a str.
const char* keyword_text(PyObject* key, Py_ssize_t* size) {
  if (!PyUnicode_Check(key)) return nullptr;
  const char* text = PyUnicode_AsUTF8AndSize(key, size);
  if (text == nullptr) PyErr_Clear();
  return text;
}

const char* find_option(std::string_view name, OptionNames options) {
  for (const char* o : options.names) {
    if (name == o) return o;
  }
  return nullptr;
}

std::string type_name(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

[[noreturn]] void keyword_not_a_str(const PyKernel& k) {
  throw_error(ErrorKind::kTypeError, k.kernel.name() + ": keywords must be strings");
}

}  // namespace

PyObject* SplitKeywords::option(const char* name) const {
  for (size_t i = 0; i < num_options; ++i) {
    if (std::strcmp(option_names[i], name) == 0) return option_values[i];
  }
  return nullptr;
}

SplitKeywords split_keywords(const PyKernel& k, PyObject* const* kw_names,
                             PyObject* const* kw_values, size_t count, OptionNames options) {
  SplitKeywords kw;
  for (size_t j = 0; j < count; ++j) {
    Py_ssize_t size = 0;
    const char* text = keyword_text(kw_names[j], &size);
    if (text == nullptr) keyword_not_a_str(k);
    const std::string_view name(text, size_t(size));
    if (const char* option = find_option(name, options)) {
      if (kw.option(option) != nullptr || kw.num_options == SplitKeywords::kMaxOptions) {
        throw_error(ErrorKind::kTypeError, k.kernel.name() +
                                               ": got multiple values for keyword argument '" +
                                               option + "'");
      }
      kw.option_names[kw.num_options] = option;
      kw.option_keys[kw.num_options] = kw_names[j];
      kw.option_values[kw.num_options++] = kw_values[j];
    } else {
      kw.names.push_back(name);
      kw.values.push_back(kw_values[j]);
    }
  }
  return kw;
}

void order_inputs(const PyKernel& k, PyObject* const* args, size_t nargs,
                  const SplitKeywords& kw, OptionNames options, PyObject** ordered) {
  const CallPlan& plan = k.kernel.plan();
  // An input named like an option can only come positionally; say so
  // rather than report it missing after the caller passed `out=...`.
  for (size_t i = nargs; i < plan.inputs.size(); ++i) {
    const std::string& input = k.kernel.prim_func().params[plan.inputs[i].param].name;
    if (const char* option = find_option(input, options)) {
      throw_error(ErrorKind::kTypeError,
                  k.kernel.name() + ": missing input #" + std::to_string(i) + " '" + input +
                      "': the keyword " + option + "= is the option, not this input; pass the "
                      "input positionally");
    }
  }
  int order[kMaxParams];
  k.kernel.match_inputs(nargs, kw.names, order, options.text);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    ordered[i] = size_t(order[i]) < nargs ? args[order[i]] : kw.values[size_t(order[i]) - nargs];
  }
}

void extra_keyword(const PyKernel& k, PyObject* key, OptionNames options) {
  Py_ssize_t size = 0;
  const char* text = keyword_text(key, &size);
  if (text == nullptr) keyword_not_a_str(k);
  const std::string_view name(text, size_t(size));
  int order[kMaxParams];
  k.kernel.match_inputs(k.num_inputs, std::span<const std::string_view>(&name, 1), order,
                        options.text);
  throw_error(ErrorKind::kInternalError, k.kernel.name() + ": keyword '" + std::string(name) +
                                             "' was neither an option nor an error");
}

std::vector<ShapeArg> parse_shapes(const PyKernel& k, PyObject* shapes) {
  const std::string& name = k.kernel.name();
  if (!PyList_Check(shapes) && !PyTuple_Check(shapes)) {
    throw_error(ErrorKind::kTypeError,
                name + ": shapes= must be a list with one entry per input (a shape for a tensor "
                       "input, a value for a scalar input); got " + type_name(shapes));
  }
  const size_t n = size_t(PySequence_Fast_GET_SIZE(shapes));
  if (n != k.num_inputs) throw_error(ErrorKind::kTypeError, call_messages::arity(k.kernel, n));
  const std::vector<std::string> inputs = k.kernel.input_names();
  PyObject* const* items = PySequence_Fast_ITEMS(shapes);
  std::vector<ShapeArg> result;
  result.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    const std::string prefix = name + ": shapes[" + std::to_string(i) + "] '" + inputs[i] + "': ";
    const bool scalar = k.kernel.plan().inputs[i].scalar;
    const bool is_sequence = PyList_Check(item) || PyTuple_Check(item);  // torch.Size is a tuple
    if (!scalar) {
      if (!is_sequence) {
        throw_error(ErrorKind::kTypeError, prefix + "expected a shape (a tuple of ints) for a "
                                                    "tensor input, got " + type_name(item));
      }
      std::vector<int64_t> shape;
      PyObject* const* dims = PySequence_Fast_ITEMS(item);
      for (Py_ssize_t d = 0; d < PySequence_Fast_GET_SIZE(item); ++d) {
        PyObject* e = dims[d];
        const bool integer = (PyLong_Check(e) && !PyBool_Check(e)) || numpy::scalar_kind(e) == 1;
        if (!integer) {
          throw_error(ErrorKind::kTypeError, prefix + "dimension " + std::to_string(d) +
                                                 " must be an int, got " + type_name(e));
        }
        const long long v = PyLong_AsLongLong(e);  // numpy integers through __index__
        if (v == -1 && PyErr_Occurred()) {
          PyErr_Clear();
          throw_error(ErrorKind::kValueError, prefix + "dimension " + std::to_string(d) +
                                                  " does not fit in int64");
        }
        shape.push_back(v);
      }
      result.emplace_back(std::move(shape));
      continue;
    }
    // A scalar input: its value, as a call takes it.
    const int kind = numpy::scalar_kind(item);
    if ((PyLong_Check(item) && !PyBool_Check(item)) || kind == 1) {
      const long long v = PyLong_AsLongLong(item);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw_error(ErrorKind::kValueError, prefix + "integer does not fit in int64");
      }
      result.emplace_back(v);
    } else if (PyFloat_Check(item) || kind == 2) {
      const double v = PyFloat_AsDouble(item);
      if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
      result.emplace_back(v);
    } else {
      throw_error(ErrorKind::kTypeError, prefix + "expected a number for a scalar input, got " +
                                             type_name(item));
    }
  }
  return result;
}

}  // namespace tilejit::python

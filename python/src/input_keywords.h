// Inputs given by keyword, for the Kernel's call and its queries.
//
// Note [Inputs by keyword]
// `k(x, Yin=y, alpha=2.0)` binds inputs as a Python function binds its
// parameters: the positional arguments first, in input order, then the
// keywords by input name. Each method has its own option keywords (a call:
// stream=, out=, workspace=; workspace_bytes and workspace_layout: shapes=);
// a keyword with an option's name always means the option, so an input that
// has that name is passed positionally to that method. A call whose keywords
// are all options and whose positional arguments are all its inputs never
// comes here (Note [Call path] in kernel_object.h): the rest is the slow
// path, which puts the inputs in order and then runs the same call. An
// unknown name, an input given twice or a missing one is a TypeError from
// Kernel::match_inputs.
#pragma once

#include <Python.h>

#include <span>
#include <string_view>
#include <vector>

#include "kernel_object.h"

namespace tilejit::python {

/// A method's option keywords: their names ({"stream", "out", "workspace"})
/// and how an error lists them ("stream=, out=, workspace=").
struct OptionNames {
  std::span<const char* const> names;
  std::string_view text;
};

/// Vectorcall keywords split into the method's options and inputs by name.
struct SplitKeywords {
  static constexpr size_t kMaxOptions = 4;
  // Inputs by name: names (UTF-8 views into the keyword strings) and values,
  // borrowed.
  std::vector<std::string_view> names;
  std::vector<PyObject*> values;
  // Options, in the order given: their names (as in OptionNames), the
  // keyword objects and the values (borrowed).
  const char* option_names[kMaxOptions];
  PyObject* option_keys[kMaxOptions];
  PyObject* option_values[kMaxOptions];
  size_t num_options = 0;

  /// The value of option `name`, or null when it was not given.
  PyObject* option(const char* name) const;
};

/// Splits kw_names[0, count) with their values kw_values[0, count).
/// TypeError for a name that is not a str, or an option given twice.
SplitKeywords split_keywords(const PyKernel& k, PyObject* const* kw_names,
                             PyObject* const* kw_values, size_t count, OptionNames options);

/// Fills ordered[0, num_inputs) with the inputs in input order (borrowed)
/// from args[0, nargs) and `kw`; throws the TypeErrors of Note [Inputs by
/// keyword].
void order_inputs(const PyKernel& k, PyObject* const* args, size_t nargs,
                  const SplitKeywords& kw, OptionNames options, PyObject** ordered);

/// The error for keyword `key` of a call that has all its inputs
/// positionally: an input given twice, or an unknown name.
[[noreturn]] void extra_keyword(const PyKernel& k, PyObject* key, OptionNames options);

/// workspace_bytes(shapes=[...]) / workspace_layout(shapes=[...]): a list
/// with one entry per input, a shape (a sequence of ints) for a tensor input
/// and a number for a scalar input.
std::vector<ShapeArg> parse_shapes(const PyKernel& k, PyObject* shapes);

}  // namespace tilejit::python

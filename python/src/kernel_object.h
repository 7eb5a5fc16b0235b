// tilejit._C.Kernel: the callable that tilejit.jit() and tilejit.compile()
// return, and the jit() that makes it.
//
// Note [Call path]
// `kernel(*inputs, stream=None, out=None, workspace=None)` is the type's
// vectorcall entry, written against the C API: the interpreter hands the
// arguments over in place (no tuple, no dict), there is no overload dispatch
// and no Python frame, and nothing is allocated per call besides the
// outputs and the library's own tensor records. A call that gives every
// input positionally takes this path whatever its option keywords; inputs
// by keyword (or too few) first go through Note [Inputs by keyword] in
// input_keywords.h, which puts them in order. Every argument is converted
// in C++ (tensor_import.h); the GIL is released around Kernel::call
// (checks, allocation, pool lease, launch) when other Python threads exist
// (Note [GIL during a call] in kernel_call.cpp); the outputs are wrapped in the inputs'
// framework (tensor_export.h). The Python layer never sits between the
// caller and kernel_call.cpp. The type is plain C API rather than a
// nanobind class because nanobind types cannot take vectorcall for their
// instances, and the tuple a tp_call needs costs as much as converting an
// argument.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "tilejit/ir/prim_func.h"
#include "tilejit/jit/kernel.h"

namespace tilejit::python {

/// What a Kernel object holds.
struct PyKernel {
  Kernel kernel;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  /// One descriptor per input slot (Note [Input descriptor cache] in
  /// numpy_interop.h); changed only with the GIL held.
  mutable std::vector<Tensor> input_cache;
  /// Calls of this kernel in progress, to tell a nested call (kernel_call.cpp);
  /// guarded by the GIL.
  mutable int active_calls = 0;

  /// The call (Note [Call path]): args[0, nargs) are the positional
  /// arguments, then the keyword values named by `kwnames` (null when there
  /// are none): the options stream=, out=, workspace= and inputs by name
  /// (Note [Inputs by keyword] in input_keywords.h).
  PyObject* call(PyObject* const* args, size_t nargs, PyObject* kwnames) const;
  /// The queries, with the inputs as a call takes them; workspace_bytes and
  /// workspace_layout also take shapes= instead.
  size_t workspace_bytes(PyObject* const* args, size_t nargs, PyObject* kwnames) const;
  nanobind::list workspace_layout(PyObject* const* args, size_t nargs, PyObject* kwnames) const;
  /// An arena for workspace= in the inputs' framework (kernel_call.cpp).
  PyObject* empty_workspace(PyObject* const* args, size_t nargs, PyObject* kwnames) const;

 private:
  // The call with the inputs in order, args[0, num_inputs), and only option
  // keywords: names kw_names[0, num_kw) with values kw_values[0, num_kw).
  PyObject* call_ordered(PyObject* const* args, PyObject* const* kw_names,
                         PyObject* const* kw_values, size_t num_kw) const;
  // The slow path of call(): inputs by keyword, or the wrong count.
  PyObject* call_by_name(PyObject* const* args, size_t nargs, PyObject* const* kw_names,
                         size_t num_kw) const;
};

/// jit() with the Python forms of its options: out_idx / workspace_idx are
/// None, an int or a sequence of ints (copied, never modified);
/// workspace_init is None or {name: "empty" | "zero" | "zero_once"};
/// the flag lists are None or sequences of str; debug_bounds is
/// JitOptions::debug_bounds, tma JitOptions::tma, warp_specialize
/// JitOptions::warp_specialize, cluster_multicast
/// JitOptions::cluster_multicast, coarse_k_steps JitOptions::coarse_k_steps,
/// staged_epilogue JitOptions::staged_epilogue.
/// Returns a Kernel object.
nanobind::object make_kernel(const ir::PrimFunc& func, nanobind::handle out_idx,
                             nanobind::handle workspace_idx, const std::string& target,
                             nanobind::handle workspace_init, nanobind::handle compile_flags,
                             nanobind::handle extra_compile_flags, bool disk_cache,
                             bool debug_bounds, bool tma, bool warp_specialize,
                             bool cluster_multicast, bool coarse_k_steps,
                             bool staged_epilogue);

/// Creates the Kernel type and binds jit() into `m`.
void bind_kernel(nanobind::module_& m);

}  // namespace tilejit::python

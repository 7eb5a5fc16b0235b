// Kernel.lowering_report(): the runtime::LoweringReport as plain Python
// values (a list of dicts of str, int and None), so that json.dumps takes
// it as it is.
#pragma once

#include <nanobind/nanobind.h>

#include "tilejit/jit/kernel.h"

namespace tilejit::python {

/// One dict per buffer, {"kind": "buffer", "name", "scope", "placement",
/// "storage", "bytes", "file", "line", "forced_by"}, then one per op, {"kind": "op",
/// "op", "file", "line", "path", "reason"}; forced_by is None, or the op
/// that kept the buffer from a faster placement as {"op", "file", "line",
/// "reason"}. Lines are the author's (0 for IR built without them).
nanobind::list lowering_report_list(const Kernel& k);

}  // namespace tilejit::python

#include "lowering_report.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace tilejit::python {

nb::list lowering_report_list(const Kernel& k) {
  const runtime::LoweringReport& r = k.lowering_report();
  nb::list out;
  for (const runtime::BufferRecord& b : r.buffers) {
    nb::dict x;
    x["kind"] = "buffer";
    x["name"] = b.name;
    x["scope"] = b.scope;
    x["placement"] = runtime::placement_name(b.placement);
    x["storage"] = b.storage;
    x["layout"] = b.layout;
    x["bytes"] = b.bytes;
    x["file"] = b.span.file;
    x["line"] = b.span.line;
    if (b.forced_by.op.empty()) {
      x["forced_by"] = nb::none();
    } else {
      nb::dict f;
      f["op"] = b.forced_by.op;
      f["file"] = b.forced_by.span.file;
      f["line"] = b.forced_by.span.line;
      f["reason"] = b.forced_by.reason;
      x["forced_by"] = f;
    }
    out.append(x);
  }
  for (const runtime::Diagnostic& d : r.ops) {
    nb::dict x;
    x["kind"] = "op";
    x["op"] = d.op;
    x["file"] = d.span.file;
    x["line"] = d.span.line;
    x["path"] = d.path;
    x["reason"] = d.reason;
    out.append(x);
  }
  return out;
}

}  // namespace tilejit::python

#include "shape_export.h"

#include <nanobind/stl/string.h>

#include <string>
#include <vector>

#include "errors.h"

namespace nb = nanobind;

namespace tilejit::python {
namespace {

using Op = ir::ShapeProgram::Op;

const char* op_name(Op op) {
  switch (op) {
    case Op::kAdd: return "add";
    case Op::kSub: return "sub";
    case Op::kMul: return "mul";
    case Op::kFloorDiv: return "floordiv";
    case Op::kFloorMod: return "floormod";
    case Op::kCeilDiv: return "ceildiv";
    case Op::kMin: return "min";
    case Op::kMax: return "max";
    case Op::kConst: break;
  }
  return nullptr;
}

// Expression trees over the program's registers, each built once: a result
// shared by several dimensions is the same Python object.
class TreeReader {
 public:
  TreeReader(const ir::ShapeProgram& program, const std::vector<std::string>& symbols)
      : program_(program), symbols_(symbols), writer_(size_t(program.num_registers()), -1),
        trees_(size_t(program.num_registers())) {
    const auto& code = program.instructions();
    for (size_t i = 0; i < code.size(); ++i) writer_[size_t(code[i].dst)] = int(i);
  }

  nb::object result(int index) { return reg(program_.result_registers()[size_t(index)]); }

 private:
  nb::object reg(int r) {
    nb::object& tree = trees_[size_t(r)];
    if (tree.is_valid()) return tree;
    if (r < program_.num_symbols()) {
      tree = nb::str(symbols_[size_t(r)].c_str());
      return tree;
    }
    const int w = writer_[size_t(r)];
    if (w < 0) {
      throw_error(ErrorKind::kInternalError, "shape program: register " + std::to_string(r) +
                                                 " is never written");
    }
    const ir::ShapeProgram::Instr& in = program_.instructions()[size_t(w)];
    if (in.op == Op::kConst) {
      tree = nb::int_(in.imm);
    } else {
      tree = nb::make_tuple(op_name(in.op), reg(in.a), reg(in.b));
    }
    return tree;
  }

  const ir::ShapeProgram& program_;
  const std::vector<std::string>& symbols_;
  std::vector<int> writer_;  // per register, the instruction that writes it
  std::vector<nb::object> trees_;
};

nb::object optional_int(bool present, int64_t v) {
  return present ? nb::object(nb::int_(v)) : nb::none();
}

}  // namespace

nb::dict shape_program_dict(const Kernel& kernel) {
  const CallPlan& plan = kernel.plan();
  const ir::PrimFunc& f = kernel.prim_func();
  TreeReader trees(plan.program, plan.symbols);

  nb::list inputs;
  for (const InputSpec& in : plan.inputs) {
    nb::list dims;
    for (int d = 0; d < in.rank; ++d) {
      dims.append(optional_int(in.static_dims[size_t(d)] >= 0, in.static_dims[size_t(d)]));
    }
    nb::dict e;
    e["name"] = f.params[size_t(in.param)].name;
    e["scalar"] = in.scalar;
    e["dtype"] = in.dtype.name();
    e["dims"] = dims;
    inputs.append(e);
  }
  nb::list bindings;
  for (const SymbolBinding& b : plan.bindings) {
    nb::dict e;
    e["symbol"] = plan.symbols[size_t(b.symbol)];
    e["input"] = b.input;
    e["dim"] = optional_int(b.dim >= 0, b.dim);
    e["coeff"] = b.coeff;
    e["offset"] = b.offset;
    bindings.append(e);
  }
  nb::list checks;
  for (const DimCheck& c : plan.checks) {
    nb::dict e;
    e["input"] = c.input;
    e["dim"] = c.dim;
    e["value"] = trees.result(c.result);
    checks.append(e);
  }
  auto buffers = [&](const std::vector<BufferSpec>& specs) {
    nb::list list;
    for (const BufferSpec& b : specs) {
      nb::list shape;
      for (int d = 0; d < b.rank; ++d) shape.append(trees.result(b.first_result + d));
      nb::dict e;
      e["name"] = f.params[size_t(b.param)].name;
      e["dtype"] = b.dtype.name();
      e["shape"] = shape;
      list.append(e);
    }
    return list;
  };
  nb::dict d;
  nb::list symbols;
  for (const std::string& s : plan.symbols) symbols.append(s);
  d["symbols"] = symbols;
  d["inputs"] = inputs;
  d["bindings"] = bindings;
  d["checks"] = checks;
  d["outputs"] = buffers(plan.outputs);
  d["workspaces"] = buffers(plan.workspaces);
  return d;
}

}  // namespace tilejit::python

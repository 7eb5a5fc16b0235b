// The C header and the wrapper unit of an exported library. Everything the
// call path decides at jit time (the CallPlan, the KernelAbi) is written out
// as constant tables and straight-line code, read by the fixed code of
// runtime/ (wrapper_types.h before the tables, wrapper_check.cpp and
// wrapper_call.cpp after them; embedded at build time, Note [Embedded from a
// marker] in cmake/embed_files.cmake).
#include "export/export_codegen.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/embedded_file.h"
#include "core/string_literal.h"
#include "tilejit/core/error.h"
#include "tilejit/export/export_library.h"
#include "tilejit/ir/shape_program.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::exporter {
namespace {


std::string with_article(const std::string& word) {
  const bool vowel = !word.empty() && std::string("aeiou").find(word[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + word;
}

std::string expr_text(const ir::Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::string shape_text(const ir::Param& p) {
  std::string out = "[";
  for (size_t d = 0; d < p.tensor.shape.size(); ++d) {
    out += (d ? ", " : "") + expr_text(p.tensor.shape[d]);
  }
  return out + "]";
}

const char* scalar_ctype(DataType t) {
  if (t == DataType::int32()) return "int32_t";
  if (t == DataType::int64()) return "int64_t";
  return "float";
}

// The C parameter names: the signature's, made C identifiers, apart from
// each other and from the functions' own parameters.
struct Names {
  std::vector<std::string> inputs, outputs;
};

Names c_names(const Kernel& k) {
  static const std::set<std::string> kTaken = {
      "workspace", "stream", "allocator", "shapes", "outputs", "auto", "break", "case", "char", "const",
      "continue", "default", "do", "double", "else", "enum", "extern", "float", "for", "goto",
      "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
      "volatile", "while", "bool", "true", "false", "class", "new", "delete", "this",
      "template", "namespace", "operator", "private", "public", "protected", "virtual"};
  std::set<std::string> used;
  auto name_of = [&](const std::string& raw) {
    std::string n = export_c_name(raw);
    while (kTaken.count(n) || used.count(n)) n += "_";
    used.insert(n);
    return n;
  };
  Names names;
  const CallPlan& plan = k.plan();
  const ir::PrimFunc& f = k.prim_func();
  for (const InputSpec& in : plan.inputs) names.inputs.push_back(name_of(f.params[in.param].name));
  for (const BufferSpec& b : plan.outputs) names.outputs.push_back(name_of(f.params[b.param].name));
  return names;
}

std::string input_params(const Kernel& k, const Names& names) {
  std::string out;
  const CallPlan& plan = k.plan();
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSpec& in = plan.inputs[i];
    out += i ? ", " : "";
    out += in.scalar ? std::string(scalar_ctype(in.dtype)) + " " : "const DLTensor* ";
    out += names.inputs[i];
  }
  return out;
}

std::string output_params(const Names& names) {
  std::string out;
  for (size_t o = 0; o < names.outputs.size(); ++o) out += (o ? ", " : "") + ("DLTensor* " + names.outputs[o]);
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : ", ") + p;
  }
  return out.empty() ? "void" : out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A fixed part of the library (src/export/runtime/), as embedded.
std::string_view fixed_text(std::string_view name) { return embedded_text(wrapper_files(), name); }

}  // namespace

std::vector<std::string> exported_symbols(const std::string& c_name) {
  return {c_name,           c_name + "_auto",       c_name + "_workspace_bytes",
          c_name + "_output_shapes", c_name + "_last_error", c_name + "_pool_bytes",
          c_name + "_auto_outputs"};
}

std::string c_header(const Kernel& k, const std::string& op, const std::string& file_name) {
  const CallPlan& plan = k.plan();
  const ir::PrimFunc& f = k.prim_func();
  const Names names = c_names(k);
  const std::string ins = input_params(k, names);
  const std::string outs = output_params(names);
  const std::string guard = "TILEJIT_EXPORT_" + upper(op) + "_H_";
  int shape_len = 0;
  for (const BufferSpec& b : plan.outputs) shape_len += b.rank;

  std::ostringstream os;
  os << "/* " << file_name << ": the C interface of kernel '" << f.name
     << "', exported by tilejit (target '" << k.target() << "').\n\n   Signature:";
  for (size_t p = 0; p < f.params.size(); ++p) {
    const ir::Param& param = f.params[p];
    const char* role = plan.roles[p] == ParamRole::kInput       ? "input"
                       : plan.roles[p] == ParamRole::kOutput    ? "output"
                                                                : "workspace";
    os << "\n     " << role << " " << param.name << ": ";
    if (param.is_scalar) {
      os << param.scalar.name() << " scalar";
    } else {
      os << param.tensor.dtype.name() << shape_text(param);
    }
  }
  const bool cuda = runtime::get_backend(k.target()).device_type() == DeviceType::kCUDA;
  if (cuda) {
    os << "\n\n   Tensors are DLPack DLTensors in the memory of one CUDA device\n"
          "   (device_type kDLCUDA, every tensor the same device_id), of the\n"
          "   declared dtype and rank, row-major contiguous (strides NULL or\n"
          "   compact); data + byte_offset is the first element. The library opens\n"
          "   the CUDA driver (libcuda.so.1) on the first call that launches; where\n"
          "   it is missing, or cuInit fails, every such call returns\n"
          "   TILEJIT_RUNTIME_ERROR and "
       << op << "_last_error() says why. A call runs in the\n"
          "   current context when it is on the tensors' device, else in that\n"
          "   device's primary context, and returns once its work is queued on\n"
          "   `stream`. Functions that return int return a TILEJIT_* status; on\n"
          "   failure " << op << "_last_error() names the argument. Every function is\n"
          "   thread-safe. */\n";
  } else {
    os << "\n\n   Tensors are DLPack DLTensors on the CPU (device_type kDLCPU), of the\n"
          "   declared dtype and rank, row-major contiguous (strides NULL or\n"
          "   compact); data + byte_offset is the first element. Functions that\n"
          "   return int return a TILEJIT_* status; on failure "
       << op << "_last_error()\n   names the argument. Every function is thread-safe. */\n";
  }
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stddef.h>\n#include <stdint.h>\n\n" << fixed_text("header_dlpack.h") << "\n"
     << fixed_text("header_common.h") << "\n";
  os << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  os << "/* Outputs, in order, and the int64 extents " << op
     << "_output_shapes() writes. */\n"
     << "#define " << upper(op) << "_NUM_OUTPUTS " << plan.outputs.size() << "\n"
     << "#define " << upper(op) << "_OUTPUT_SHAPES_LEN " << shape_len << "\n\n";
  os << "/* The workspace arena a call with these inputs needs, in bytes (a multiple\n"
        "   of 256; 0 when none), or -1 when an input is wrong (see "
     << op << "_last_error). */\n"
     << "int64_t " << op << "_workspace_bytes(" << join({ins}) << ");\n\n";
  os << "/* Writes the extents of every output, output after output in order,\n"
        "   into `shapes` (" << upper(op) << "_OUTPUT_SHAPES_LEN values). */\n"
     << "int " << op << "_output_shapes(" << join({ins, "int64_t* shapes"}) << ");\n\n";
  os << "/* Runs the kernel: checks the inputs and the outputs (the caller's memory,\n"
        "   of the shapes " << op << "_output_shapes gives), then launches. `workspace`:\n"
        "   at least " << op << "_workspace_bytes() bytes, 256-byte aligned (NULL when that\n"
        "   is 0); its zero and zero_once workspaces are zeroed on every call"
     << (cuda ? " (a memset\n   queued on `stream`). `stream`: the CUstream the launches are queued on (NULL:\n"
                "   the legacy default stream). */\n"
              : ". `stream`:\n   unused by the CPU target (pass NULL). */\n")
     << "int " << op << "(" << join({ins, outs, "void* workspace", "void* stream"}) << ");\n\n";
  os << "/* As " << op << "(), with the workspace allocated for the call: through\n"
        "   `allocator` (freed stream-ordered after the launch), or with NULL from a pool\n"
     << (cuda ? "   inside the library: device memory, one arena per size, context and stream,\n"
                "   reused only by later calls on the same stream (which runs them after the\n"
                "   earlier calls' work), so that steady-state calls allocate nothing; a call\n"
                "   on a stream that is capturing a CUDA graph gets an arena of its own that the\n"
                "   graph keeps until it and its executables are destroyed. zero_once\n"
              : "   inside the library (one arena per size, reused by later calls; zero_once\n")
     << "   workspaces are zeroed only when an arena is first used for a layout). The\n"
        "   outputs are the caller's, as for " << op << "(). */\n"
     << "int " << op << "_auto(" << join({ins, outs, "void* stream", "const tilejit_allocator* allocator"})
     << ");\n\n";
  os << "/* As " << op << "_auto(), with the outputs allocated too: writes "
     << upper(op) << "_NUM_OUTPUTS\n"
        "   DLPack managed tensors to `outputs`, in order, each from `allocator` (or,\n"
     << (cuda ? "   with NULL, cuMemAllocAsync on `stream`, or cuMemAlloc where the device has\n"
                "   no memory pools; not while the stream captures a graph), on the call's\n"
                "   device, row-major and 256-byte aligned. The caller frees each with its\n"
                "   deleter (`t->deleter(t)`), which gives the memory back to the allocator\n"
                "   (NULL: cuMemFreeAsync) on the call's stream, so that stream and\n"
                "   `allocator->user` must outlive them. On\n"
              : "   with NULL, aligned_alloc), row-major and 256-byte aligned. The caller frees\n"
                "   each with its deleter (`t->deleter(t)`), which gives the memory back to the\n"
                "   allocator (on the call's stream), so `allocator->user` must outlive them. On\n")
     << "   failure nothing is allocated and `outputs` holds NULLs. */\n"
     << "int " << op << "_auto_outputs("
     << join({ins, "DLManagedTensor** outputs", "void* stream", "const tilejit_allocator* allocator"})
     << ");\n\n";
  os << "/* The message of this thread's last failed call (\"\" before any). */\n"
     << "const char* " << op << "_last_error(void);\n\n";
  os << "/* Bytes the library's pool holds (arenas of " << op << "_auto with a NULL\n"
        "   allocator" << (cuda ? ", device memory of every context and stream" : "") << "). */\n"
     << "int64_t " << op << "_pool_bytes(void);\n\n";
  os << "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif /* " << guard << " */\n";
  return os.str();
}

std::string wrapper_source(const Kernel& k, const std::string& op, const std::string& header) {
  const CallPlan& plan = k.plan();
  const ir::PrimFunc& f = k.prim_func();
  const runtime::KernelAbi& abi = k.abi();
  const ir::ShapeProgram& program = plan.program;
  const Names names = c_names(k);
  const runtime::Backend& backend = runtime::get_backend(k.target());
  auto input_name = [&](int i) { return f.params[plan.inputs[size_t(i)].param].name; };
  // A device target (CUDA): tensors on one device of it, launches and memory
  // ordered on the call's stream.
  const bool device_target = backend.device_type() != DeviceType::kCPU;

  std::ostringstream os;
  os << "// Generated by tilejit: the C functions of the exported library of kernel '" << f.name
     << "'.\n" << header << "\n" << embedded_text(abi_files(), "abi_block.h") << "\n"
     << fixed_text("wrapper_types.h") << "\nnamespace {\n\n";
  // The constants and tables (the names the fixed code reads; the stand-in
  // runtime/wrapper_tables.h has one of each).
  os << "constexpr const char* kName = " << c_string_literal(f.name) << ";\n"
     << "constexpr int kDeviceType = " << int(backend.device_type()) << ";\n"
     << "constexpr const char* kDeviceText = "
     << c_string_literal(device_type_name(backend.device_type()) + " (target '" + k.target() + "')") << ";\n"
     << "constexpr bool kOneDevice = " << (device_target ? "true" : "false") << ";\n"
     << "constexpr bool kStreamKeyedPool = " << (device_target ? "true" : "false") << ";\n"
     << "constexpr int kNumInputs = " << plan.inputs.size() << ";\n"
     << "constexpr int kNumOutputs = " << plan.outputs.size() << ";\n"
     << "constexpr int kNumWorkspaces = " << plan.workspaces.size() << ";\n"
     << "constexpr int kNumSymbols = " << plan.symbols.size() << ";\n"
     << "constexpr int kNumResults = " << program.num_results() << ";\n"
     << "constexpr int kNumParams = " << f.params.size() << ";\n"
     << "constexpr int kNumLaunches = " << abi.launches.size() << ";\n"
     << "constexpr int kNumBindings = " << plan.bindings.size() << ";\n"
     << "constexpr int kNumChecks = " << plan.checks.size() << ";\n"
     << "constexpr int kNumAbiArgs = " << abi.args.size() << ";\n"
     << "constexpr uint32_t kBlockBytes = " << abi.block_bytes << ";\n"
     << "constexpr bool kHasZeroOnce = " << (plan.has_zero_once ? "true" : "false") << ";\n";
  uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the name: one layout tag space per kernel
  for (char c : f.name) seed = (seed ^ uint64_t(static_cast<unsigned char>(c))) * 1099511628211ULL;
  os << "constexpr uint64_t kLayoutSeed = " << seed << "ULL;\n\n";

  os << "const InputSpec kInputs[] = {\n";
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSpec& in = plan.inputs[i];
    const ir::Param& p = f.params[in.param];
    os << "  {" << c_string_literal(p.name) << ", " << in.param << ", " << (in.scalar ? 1 : 0) << ", "
       << int(in.dtype.code) << ", " << int(in.dtype.bits) << ", " << in.rank << ", {";
    for (int d = 0; d < kMaxRank; ++d) os << (d ? ", " : "") << (d < in.rank ? in.static_dims[d] : -1);
    os << "}, " << c_string_literal(in.dtype.name()) << ", " << c_string_literal(with_article(in.dtype.name())) << ", "
       << c_string_literal(in.scalar ? "" : shape_text(p)) << "},\n";
  }
  os << "  {}};\n";

  auto source_of = [&](const SymbolBinding& b) {
    if (b.dim < 0) return "scalar #" + std::to_string(b.input) + " '" + input_name(b.input) + "'";
    return input_name(b.input) + ".shape[" + std::to_string(b.dim) + "]";
  };
  os << "const Binding kBindings[] = {\n";
  for (const SymbolBinding& b : plan.bindings) {
    const ir::Param& p = f.params[plan.inputs[size_t(b.input)].param];
    os << "  {" << b.symbol << ", " << b.input << ", " << b.dim << ", " << b.coeff << "LL, "
       << b.offset << "LL, " << c_string_literal(b.dim < 0 ? "" : expr_text(p.tensor.shape[size_t(b.dim)]))
       << ", " << c_string_literal(source_of(b)) << "},\n";
  }
  os << "  {}};\n";

  os << "const DimCheck kChecks[] = {\n";
  for (const DimCheck& c : plan.checks) {
    const ir::Expr& e = f.params[plan.inputs[size_t(c.input)].param].tensor.shape[size_t(c.dim)];
    std::string symbol = "nullptr", source = "nullptr";
    if (e.is_var()) {
      const auto it = std::find(plan.symbols.begin(), plan.symbols.end(), e.var_name());
      const int slot = int(it - plan.symbols.begin());
      for (const SymbolBinding& b : plan.bindings) {
        if (b.symbol == slot) {
          symbol = c_string_literal(e.var_name());
          source = c_string_literal(source_of(b));
        }
      }
    }
    os << "  {" << c.input << ", " << c.dim << ", " << c.result << ", " << symbol << ", " << source
       << ", " << c_string_literal(expr_text(e)) << "},\n";
  }
  os << "  {}};\n";

  auto buffers = [&](const char* table, const std::vector<BufferSpec>& list) {
    os << "const BufferSpec " << table << "[] = {\n";
    for (const BufferSpec& b : list) {
      os << "  {" << c_string_literal(f.params[b.param].name) << ", " << b.param << ", " << int(b.dtype.code)
         << ", " << int(b.dtype.bits) << ", " << b.rank << ", " << b.first_result << ", "
         << int(b.init == WorkspaceInit::kZero ? 1 : b.init == WorkspaceInit::kZeroOnce ? 2 : 0)
         << ", " << b.dtype.bytes() << ", " << c_string_literal(b.dtype.name()) << ", "
         << c_string_literal(with_article(b.dtype.name())) << "},\n";
    }
    os << "  {}};\n";
  };
  buffers("kOutputs", plan.outputs);
  buffers("kWorkspaces", plan.workspaces);

  os << "const char* const kSymbolNames[] = {";
  for (const std::string& s : plan.symbols) os << c_string_literal(s) << ", ";
  os << "nullptr};\n";

  // The declared form of every buffer extent and launch extent, for errors.
  std::vector<std::string> result_expr(size_t(program.num_results()));
  for (const auto* list : {&plan.outputs, &plan.workspaces}) {
    for (const BufferSpec& b : *list) {
      for (int d = 0; d < b.rank; ++d) {
        result_expr[size_t(b.first_result + d)] = expr_text(f.params[b.param].tensor.shape[size_t(d)]);
      }
    }
  }
  for (const LaunchSpec& l : plan.launches) {
    for (int d = 0; d < 3; ++d) result_expr[size_t(l.results.grid[d])] = expr_text(l.grid[d]);
  }
  os << "const char* const kResultExpr[] = {";
  for (const std::string& e : result_expr) os << c_string_literal(e) << ", ";
  os << "nullptr};\n";

  os << "const int kLaunchGrid[][3] = {";
  for (const runtime::AbiLaunch& l : abi.launches) {
    os << "{" << l.grid[0] << ", " << l.grid[1] << ", " << l.grid[2] << "}, ";
  }
  os << "{0, 0, 0}};\n";
  // Each launch's dynamic shared memory: results[index] + bytes.
  os << "const int64_t kLaunchSmem[][2] = {";
  for (const runtime::AbiLaunch& l : abi.launches) os << "{" << l.smem << ", " << l.smem_bytes << "}, ";
  os << "{0, 0}};\n";

  os << "const AbiArgSpec kAbiArgs[] = {\n";
  for (const runtime::AbiArg& a : abi.args) {
    os << "  {" << int(a.kind) << ", " << a.source << ", " << a.offset << ", " << a.size << "},\n";
  }
  os << "  {}};\n";
  // Note [Tensor maps]: encoded at each call by the launcher.
  int num_maps = 0;
  os << "const TensorMapSpec kTensorMaps[] = {\n";
  for (size_t i = 0; i < abi.args.size(); ++i) {
    const runtime::AbiArg& a = abi.args[i];
    if (a.kind != runtime::AbiArgKind::kTensorMap) continue;
    const runtime::AbiTensorMap& t = a.tensor_map;
    os << "  {" << i << ", " << a.dtype.bytes() << ", " << int(t.rank) << ", " << int(t.swizzle)
       << ", {";
    for (int d = 0; d < runtime::AbiTensorMap::kMaxRank; ++d) os << (d ? ", " : "") << t.dims[d] << "LL";
    os << "}, {";
    for (int d = 0; d < runtime::AbiTensorMap::kMaxRank; ++d) os << (d ? ", " : "") << t.box[d] << "u";
    os << "}, " << c_string_literal(a.name) << "},\n";
    num_maps += 1;
  }
  os << "  {}};\nconstexpr int kNumTensorMaps = " << num_maps << ";\n\n";

  // The shape program as straight-line code: ir::ShapeProgram::run, one
  // statement per instruction, its failures ORed into two flags.
  os << "inline int64_t floordiv_i(int64_t a, int64_t b) {\n"
        "  int64_t q = a / b;\n  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n"
        "inline int64_t floormod_i(int64_t a, int64_t b) {\n"
        "  int64_t r = a % b;\n  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n"
        "inline int64_t ceildiv_i(int64_t a, int64_t b) {\n"
        "  int64_t q = a / b;\n  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;\n}\n"
        "// Division by zero: 0 and the flag; by -1: negation (INT64_MIN / -1 overflows).\n"
        "inline int64_t div_op(int op, int64_t a, int64_t b, bool* dz, bool* of) {\n"
        "  int64_t v = 0;\n"
        "  if (b == 0) { *dz = true; return 0; }\n"
        "  if (b == -1) { if (op != 1) *of |= __builtin_sub_overflow(int64_t{0}, a, &v); return v; }\n"
        "  return op == 0 ? floordiv_i(a, b) : op == 1 ? floormod_i(a, b) : ceildiv_i(a, b);\n"
        "}\n\n";
  os << "unsigned run_program(const int64_t* s, int64_t* res) {\n"
     << "  int64_t r[" << std::max({1, program.num_registers(), program.num_symbols()}) << "];\n"
     << "  bool dz = false, of = false;\n"
     << "  (void)dz; (void)of;\n";
  for (int i = 0; i < program.num_symbols(); ++i) os << "  r[" << i << "] = s[" << i << "];\n";
  using Op = ir::ShapeProgram::Op;
  for (const ir::ShapeProgram::Instr& in : program.instructions()) {
    const std::string dst = "r[" + std::to_string(in.dst) + "]";
    const std::string a = "r[" + std::to_string(in.a) + "]", b = "r[" + std::to_string(in.b) + "]";
    switch (in.op) {
      case Op::kConst:
        if (in.imm == INT64_MIN) {
          os << "  " << dst << " = INT64_MIN;\n";
        } else {
          os << "  " << dst << " = " << in.imm << "LL;\n";
        }
        break;
      case Op::kAdd: os << "  of |= __builtin_add_overflow(" << a << ", " << b << ", &" << dst << ");\n"; break;
      case Op::kSub: os << "  of |= __builtin_sub_overflow(" << a << ", " << b << ", &" << dst << ");\n"; break;
      case Op::kMul: os << "  of |= __builtin_mul_overflow(" << a << ", " << b << ", &" << dst << ");\n"; break;
      case Op::kMin: os << "  " << dst << " = " << a << " < " << b << " ? " << a << " : " << b << ";\n"; break;
      case Op::kMax: os << "  " << dst << " = " << a << " < " << b << " ? " << b << " : " << a << ";\n"; break;
      case Op::kFloorDiv: os << "  " << dst << " = div_op(0, " << a << ", " << b << ", &dz, &of);\n"; break;
      case Op::kFloorMod: os << "  " << dst << " = div_op(1, " << a << ", " << b << ", &dz, &of);\n"; break;
      case Op::kCeilDiv: os << "  " << dst << " = div_op(2, " << a << ", " << b << ", &dz, &of);\n"; break;
    }
  }
  const std::vector<int32_t>& regs = program.result_registers();
  for (size_t i = 0; i < regs.size(); ++i) os << "  res[" << i << "] = r[" << regs[i] << "];\n";
  os << "  return (dz ? 1u : 0u) | (of ? 2u : 0u);\n}\n";

  os << "\n}  // namespace\n\n" << fixed_text("wrapper_check.cpp") << "\n"
     << fixed_text("wrapper_call.cpp") << "\n";

  // The C functions: each gathers its arguments into the arrays the fixed
  // code takes.
  const std::string ins = input_params(k, names);
  const std::string outs = output_params(names);
  std::ostringstream gather;
  gather << "  const DLTensor* in[kNumInputs + 1] = {";
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    gather << (plan.inputs[i].scalar ? "nullptr" : names.inputs[i]) << ", ";
  }
  gather << "nullptr};\n  Scalar sc[kNumInputs + 1];\n  memset(sc, 0, sizeof sc);\n";
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSpec& in = plan.inputs[i];
    if (!in.scalar) continue;
    const char* field = in.dtype == DataType::int32() ? "i32" : in.dtype == DataType::int64() ? "i64" : "f32";
    gather << "  sc[" << i << "]." << field << " = " << names.inputs[i] << ";\n";
  }
  gather << "  (void)in;\n  (void)sc;\n";
  std::ostringstream out_gather;
  out_gather << "  DLTensor* out[kNumOutputs + 1] = {";
  for (const std::string& n : names.outputs) out_gather << n << ", ";
  out_gather << "nullptr};\n";

  os << "TJ_API int64_t " << op << "_workspace_bytes(" << join({ins}) << ") {\n" << gather.str()
     << "  return workspace_bytes(in, sc);\n}\n\n";
  os << "TJ_API int " << op << "_output_shapes(" << join({ins, "int64_t* shapes"}) << ") {\n"
     << gather.str() << "  return output_shapes(in, sc, shapes);\n}\n\n";
  os << "TJ_API int " << op << "(" << join({ins, outs, "void* workspace", "void* stream"}) << ") {\n"
     << gather.str() << out_gather.str()
     << "  return call(in, sc, out, workspace, false, stream, nullptr);\n}\n\n";
  os << "TJ_API int " << op << "_auto("
     << join({ins, outs, "void* stream", "const tilejit_allocator* allocator"}) << ") {\n"
     << gather.str() << out_gather.str()
     << "  return call(in, sc, out, nullptr, true, stream, allocator);\n}\n\n";
  os << "TJ_API int " << op << "_auto_outputs("
     << join({ins, "DLManagedTensor** outputs", "void* stream", "const tilejit_allocator* allocator"})
     << ") {\n" << gather.str() << "  return call_allocating(in, sc, outputs, stream, allocator);\n}\n\n";
  os << "TJ_API const char* " << op << "_last_error(void) { return g_error; }\n\n";
  os << "TJ_API int64_t " << op << "_pool_bytes(void) { return pool_bytes(); }\n";
  return os.str();
}

}  // namespace tilejit::exporter

// libFuzzer target over declaration, legalisation and binding (issue 5).
//
// The input bytes, read front to back (zeros once they run out), decide:
//  - a signature: 1 to 8 parameters, tensors of rank 0 to 4 whose extents
//    are constants, symbols (a, b, c, d) and sums, differences, products,
//    powers, affine forms, floordiv, floormod, ceildiv, min and max of them,
//    and scalars (some named after a symbol, binding it); a grid, threads and
//    dynamic shared memory;
//  - out_idx and workspace_idx (ints in [-10, 10], duplicates allowed) and
//    workspace init policies;
//  - a few calls: symbol values (some huge: 2^32, 65536, near the square
//    and cube roots of 2^63, so that shapes overflow int64; scalars named
//    after a symbol pass them in), from which most inputs get the extents
//    the signature asks for (so calls get past the checks) and some get
//    wrong ones, wrong dtypes, ranks, devices, strides, kinds or counts;
//    sometimes out= and workspace= buffers.
// It runs build(), jit() (target "fuzz", a backend registered here whose
// module launches nothing), the calls, workspace_bytes() and
// workspace_layout(). Only tilejit::Error may come out; anything else, a
// sanitizer report, or a broken invariant (a lease still held, a layout
// that overlaps, a launch that disagrees with the layout, a shape that
// differs from its exact value: one that wrapped) is a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tilejit/ir/shape_program.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/tilejit.h"

namespace {

using namespace tilejit;

// TILEJIT_FUZZ_VERBOSE=1 prints what each input did (for seeds and crashes).
bool verbose() {
  static const bool v = std::getenv("TILEJIT_FUZZ_VERBOSE") != nullptr;
  return v;
}

void report(const char* stage, const Error* e) {
  if (!verbose()) return;
  if (e) {
    std::fprintf(stderr, "%s: %s\n", stage, e->what());
  } else {
    std::fprintf(stderr, "%s: ok\n", stage);
  }
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_signature: invariant broken: %s\n", what);
  std::abort();
}
#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) fail(#cond); \
  } while (0)

// ---- the "fuzz" backend ------------------------------------------------------

constexpr size_t kAllocCap = size_t{1} << 20;

class CappedAllocator final : public runtime::Allocator {
 public:
  void* allocate(size_t bytes, Device, runtime::Stream) override {
    if (bytes > kAllocCap) return nullptr;  // "out of memory": the pool retries, then raises
    return std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  }
  void deallocate(void* ptr, size_t, Device, runtime::Stream) noexcept override { std::free(ptr); }
};

class CappedTensorAllocator final : public runtime::TensorAllocator {
 public:
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream) override {
    // Checked over the nonzero extents, as Tensor::from_blob does.
    int64_t bytes = dtype.bytes();
    bool empty = false;
    for (int64_t d : shape) {
      empty = empty || d == 0;
      if (d < 0 || (d != 0 && __builtin_mul_overflow(bytes, d, &bytes)) ||
          bytes > int64_t(kAllocCap)) {
        TILEJIT_THROW(kOutOfMemoryError) << "fuzz tensor allocator: too large";
      }
    }
    if (empty) bytes = 0;
    void* p = std::aligned_alloc(256, (size_t(bytes) + 256) / 256 * 256);
    return Tensor::from_blob(p, shape, dtype, device, [](void* c) noexcept { std::free(c); }, p);
  }
};

// What the last launch received, for checking against the layout.
struct LastLaunch {
  bool happened = false;
  std::vector<void*> args;
  int64_t grid[3] = {0, 0, 0};
  std::vector<int64_t> symbols;
};
LastLaunch g_launch;

class NoOpModule final : public runtime::Module {
 public:
  explicit NoOpModule(const runtime::KernelAbi& abi) : launch_(abi.launches.at(0)) {}
  void launch(const runtime::LaunchParams& p) override {
    g_launch.happened = true;
    g_launch.args.assign(p.args, p.args + p.num_args);
    for (int d = 0; d < 3; ++d) {
      FUZZ_CHECK(launch_.grid[d] < p.num_results);
      g_launch.grid[d] = p.results[launch_.grid[d]];
    }
    g_launch.symbols.assign(p.symbols, p.symbols + p.num_symbols);
  }

 private:
  runtime::AbiLaunch launch_;  // where the grid is among the results
};

class FuzzBackend final : public runtime::Backend {
 public:
  const std::string& target() const override { return target_; }
  DeviceType device_type() const override { return DeviceType::kCPU; }
  bool available() const override { return true; }
  Device default_device() const override { return Device::cpu(); }
  int auto_rank(const ir::PrimFunc&) const override { return -1; }  // only by name
  runtime::GeneratedSource generate(const runtime::SourceRequest& request) const override {
    // One launch at the plan's result indices; no arguments (NoOpModule
    // reads the values, not a block).
    runtime::KernelAbi abi;
    runtime::AbiLaunch launch;
    launch.entry = "fuzz_entry";
    for (int d = 0; d < 3; ++d) launch.grid[d] = request.launches[0].grid[d];
    launch.smem = request.launches[0].smem;
    abi.launches.push_back(launch);
    return {"// fuzz\n", abi};
  }
  std::string toolchain_key(const runtime::CompileOptions&, Device) override { return "fuzz"; }
  std::string compile(const std::string&, const std::string&, const runtime::CompileOptions&,
                      Device) override {
    return "x";
  }
  std::unique_ptr<runtime::Module> load(const std::string& binary, const runtime::KernelAbi& abi,
                                        Device) override {
    FUZZ_CHECK(binary == "x");
    return std::make_unique<NoOpModule>(abi);
  }
  runtime::Allocator& allocator() override { return allocator_; }
  runtime::TensorAllocator& tensor_allocator() override { return tensor_allocator_; }
  void memset_async(void* ptr, int value, size_t bytes, Device, runtime::Stream) override {
    std::memset(ptr, value, bytes);
  }

 private:
  const std::string target_ = "fuzz";
  CappedAllocator allocator_;
  CappedTensorAllocator tensor_allocator_;
};

runtime::Backend& fuzz_backend() {
  static runtime::Backend* backend = [] {
    auto b = std::make_unique<FuzzBackend>();
    runtime::Backend* raw = b.get();
    runtime::register_backend(std::move(b));
    runtime::CompileCache::global().set_disk_dir("");
    return raw;
  }();
  return *backend;
}

// ---- reading the input -------------------------------------------------------

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  /// 0 .. k - 1.
  int pick(int k) { return u8() % k; }
  bool one_in(int k) { return pick(k) == 0; }
  int64_t i64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | u8();
    return int64_t(v);
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

const char* const kSymbols[] = {"a", "b", "c", "d"};
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
const int64_t kSpecial[] = {0,  1,       2,       3,        4,         7,
                            16, 64,      255,     256,      1 << 20,   int64_t{1} << 31,
                            -1, -5,      kMax,    kMin,     kMax / 2,  int64_t{1} << 40,
                            // Where products overflow int64: 65536^4 = 2^64,
                            // 2^32 squared, the square root of 2^63 and one
                            // past it, the cube root, and 2^62.
                            65536, int64_t{1} << 32, 3037000499, 3037000500, 2097152,
                            int64_t{1} << 62};

const DataType kDtypes[] = {DataType::float64(), DataType::float32(), DataType::float16(),
                            DataType::bfloat16(), DataType::int8(),   DataType::int16(),
                            DataType::int32(),    DataType::int64(),  DataType::uint8(),
                            DataType::boolean()};

DataType any_dtype(Bytes& in) {
  if (in.one_in(32)) return DataType(DataType::kUInt, 16);  // unsupported
  return kDtypes[in.pick(10)];
}

// Operands are read in order, one statement each: the order in which C++
// evaluates the operands of `f(x) + f(y)` is unspecified, and an input must
// mean the same signature to every compiler.
Expr gen_expr(Bytes& in, int depth) {
  const int op = in.pick(depth > 0 ? 16 : 4);
  auto symbol = [&] { return symbolic(kSymbols[in.pick(4)]); };
  if (op == 0) return Expr(int64_t(in.pick(9)));
  if (op <= 2) return symbol();
  if (op == 3) return Expr(kSpecial[in.pick(sizeof kSpecial / sizeof kSpecial[0])]);
  if (op == 7) {  // c * s + k
    const Expr c = Expr(int64_t(in.pick(8)) - 3);
    const Expr s = symbol();
    return c * s + Expr(int64_t(in.pick(13)) - 4);
  }
  if (op == 13) {
    const Expr x = symbol();
    return x * symbol();
  }
  if (op == 14) {
    const Expr c = Expr(int64_t(in.pick(5)) + 1);
    return c * symbol();
  }
  if (op == 15) {  // s^2 .. s^5, or s^k + c
    const Expr s = symbol();
    Expr p = s;
    for (int k = 1 + in.pick(4); k > 0; --k) p = p * s;
    return in.one_in(2) ? p : p + Expr(int64_t(in.pick(9)));
  }
  const Expr x = gen_expr(in, depth - 1);
  const Expr y = gen_expr(in, depth - 1);
  switch (op) {
    case 4: return x + y;
    case 5: return x - y;
    case 6: return x * y;
    case 8: return floordiv(x, y);
    case 9: return floormod(x, y);
    case 10: return ceildiv(x, y);
    case 11: return ir::min(x, y);
    default: return ir::max(x, y);
  }
}

std::string param_name(Bytes& in, int index, bool scalar) {
  switch (in.pick(16)) {
    case 0: return kSymbols[in.pick(4)];            // a symbol's name
    case 1: return "P" + std::to_string(in.pick(3));  // maybe a duplicate
    case 2: return in.one_in(2) ? "bx" : "2x";      // reserved, not an identifier
    default:
      if (scalar && in.one_in(2)) return kSymbols[in.pick(4)];  // binds the symbol
      return "P" + std::to_string(index);
  }
}

ir::PrimFunc gen_func(Bytes& in) {
  ir::PrimFuncBuilder b = prim_func(in.one_in(64) ? "9bad" : "fz");
  const int params = 1 + in.pick(8);
  for (int i = 0; i < params; ++i) {
    if (in.pick(8) < 6) {
      const std::string name = param_name(in, i, false);
      const DataType dtype = any_dtype(in);
      std::vector<Expr> shape;
      const int rank = in.pick(5);
      for (int d = 0; d < rank; ++d) shape.push_back(gen_expr(in, 2));
      b.tensor(name, std::move(shape), dtype);
    } else {
      const DataType scalar_types[] = {DataType::int32(), DataType::int64(), DataType::float32(),
                                       DataType::float64()};
      const std::string name = param_name(in, i, true);
      b.scalar(name, scalar_types[in.pick(in.one_in(16) ? 4 : 3)]);
    }
  }
  const int grid = in.one_in(32) ? in.pick(5) : 1 + in.pick(3);  // sometimes 0 or 4 extents
  if (in.pick(4) != 0) {
    std::vector<Expr> extents;
    for (int d = 0; d < grid; ++d) extents.push_back(gen_expr(in, 2));
    b.grid(std::move(extents));
  }
  if (in.one_in(16)) b.threads(in.one_in(2) ? 0 : 1 + in.pick(255) * 8);
  if (in.one_in(8)) b.dynamic_smem(gen_expr(in, 1));
  b.body("fuzz", "");
  return b.build();
}

IndexSpec gen_indices(Bytes& in) {
  switch (in.pick(4)) {
    case 0: return IndexSpec();
    case 1: return IndexSpec(int64_t(in.pick(21)) - 10);
    default: {
      std::vector<int64_t> v;
      const int count = in.pick(4);
      for (int i = 0; i < count; ++i) v.push_back(int64_t(in.pick(21)) - 10);
      return IndexSpec(std::move(v));
    }
  }
}

// ---- calls -------------------------------------------------------------------

// Inputs' data is never read or written (the module launches nothing), so
// any extents will do over this buffer. Supplied arenas are written
// (zeroed workspaces), so they stay inside kArena.
alignas(256) uint8_t g_data[64];
constexpr size_t kArena = size_t{1} << 16;
alignas(256) uint8_t g_arena[kArena + 256];

int64_t symbol_value(Bytes& in) {
  const int64_t small[] = {0, 1, 2, 3, 4, 5, 8, 16, 100};
  if (in.one_in(8)) return kSpecial[in.pick(sizeof kSpecial / sizeof kSpecial[0])];
  return small[in.pick(9)];
}

// An extent of the declared expression at these symbol values, or a wrong
// one. Never negative (Tensor refuses those: a case of its own below).
int64_t extent(Bytes& in, const Expr& e, const int64_t* symbols) {
  if (in.one_in(8)) return symbol_value(in);
  int64_t v = 1;
  try {
    v = ir::evaluate(e, [&](const std::string& name) {
      for (int s = 0; s < 4; ++s) {
        if (name == kSymbols[s]) return symbols[s];
      }
      return int64_t{1};
    });
  } catch (const Error&) {
  }
  return v < 0 ? 0 : v;
}

// Tensor::from_blob rejects shapes whose nonzero extents multiply past int64
// (a bug this target found; see tests/cpp/reliability/test_fuzz_findings.cpp).
// The harness keeps its own tensors under 2^56 so that the fuzzer spends its
// time on declarations and binding rather than on that one check.
bool element_count_fits(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0) continue;
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 56)) return false;
  }
  return true;
}

struct CallInputs {
  std::vector<Tensor> tensors;  // kept alive for the Args that point at them
  std::vector<Arg> args;
};

void gen_inputs(Bytes& in, const Kernel& k, const int64_t* symbols, CallInputs* out) {
  const CallPlan& plan = k.plan();
  const ir::PrimFunc& f = k.prim_func();
  out->tensors.reserve(plan.inputs.size() + 2);
  for (const InputSpec& spec : plan.inputs) {
    const ir::Param& p = f.params[spec.param];
    const int mode = in.pick(24);
    if (mode == 0) {
      out->args.emplace_back();  // None
      continue;
    }
    if (mode == 1 || (spec.scalar && mode < 16)) {
      if (mode == 1 || spec.dtype != DataType::float32() || in.one_in(2)) {
        int64_t v = in.one_in(4) ? in.i64() : symbol_value(in);
        for (int s = 0; s < 4; ++s) {
          if (p.name == kSymbols[s] && !in.one_in(8)) v = symbols[s];
        }
        out->args.emplace_back(static_cast<long long>(v));
      } else {
        out->args.emplace_back(double(symbol_value(in)) * 0.5);
      }
      continue;
    }
    if (mode == 2) {
      out->args.emplace_back(1.5);
      continue;
    }
    if (mode == 3) {
      out->tensors.emplace_back();  // undefined
      out->args.emplace_back(out->tensors.back());
      continue;
    }
    // A tensor: as declared, or not quite.
    DataType dtype = spec.scalar || in.one_in(16) ? any_dtype(in) : spec.dtype;
    std::vector<int64_t> shape;
    if (!spec.scalar && !in.one_in(16)) {
      for (const Expr& e : p.tensor.shape) shape.push_back(extent(in, e, symbols));
    } else {
      const int rank = in.pick(5);
      for (int d = 0; d < rank; ++d) shape.push_back(symbol_value(in) & 0xffff);
    }
    if (!element_count_fits(shape)) shape.assign(shape.size(), 1);
    Device device = Device::cpu();
    if (in.one_in(32)) device = Device::cuda(in.pick(2));
    if (in.one_in(32)) device = Device{DeviceType::kCPU, 1};
    std::vector<int64_t> strides;
    if (in.one_in(16)) {
      for (size_t d = 0; d < shape.size(); ++d) strides.push_back(int64_t(in.pick(5)) - 1);
    }
    if (in.one_in(64)) {
      // A negative extent: Tensor refuses it.
      shape.push_back(-1 - in.pick(4));
    }
    out->tensors.push_back(
        Tensor::from_blob(g_data, shape, dtype, device, nullptr, nullptr, strides));
    out->args.emplace_back(out->tensors.back());
  }
  if (in.one_in(16) && !out->args.empty()) out->args.pop_back();
  if (in.one_in(16)) out->args.emplace_back(7);
}

// workspace_layout() must describe one aligned arena of non-overlapping
// slices that fits in workspace_bytes().
void check_layout(const std::vector<WorkspaceSlice>& layout, size_t bytes) {
  size_t end = 0;
  for (const WorkspaceSlice& s : layout) {
    FUZZ_CHECK(s.offset % 256 == 0);
    FUZZ_CHECK(s.offset >= end);
    FUZZ_CHECK(s.bytes <= bytes && s.offset <= bytes - s.bytes);
    uint64_t size = uint64_t(s.dtype.bytes());
    for (int64_t d : s.shape) {
      FUZZ_CHECK(d >= 0);
      FUZZ_CHECK(!__builtin_mul_overflow(size, uint64_t(d), &size));
    }
    FUZZ_CHECK(size == s.bytes);
    end = s.offset + s.bytes;
  }
  FUZZ_CHECK(bytes % 256 == 0);
  FUZZ_CHECK(bytes <= size_t(kMax));
  FUZZ_CHECK(layout.empty() || bytes >= end);
}

// The value of `e` at the last launch's symbols, evaluated exactly; false
// when it divides by zero, overflows int64, or names a symbol the plan does
// not have (one that simplification removed).
bool exact_value(const CallPlan& plan, const Expr& e, int64_t* value) {
  bool missing = false;
  auto lookup = [&](const std::string& name) -> int64_t {
    for (size_t s = 0; s < plan.symbols.size(); ++s) {
      if (plan.symbols[s] == name) return g_launch.symbols[s];
    }
    missing = true;
    return 0;
  };
  return ir::try_evaluate(e, lookup, value) == ir::EvalStatus::kOk && !missing;
}

// A shape of a call that succeeded is exact (Note [Integer semantics]):
// the declared form or the simplified one the call evaluates computes it,
// and whichever of them evaluates agrees with it. A wrapped value would
// differ from both, or be a value where neither has one.
void check_exact(const CallPlan& plan, const Expr& declared, int64_t got) {
  int64_t as_declared = 0, simplified = 0;
  const bool declared_ok = exact_value(plan, declared, &as_declared);
  const bool simplified_ok = exact_value(plan, ir::simplify(declared), &simplified);
  FUZZ_CHECK(declared_ok || simplified_ok);
  FUZZ_CHECK(!declared_ok || got == as_declared);
  FUZZ_CHECK(!simplified_ok || got == simplified);
}

void check_pools_idle() {
  for (int32_t id : {0, 1}) {
    const auto s =
        runtime::WorkspacePool::get(fuzz_backend(), Device{DeviceType::kCPU, id}).stats();
    FUZZ_CHECK(s.bytes_in_use == 0);
  }
}

void run_call(Bytes& in, const Kernel& k) {
  int64_t symbols[4];
  for (int64_t& s : symbols) s = symbol_value(in);
  CallInputs inputs;
  gen_inputs(in, k, symbols, &inputs);
  const std::span<const Arg> args(inputs.args);
  const CallPlan& plan = k.plan();

  CallOptions options;
  std::vector<Tensor> outs;
  if (in.one_in(8)) {
    const size_t count = in.one_in(8) ? size_t(in.pick(3)) : plan.outputs.size();
    for (size_t o = 0; o < count; ++o) {
      if (in.one_in(4)) {
        outs.emplace_back();
        continue;
      }
      std::vector<int64_t> shape;
      const int rank = in.one_in(4) ? in.pick(5)
                                    : (o < plan.outputs.size() ? plan.outputs[o].rank : 1);
      for (int d = 0; d < rank; ++d) shape.push_back(symbol_value(in) & 0xffff);
      if (!element_count_fits(shape)) shape.assign(shape.size(), 1);
      const DataType dtype =
          o < plan.outputs.size() && !in.one_in(8) ? plan.outputs[o].dtype : any_dtype(in);
      outs.push_back(Tensor::from_blob(g_data, shape, dtype, Device::cpu()));
    }
    options.out = outs;
  }
  if (in.one_in(8)) {
    const size_t offset = in.one_in(4) ? size_t(8 * in.pick(32)) : 0;
    const int64_t bytes = int64_t(in.u8()) << in.pick(9);  // up to 255 * 256 < kArena
    const Device device = in.one_in(16) ? Device::cuda(0) : Device::cpu();
    options.workspace = Tensor::from_blob(g_arena + offset, std::vector<int64_t>{bytes},
                                          DataType::uint8(), device);
  }

  g_launch = LastLaunch();
  bool called = false;
  try {
    Outputs result = k.call(args, options);
    called = true;
    FUZZ_CHECK(result.size() == plan.outputs.size());
    for (size_t o = 0; o < result.size(); ++o) {
      FUZZ_CHECK(result[o].defined());
      FUZZ_CHECK(result[o].dtype() == plan.outputs[o].dtype);
      FUZZ_CHECK(result[o].ndim() == plan.outputs[o].rank);
      FUZZ_CHECK(result[o].is_contiguous());
    }
    FUZZ_CHECK(g_launch.happened);
    FUZZ_CHECK(int(g_launch.args.size()) == int(k.prim_func().params.size()));
    FUZZ_CHECK(g_launch.symbols.size() == plan.symbols.size());
    const ir::PrimFunc& f = k.prim_func();
    for (int d = 0; d < 3; ++d) {
      FUZZ_CHECK(g_launch.grid[d] > 0);
      check_exact(plan, size_t(d) < f.launch.grid.size() ? f.launch.grid[d] : Expr(1),
                  g_launch.grid[d]);
    }
    for (size_t o = 0; o < result.size(); ++o) {
      const std::vector<Expr>& shape = f.params[plan.outputs[o].param].tensor.shape;
      for (size_t d = 0; d < shape.size(); ++d) check_exact(plan, shape[d], result[o].shape(d));
    }
    report("call", nullptr);
  } catch (const Error& e) {
    report("call", &e);
  }
  check_pools_idle();

  // The same inputs through workspace_bytes() and workspace_layout(): they
  // check as a call does, and agree with the launch.
  try {
    const size_t bytes = k.workspace_bytes(args);
    const std::vector<WorkspaceSlice> layout = k.workspace_layout(args);
    FUZZ_CHECK(layout.size() == plan.workspaces.size());
    check_layout(layout, bytes);
    if (called) {
      for (size_t w = 0; w < layout.size(); ++w) {
        const std::vector<Expr>& shape =
            k.prim_func().params[plan.workspaces[w].param].tensor.shape;
        FUZZ_CHECK(layout[w].shape.size() == shape.size());
        for (size_t d = 0; d < shape.size(); ++d) check_exact(plan, shape[d], layout[w].shape[d]);
      }
    }
    if (called && bytes > 0 && !options.workspace.defined()) {
      const char* base = static_cast<const char*>(g_launch.args[plan.workspaces[0].param]);
      FUZZ_CHECK(reinterpret_cast<uintptr_t>(base) % 256 == 0);
      for (size_t w = 0; w < layout.size(); ++w) {
        const char* p = static_cast<const char*>(g_launch.args[plan.workspaces[w].param]);
        FUZZ_CHECK(p == base + layout[w].offset);
      }
    }
  } catch (const Error&) {
    // A call that succeeded cannot fail here: the same checks passed. (A
    // call may fail where these succeed: out=, workspace=, allocation.)
    FUZZ_CHECK(!called);
  }
  check_pools_idle();
}

void run(Bytes& in) {
  const ir::PrimFunc f = gen_func(in);
  JitOptions o;
  o.out_idx = gen_indices(in);
  o.workspace_idx = gen_indices(in);
  o.target = "fuzz";
  o.disk_cache = false;
  if (in.one_in(4)) {
    const WorkspaceInit inits[] = {WorkspaceInit::kEmpty, WorkspaceInit::kZero,
                                   WorkspaceInit::kZeroOnce};
    const int count = 1 + in.pick(3);
    for (int i = 0; i < count; ++i) {
      const std::string name = in.one_in(8) ? "nope" : "P" + std::to_string(in.pick(8));
      o.workspace_init[name] = inits[in.pick(3)];
    }
  }
  const Kernel k = jit(f, o);
  report("jit", nullptr);
  const int calls = 1 + in.pick(4);
  for (int c = 0; c < calls; ++c) run_call(in, k);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_backend();
  Bytes in(data, size);
  try {
    run(in);
  } catch (const tilejit::Error& e) {
    // Bad declarations and options are errors, not crashes.
    report("stopped", &e);
  }
  check_pools_idle();
  return 0;
}

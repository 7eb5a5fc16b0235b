#include "tilejit/jit/call_plan.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <sstream>

#include "tilejit/core/error.h"
#include "tilejit/ir/simplify.h"

namespace tilejit {
namespace {

int symbol_slot(const std::vector<std::string>& symbols, const std::string& name) {
  auto it = std::find(symbols.begin(), symbols.end(), name);
  return it == symbols.end() ? -1 : int(it - symbols.begin());
}

// Fails, at jit time, when `e` uses a symbol that no binding provides.
// `where` describes the place: "the shape of output 'C' (parameter #2,
// dimension 0".
void require_bound(const ir::PrimFunc& f, const std::vector<std::string>& symbols,
                   const std::vector<int>& bound, const ir::Expr& e, const std::string& where) {
  std::vector<std::string> vars;
  ir::collect_vars(e, &vars);
  for (const std::string& v : vars) {
    const int slot = symbol_slot(symbols, v);
    TILEJIT_CHECK(slot >= 0 && bound[slot] >= 0, kValueError)
        << f.name << ": symbol '" << v << "' in " << where << ": " << e
        << ") is not bound by any input; give an input a dimension '" << v
        << "' (or an affine form of it such as 2 * " << v
        << ") or add a scalar parameter named '" << v << "'";
  }
}

std::string dim_place(const char* role, const ir::Param& p, int param, size_t d) {
  std::ostringstream os;
  os << "the shape of " << role << " '" << p.name << "' (parameter #" << param << ", dimension "
     << d;
  return os.str();
}

// The grid and the dynamic shared memory of each launch of `f`, in order.
std::vector<std::pair<std::vector<ir::Expr>, ir::Expr>> launch_exprs(const ir::PrimFunc& f) {
  std::vector<std::pair<std::vector<ir::Expr>, ir::Expr>> out;
  if (const ir::TileBody* tile = f.tile()) {
    for (const ir::KernelStmt* k : tile->kernels()) out.emplace_back(k->grid, ir::Expr(0));
    if (!out.empty()) return out;
  }
  out.emplace_back(f.launch.grid, f.launch.dynamic_smem_bytes);
  return out;
}

}  // namespace

CallPlan build_call_plan(const ir::PrimFunc& f, const LegalizedIndices& indices,
                         const JitOptions& options) {
  static std::atomic<uint64_t> next_id{1};
  CallPlan plan;
  plan.kernel_name = f.name;
  plan.id = next_id.fetch_add(1);
  TILEJIT_CHECK(f.params.size() <= size_t(kMaxParams), kValueError)
      << f.name << ": " << f.params.size() << " parameters; at most " << kMaxParams
      << " are supported";

  plan.roles.assign(f.params.size(), ParamRole::kInput);
  for (int p : indices.outputs) plan.roles[p] = ParamRole::kOutput;
  for (int p : indices.workspaces) plan.roles[p] = ParamRole::kWorkspace;
  // T.alloc_global buffers, made parameters by transform::plan_workspaces.
  const ir::TileBody* tile = f.tile();
  const std::vector<int> no_globals;
  const std::vector<int>& globals = tile ? tile->global_params : no_globals;
  for (int p : globals) plan.roles[p] = ParamRole::kWorkspace;

  // Simplified shapes, so that `s * 1` binds like `s` and static extents
  // written as expressions (4 * 16) count as static.
  std::vector<std::vector<ir::Expr>> shapes(f.params.size());
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].is_scalar) continue;
    for (const ir::Expr& e : f.params[i].tensor.shape) shapes[i].push_back(ir::simplify(e));
  }
  // The launches: a source body's one, or one per T.Kernel of a tile body
  // (the CPU needs no shared memory; a GPU lowering's sizes are its own).
  // The spec keeps the author's expressions for messages; the program gets
  // them simplified.
  std::vector<std::array<ir::Expr, 4>> launch_values;
  for (const auto& [grid, smem] : launch_exprs(f)) {
    LaunchSpec l;
    std::array<ir::Expr, 4>& v = launch_values.emplace_back();
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = size_t(d) < grid.size() ? grid[size_t(d)] : ir::Expr(1);
      v[d] = ir::simplify(l.grid[d]);
    }
    l.smem = smem;
    v[3] = ir::simplify(smem);
    plan.launches.push_back(l);
  }

  for (const auto& shape : shapes) {
    for (const ir::Expr& e : shape) ir::collect_vars(e, &plan.symbols);
  }
  for (const auto& v : launch_values) {
    for (const ir::Expr& e : v) ir::collect_vars(e, &plan.symbols);
  }
  TILEJIT_CHECK(plan.symbols.size() <= size_t(kMaxSymbols), kValueError)
      << f.name << ": " << plan.symbols.size() << " symbols; at most " << kMaxSymbols
      << " are supported";

  for (size_t i = 0; i < f.params.size(); ++i) {
    if (plan.roles[i] != ParamRole::kInput) continue;
    const ir::Param& p = f.params[i];
    InputSpec in;
    in.param = int(i);
    in.scalar = p.is_scalar;
    in.dtype = p.is_scalar ? p.scalar : p.tensor.dtype;
    in.rank = p.is_scalar ? 0 : int(p.tensor.shape.size());
    in.static_dims.fill(-1);
    for (int d = 0; d < in.rank; ++d) {
      if (shapes[i][d].is_const()) in.static_dims[d] = shapes[i][d].int_value();
    }
    plan.inputs.push_back(in);
  }

  // Bindings: scalars, then plain dimensions, then affine ones (Note [Call plan]).
  std::vector<int> bound(plan.symbols.size(), -1);
  std::vector<std::vector<bool>> is_source(plan.inputs.size());
  auto bind = [&](int slot, int input, int dim, int64_t coeff, int64_t offset) {
    bound[slot] = int(plan.bindings.size());
    plan.bindings.push_back({slot, input, dim, coeff, offset});
    if (dim >= 0) is_source[input][dim] = true;
  };
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    is_source[k].assign(plan.inputs[k].rank, false);
    const ir::Param& p = f.params[plan.inputs[k].param];
    if (!p.is_scalar) continue;
    const int slot = symbol_slot(plan.symbols, p.name);
    if (slot >= 0) bind(slot, int(k), -1, 1, 0);
  }
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const auto& shape = shapes[plan.inputs[k].param];
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!shape[d].is_var()) continue;
      const int slot = symbol_slot(plan.symbols, shape[d].var_name());
      if (bound[slot] < 0) bind(slot, int(k), int(d), 1, 0);
    }
  }
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const auto& shape = shapes[plan.inputs[k].param];
    for (size_t d = 0; d < shape.size(); ++d) {
      ir::AffineForm form;
      if (shape[d].is_var() || !ir::as_single_var_affine(shape[d], &form)) continue;
      const int slot = symbol_slot(plan.symbols, form.var);
      if (bound[slot] < 0) bind(slot, int(k), int(d), form.coeff, form.offset);
    }
  }

  // The program: checks, output dims, workspace dims, grid, smem.
  std::vector<ir::Expr> exprs;
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const int param = plan.inputs[k].param;
    const auto& shape = shapes[param];
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].is_const() || is_source[k][d]) continue;
      require_bound(f, plan.symbols, bound, shape[d],
                    dim_place("input", f.params[param], param, d));
      plan.checks.push_back({int(k), int(d), int(exprs.size())});
      exprs.push_back(shape[d]);
    }
  }
  auto add_buffers = [&](const std::vector<int>& params, const char* role,
                         std::vector<BufferSpec>* out) {
    for (int param : params) {
      const ir::Param& p = f.params[param];
      BufferSpec b;
      b.param = param;
      b.dtype = p.tensor.dtype;
      b.rank = int(p.tensor.shape.size());
      b.first_result = int(exprs.size());
      for (size_t d = 0; d < shapes[param].size(); ++d) {
        require_bound(f, plan.symbols, bound, shapes[param][d], dim_place(role, p, param, d));
        exprs.push_back(shapes[param][d]);
      }
      out->push_back(b);
    }
  };
  plan.first_buffer_result = int(exprs.size());
  add_buffers(indices.outputs, "output", &plan.outputs);
  add_buffers(indices.workspaces, "workspace", &plan.workspaces);
  add_buffers(globals, "workspace", &plan.workspaces);
  for (size_t g = 0; g < globals.size(); ++g) {
    BufferSpec& b = plan.workspaces[plan.workspaces.size() - globals.size() + g];
    b.init = tile->globals[g]->init;
    if (b.init == WorkspaceInit::kZeroOnce) plan.has_zero_once = true;
  }
  // Extents below 2^bits, at most `rank` of them, times 2^log2_bytes bytes
  // each, stay below 2^63.
  int max_rank = 0, log2_bytes = 0;
  for (const BufferSpec& b : plan.outputs) {
    max_rank = std::max(max_rank, b.rank);
    while ((int64_t{1} << log2_bytes) < b.dtype.bytes()) ++log2_bytes;
  }
  const int bits = max_rank == 0 ? 62 : std::min(62, (63 - log2_bytes) / max_rank);
  plan.small_extents = uint64_t{1} << bits;
  plan.first_launch_result = int(exprs.size());
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    LaunchSpec& l = plan.launches[i];
    const std::string which =
        plan.launches.size() == 1 ? std::string("the ") : "launch #" + std::to_string(i) + "'s ";
    const std::array<ir::Expr, 4>& v = launch_values[i];
    for (int d = 0; d < 3; ++d) {
      require_bound(f, plan.symbols, bound, v[d], which + "grid (extent " + std::to_string(d));
      l.results.grid[d] = int(exprs.size());
      if (!(v[d].is_const() && v[d].int_value() > 0)) plan.grid_checks.push_back(l.results.grid[d]);
      exprs.push_back(v[d]);
    }
    require_bound(f, plan.symbols, bound, v[3], which + "dynamic shared memory size (bytes");
    l.results.smem = int(exprs.size());
    exprs.push_back(v[3]);
  }
  TILEJIT_CHECK(exprs.size() <= size_t(kMaxResults), kValueError)
      << f.name << ": the signature needs " << exprs.size() << " shape values; at most "
      << kMaxResults << " are supported";
  plan.program = ir::ShapeProgram::compile(exprs, plan.symbols);

  for (const auto& [name, init] : options.workspace_init) {
    auto it = std::find_if(plan.workspaces.begin(), plan.workspaces.end(),
                           [&, &name = name](const BufferSpec& b) { return f.params[b.param].name == name; });
    TILEJIT_CHECK(it != plan.workspaces.end(), kValueError)
        << f.name << ": workspace_init names '" << name << "', which is not a workspace"
        << (f.param_index(name) < 0 ? " (no parameter has that name)" : "");
    it->init = init;
    if (init == WorkspaceInit::kZeroOnce) plan.has_zero_once = true;
  }
  return plan;
}

}  // namespace tilejit

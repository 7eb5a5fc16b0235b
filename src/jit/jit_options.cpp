#include "tilejit/jit/jit_options.h"

#include "tilejit/core/error.h"

namespace tilejit {

const char* workspace_init_name(WorkspaceInit init) {
  switch (init) {
    case WorkspaceInit::kEmpty: return "empty";
    case WorkspaceInit::kZero: return "zero";
    case WorkspaceInit::kZeroOnce: return "zero_once";
  }
  return "?";
}

WorkspaceInit parse_workspace_init(const std::string& name) {
  if (name == "empty") return WorkspaceInit::kEmpty;
  if (name == "zero") return WorkspaceInit::kZero;
  if (name == "zero_once") return WorkspaceInit::kZeroOnce;
  TILEJIT_THROW(kValueError) << "unknown workspace init '" << name
                             << "'; expected empty, zero or zero_once";
}

WorkspaceInit parse_workspace_init(const std::string& name, const std::string& kernel,
                                   const std::string& workspace) {
  if (name == "empty" || name == "zero" || name == "zero_once") return parse_workspace_init(name);
  TILEJIT_THROW(kValueError) << kernel << ": workspace_init['" << workspace << "'] = '" << name
                             << "' is not a workspace init; expected 'empty', 'zero' or "
                                "'zero_once'";
}

namespace {

// Resolves one list. `what` is "out_idx" or "workspace_idx".
std::vector<int> resolve(const ir::PrimFunc& f, const IndexSpec& spec, const char* what) {
  std::vector<int> out;
  if (!spec.given()) return out;
  const int64_t n = int64_t(f.params.size());
  for (size_t k = 0; k < spec.values().size(); ++k) {
    const int64_t raw = spec.values()[k];
    TILEJIT_CHECK(raw >= -n && raw < n, kValueError)
        << f.name << ": " << what << "[" << k << "] = " << raw
        << " is out of range for a signature of " << n << " parameters (valid: " << -n
        << " to " << n - 1 << ")";
    const int idx = int(raw < 0 ? raw + n : raw);
    const ir::Param& p = f.params[idx];
    for (size_t j = 0; j < out.size(); ++j) {
      TILEJIT_CHECK(out[j] != idx, kValueError)
          << f.name << ": " << what << "[" << k << "] = " << raw << " names parameter #" << idx
          << " '" << p.name << "' again (already " << what << "[" << j << "])";
    }
    TILEJIT_CHECK(!p.is_scalar, kValueError)
        << f.name << ": " << what << "[" << k << "] = " << raw << " names scalar parameter #"
        << idx << " '" << p.name << "'; only tensors can be "
        << (std::string(what) == "out_idx" ? "outputs" : "workspaces");
    out.push_back(idx);
  }
  return out;
}

}  // namespace

LegalizedIndices legalize_indices(const ir::PrimFunc& f, const IndexSpec& out_idx,
                                  const IndexSpec& workspace_idx) {
  LegalizedIndices result;
  result.outputs = resolve(f, out_idx, "out_idx");
  result.workspaces = resolve(f, workspace_idx, "workspace_idx");
  for (int w : result.workspaces) {
    for (size_t k = 0; k < result.outputs.size(); ++k) {
      TILEJIT_CHECK(result.outputs[k] != w, kValueError)
          << f.name << ": parameter #" << w << " '" << f.params[w].name
          << "' is named by both out_idx and workspace_idx";
    }
  }
  return result;
}

}  // namespace tilejit

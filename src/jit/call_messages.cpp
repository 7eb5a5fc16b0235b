// The wording of a call's errors (call_messages.h), shared by call_errors.cpp
// and the bindings.
#include "tilejit/jit/call_messages.h"

#include <sstream>
#include <vector>

#include "jit/kernel_impl.h"

namespace tilejit {
namespace call_text {

std::string input_prefix(const ir::PrimFunc& f, const CallPlan& plan, size_t input) {
  std::string out = f.name + ": argument #" + std::to_string(input);
  if (input < plan.inputs.size()) out += " '" + f.params[plan.inputs[input].param].name + "'";
  return out + ": ";
}

std::string with_article(std::string_view word) {
  const bool vowel = !word.empty() && std::string_view("aeiou").find(word[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(word);
}

std::string input_list(const ir::PrimFunc& f, const CallPlan& plan) {
  std::string names;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    names += (i ? ", " : "") + f.params[plan.inputs[i].param].name;
  }
  return names;
}

std::string arity(const ir::PrimFunc& f, const CallPlan& plan, size_t got,
                  std::span<const int> missing) {
  const size_t n = plan.inputs.size();
  std::ostringstream os;
  os << f.name << ": expected " << n << " input" << (n == 1 ? "" : "s") << " ("
     << input_list(f, plan) << "), got " << got;
  std::vector<int> last;
  if (got < n && missing.empty()) {
    for (size_t i = got; i < n; ++i) last.push_back(int(i));
    missing = last;
  }
  if (!missing.empty()) {
    // The parameter's number, not the input's: the number the user compares
    // with out_idx and workspace_idx when a workspace was left out of them.
    os << ": missing parameter" << (missing.size() == 1 ? "" : "s");
    for (size_t m = 0; m < missing.size(); ++m) {
      const int param = plan.inputs[size_t(missing[m])].param;
      os << (m ? ", #" : " #") << param << " '" << f.params[param].name << "'";
    }
    os << " (a parameter in neither out_idx nor workspace_idx is an input)";
  }
  return os.str();
}

std::string out_count(const CallPlan& plan, size_t got) {
  const size_t n = plan.outputs.size();
  return plan.kernel_name + ": out= has " + std::to_string(got) + " tensor" +
         (got == 1 ? "" : "s") + "; the kernel has " + std::to_string(n) + " output" +
         (n == 1 ? "" : "s");
}

std::string not_contiguous(const Tensor& t) {
  // Numpy users think in bytes, DLPack and torch in elements.
  std::ostringstream elements, bytes;
  for (int d = 0; d < t.ndim(); ++d) {
    elements << (d ? ", " : "") << t.stride(d);
    bytes << (d ? ", " : "") << t.stride(d) * t.dtype().bytes();
  }
  return "expected a contiguous tensor, got strides [" + elements.str() + "] in elements ([" +
         bytes.str() + "] in bytes) for shape " + t.shape_str();
}

}  // namespace call_text

namespace call_messages {

std::string input_prefix(const Kernel& k, size_t input) {
  return call_text::input_prefix(k.prim_func(), k.plan(), input);
}

std::string out_prefix(const Kernel& k, size_t index) {
  const CallPlan& plan = k.plan();
  std::string out = k.name() + ": out[" + std::to_string(index) + "]";
  if (index < plan.outputs.size()) {
    out += " '" + k.prim_func().params[plan.outputs[index].param].name + "'";
  }
  return out + ": ";
}

std::string workspace_prefix(const Kernel& k) { return k.name() + ": workspace=: "; }

std::string with_article(std::string_view word) { return call_text::with_article(word); }

std::string expected_input(const Kernel& k, size_t input) {
  const CallPlan& plan = k.plan();
  if (input >= plan.inputs.size()) return "a tensor";
  const InputSpec& in = plan.inputs[input];
  return with_article(in.dtype.name()) + (in.scalar ? " scalar" : " tensor");
}

std::string arity(const Kernel& k, size_t got) {
  return call_text::arity(k.prim_func(), k.plan(), got, {});
}

std::string out_count(const Kernel& k, size_t got) { return call_text::out_count(k.plan(), got); }

std::string not_contiguous(const Tensor& t) { return call_text::not_contiguous(t); }

}  // namespace call_messages
}  // namespace tilejit

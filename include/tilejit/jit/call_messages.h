// The wording of a call's errors, for bindings that find some of those
// errors themselves (the Python package converts arguments before it calls)
// and must word them as the library does. Kernel::call uses the same
// functions. Each builds its text; call it only on failure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tilejit/core/tensor.h"
#include "tilejit/jit/kernel.h"

namespace tilejit::call_messages {

/// "sparse_attention_fwd: argument #2 'Indices': " (without the name for an
/// index past the inputs).
std::string input_prefix(const Kernel& k, size_t input);
/// "k: out[0] 'C': " (without the name for an index past the outputs).
std::string out_prefix(const Kernel& k, size_t index);
/// "k: workspace=: "
std::string workspace_prefix(const Kernel& k);
/// "an int32", "a float32": the article rule of every message.
std::string with_article(std::string_view word);
/// What input `input` takes: "a float32 tensor", "an int32 scalar".
std::string expected_input(const Kernel& k, size_t input);
/// The arity error for `got` positional inputs: "k: expected 3 inputs (X,
/// Y, alpha), got 2: missing parameter #2 'alpha' (a parameter in neither
/// out_idx nor workspace_idx is an input)". A TypeError's text.
std::string arity(const Kernel& k, size_t got);
/// "k: out= has 2 tensors; the kernel has 1 output". A ValueError's text.
std::string out_count(const Kernel& k, size_t got);
/// "expected a contiguous tensor, got strides [80, 16, 2] in elements
/// ([320, 64, 8] in bytes) for shape [2, 5, 8]".
std::string not_contiguous(const Tensor& t);

}  // namespace tilejit::call_messages

// A per-target hook that may rewrite a kernel's generated source before it
// is compiled: TileLang's `tilelang.engine.callback`
// (register_cuda_postproc_callback), tilejit.engine.callback in Python.
//
// Note [Source post-processing]
// Kernel::jit (src/jit/kernel.cpp) hands the source the backend generated
// for a target to the hook registered for that target, if any, and
// compiles what it returns. The compile cache's key is the returned source,
// so a kernel compiled under one hook is never reused under another or
// none. The kernel's get_kernel_source() is the returned source. A hook
// that throws fails the jit with its error, and nothing is cached.
#pragma once

#include <functional>
#include <string>

namespace tilejit::runtime {

/// (source, target name) -> the source to compile.
using SourcePostproc = std::function<std::string(const std::string&, const std::string&)>;

/// Registers `fn` for `target` ("cuda", "cpu"); an empty `fn` removes the
/// hook. Thread-safe.
void set_source_postproc(const std::string& target, SourcePostproc fn);

/// The hook registered for `target`, or an empty function.
SourcePostproc source_postproc(const std::string& target);

}  // namespace tilejit::runtime

// The C++ source pieces the CPU and CUDA backends share. Both give a body the
// same declarations (the symbols, typed views whose dynamic dimensions are
// int64 expressions over them, scalars by their C++ type) and the same #line
// numbering, and both show a compile failure with the same numbered excerpt
// of the source. Each backend keeps what is its own: the entry's signature,
// its grid and block index, and the parsing of its compiler's log.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tilejit/ir/prim_func.h"

namespace tilejit::backend {

/// What the shared pieces need to know of a backend's generated entry.
struct CxxEntry {
  const char* target;   ///< "cpu", "cuda": the key of the body in PrimFunc::bodies
  const char* display;  ///< "CPU", "CUDA": the backend's name in user-facing messages
  const char* ptrs;     ///< the entry's void* argument slots, one per parameter
  const char* syms;     ///< the entry's int64_t values of the request's symbols
  /// The C++ expression that reads a scalar of type `ctype` from `slot`
  /// (an element of `ptrs`, such as "tilejit_args[2]").
  std::string (*read_scalar)(const char* ctype, const std::string& slot);
};

/// The C++ element type of `t` in both preludes ("tilejit::bfloat16",
/// "int32_t", ...), or nullptr for a dtype they have no type for.
const char* element_type(DataType t) noexcept;

/// The body of `f` for the entry's target. Throws ValueError listing the
/// targets that do have a body.
const std::string& body_for_target(const ir::PrimFunc& f, const CxxEntry& entry);

/// Declares, inside the entry, what the body sees of its arguments: each of
/// `symbols` (the request's, in order) as a const int64_t, each tensor
/// parameter as a tilejit::View (static dimensions in the type, dynamic ones
/// as expressions over the symbols), each scalar by its C++ type, except a
/// scalar that binds the symbol of the same name. All [[maybe_unused]].
/// Throws ValueError for a shape over a symbol not among `symbols` (which
/// would otherwise fail in the compiler, on generated code) and TypeError
/// for a dtype the preludes have no type for, naming the parameter.
void emit_arguments(std::ostream& os, const ir::PrimFunc& f,
                    const std::vector<std::string>& symbols, const CxxEntry& entry);

/// The file name a kernel's body lines are attributed to (#line), so that
/// compiler messages point at body lines: "<kernel>_body".
inline std::string body_file_name(const std::string& kernel_name) { return kernel_name + "_body"; }

/// Writes the `#line 1 "<body_name>"` directive, so that compiler messages
/// count the body's own lines, then the body, ending in a newline, then
/// `#line <n + 1> "<body_name>"` for a body of n lines: a directive that
/// changes no number, but marks where the body ends, for the excerpt of a
/// compile error (the wrapper's lines after it are numbered on from the
/// body's, so an error there, such as the end of a block the body left open,
/// is reported in "<body_name>" too).
void emit_body(std::ostream& os, const std::string& body, const std::string& body_name);

/// `text` split at '\n', without the newlines; no empty last line for a
/// trailing newline.
std::vector<std::string> split_lines(const std::string& text);

/// `log` cut to the most a compile error carries, with a note of what was
/// cut, and without trailing newlines.
std::string clip_log(std::string log);

/// Appends "\nsource around line L of <file>:" and the numbered lines around
/// line `error_line` ("   L-1 | text", ">  L | text"), marking the error.
/// `in_body`: the line is counted from the directive that emit_body() wrote
/// into `source`; the body's own lines are numbered, the generated lines
/// after the body are not ("     | }();"). Otherwise it is
/// a line of `source` itself, shown as `file_name`. Appends nothing when the
/// line is not there (0 when the log named none).
void append_source_excerpt(std::ostream& os, const std::string& source, int error_line,
                           bool in_body, const std::string& file_name,
                           const std::string& body_name);

/// Whether TILEJIT_KEEP_FAILED asks that the source of a failed compile be
/// left on disk (set, and neither empty nor "0").
bool keep_failed_source();

/// Writes `source` to <dir>/<file_name> in a new private directory
/// $TMPDIR/tilejit-<target>-XXXXXX (or under /tmp) and returns that path;
/// "" when it cannot be written. For a compiler that reads no file (NVRTC).
std::string write_kept_source(const std::string& source, const std::string& file_name,
                              const char* target);

}  // namespace tilejit::backend

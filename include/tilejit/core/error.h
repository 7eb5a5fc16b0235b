// Error: the one exception type of tilejit. Every failure a caller can cause
// is an Error with a kind; each kind maps to one Python exception type.
#pragma once

#include <exception>
#include <sstream>
#include <string>

namespace tilejit {

/// What went wrong, coarsely. The Python binding maps each kind to an
/// exception type (ValueError, TypeError, RuntimeError, tilejit.CompileError,
/// tilejit.InternalError, tilejit.OutOfMemoryError).
enum class ErrorKind : int {
  kValueError,        // a value is wrong: a shape, an index, a size
  kTypeError,         // a type is wrong: a dtype, a tensor where a scalar goes
  kRuntimeError,      // the environment failed: a driver call, a file
  kCompileError,      // the generated source did not compile
  kOutOfMemoryError,  // an allocation failed or a memory cap was hit
  kInternalError,     // a bug in tilejit itself
};

/// "ValueError", "TypeError", ...
const char* error_kind_name(ErrorKind kind) noexcept;

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message);

  ErrorKind kind() const noexcept { return kind_; }
  /// The message without the kind prefix.
  const std::string& message() const noexcept { return message_; }
  /// "<Kind>: <message>".
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  ErrorKind kind_;
  std::string message_;
  std::string what_;
};

/// The Error (kind kCompileError) of a compiler that failed on generated
/// source: it carries that source, so that a caller can show it, save it or
/// compile it by hand.
class CompileError : public Error {
 public:
  CompileError(std::string message, std::string source, std::string kept_path);

  /// The whole translation unit the compiler was given.
  const std::string& source() const noexcept { return source_; }
  /// Where the source was left on disk (TILEJIT_KEEP_FAILED=1), or "".
  const std::string& kept_path() const noexcept { return kept_path_; }

 private:
  std::string source_;
  std::string kept_path_;
};

namespace detail {

// Collects a message with operator<< and throws it, so that a failure reads
// as one statement: TILEJIT_THROW(kValueError) << "bad " << x;
// TILEJIT_THROW expands to a loop whose body streams the message and whose
// step, raise(), throws; the loop never ends otherwise. Two things follow:
//  - a value whose operator<< throws (or a bad_alloc while the message grows)
//    leaves the statement with that exception, and the builder's destructor
//    runs as any other during unwinding. A builder that threw from its
//    destructor would throw a second exception while the first unwinds:
//    std::terminate.
//  - raise() is [[noreturn]], so the compiler knows that nothing after a
//    failed check runs (no "function does return" in [[noreturn]] helpers,
//    and the failure branch stays a dead end on hot paths), which a
//    destructor that must sometimes return could not promise.
// Construction is out of line and cold: the streaming code stays off hot paths.
class ErrorBuilder {
 public:
  [[gnu::cold, gnu::noinline]] explicit ErrorBuilder(ErrorKind kind);
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;

  std::ostringstream& stream() { return stream_; }
  /// Throws the Error with the message streamed so far.
  [[noreturn, gnu::cold, gnu::noinline]] void raise();

 private:
  ErrorKind kind_;
  std::ostringstream stream_;
};

}  // namespace detail
}  // namespace tilejit

#define TILEJIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define TILEJIT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/// Throws an Error of the given kind (an ErrorKind enumerator name) with the
/// message streamed after it. A statement, not an expression (see
/// ErrorBuilder); an exception thrown while the message is streamed is the
/// one that propagates.
#define TILEJIT_THROW(kind)                                                         \
  for (::tilejit::detail::ErrorBuilder tilejit_error_builder(::tilejit::ErrorKind::kind);; \
       tilejit_error_builder.raise())                                               \
  tilejit_error_builder.stream()

/// Throws when cond is false; the message is built only on failure.
#define TILEJIT_CHECK(cond, kind) \
  if (TILEJIT_LIKELY(cond)) {     \
  } else                          \
    TILEJIT_THROW(kind)

/// An invariant of tilejit itself.
#define TILEJIT_ICHECK(cond) \
  TILEJIT_CHECK(cond, kInternalError) << __FILE__ << ":" << __LINE__ << ": check failed: " #cond " "

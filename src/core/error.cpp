#include "tilejit/core/error.h"

#include <utility>

namespace tilejit {

const char* error_kind_name(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kValueError: return "ValueError";
    case ErrorKind::kTypeError: return "TypeError";
    case ErrorKind::kRuntimeError: return "RuntimeError";
    case ErrorKind::kCompileError: return "CompileError";
    case ErrorKind::kOutOfMemoryError: return "OutOfMemoryError";
    case ErrorKind::kInternalError: return "InternalError";
  }
  return "Error";
}

Error::Error(ErrorKind kind, std::string message)
    : kind_(kind), message_(std::move(message)) {
  what_ = std::string(error_kind_name(kind)) + ": " + message_;
}

CompileError::CompileError(std::string message, std::string source, std::string kept_path)
    : Error(ErrorKind::kCompileError, std::move(message)),
      source_(std::move(source)),
      kept_path_(std::move(kept_path)) {}

namespace detail {

ErrorBuilder::ErrorBuilder(ErrorKind kind) : kind_(kind) {}

void ErrorBuilder::raise() { throw Error(kind_, stream_.str()); }

}  // namespace detail
}  // namespace tilejit

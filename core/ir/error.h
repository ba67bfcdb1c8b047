// The one error type of the project: thrown inside core/ and backends/,
// turned into exit code 2 (CLI) or a dialog (GUI) at the boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace collage {

enum class ErrorKind {
  InvalidModel,  // malformed or inconsistent ONNX (truncated, cycle, dangling input)
  Unsupported,   // valid ONNX the product cannot handle (op, attribute, dtype)
  InvalidInput,  // bad user input: arguments, input tensors, files
  Io,            // file system failures
  Cancelled,     // the user stopped long work; partial results are kept
  Internal,      // a broken invariant: a bug in this program
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace collage

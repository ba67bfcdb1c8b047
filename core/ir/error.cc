#include "core/ir/error.h"

namespace collage {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidModel:
      return "invalid model";
    case ErrorKind::Unsupported:
      return "unsupported";
    case ErrorKind::InvalidInput:
      return "invalid input";
    case ErrorKind::Io:
      return "i/o error";
    case ErrorKind::Cancelled:
      return "cancelled";
    case ErrorKind::Internal:
      return "internal error";
  }
  return "error";
}

}  // namespace collage

#include "fucina/core/error.h"

namespace fucina {

std::string_view name(ErrorCode code) {
  switch (code) {
#define FUCINA_NAME_ITEM(n) \
  case ErrorCode::n:        \
    return #n;
    FUCINA_ERROR_CODES(FUCINA_NAME_ITEM)
#undef FUCINA_NAME_ITEM
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(name(code)) + ": " + message), code_(code) {}

void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace fucina

#include "util/error.hpp"

#include <cstring>

namespace ks {

SystemError::SystemError(const std::string& operation, int err)
    : std::runtime_error(operation + ": " + std::strerror(err)), errno_(err) {}

SystemError::SystemError(const std::string& operation, const std::string& detail)
    : std::runtime_error(operation + ": " + detail) {}

}  // namespace ks

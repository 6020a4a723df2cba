// The error for a request that is well-formed JSON but asks for something invalid; what() is the
// sentence sent back in the reply's "error". Thread-safe (a plain exception type).
#pragma once

#include <stdexcept>

namespace agent {

class RequestError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace agent

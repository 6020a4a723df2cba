// Typed failures of Docker Engine API calls, with advice on what to do next. Immutable.
#pragma once

#include <string>
#include <string_view>

#include "sandbox/backend.h"

namespace sandbox::docker {

// status is the HTTP status of the engine's reply, or 0 when no reply arrived (socket missing,
// connection refused, timeout). message is the engine's own text ({"message": ...}) or the
// transport error; what() is "<method target> failed: <message> (<advice>)". A SandboxError, so
// callers that report sandbox failures need no extra catch.
class EngineError : public SandboxError {
 public:
  EngineError(int status, std::string message, std::string_view request_line);

  [[nodiscard]] int status() const noexcept { return status_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] bool isNotFound() const noexcept { return status_ == 404; }
  [[nodiscard]] bool isConflict() const noexcept { return status_ == 409; }

 private:
  int status_;
  std::string message_;
};

// What an operator should do about a failure; empty when there is nothing useful to say.
// Pure; exposed for tests.
[[nodiscard]] std::string engineAdvice(int status, std::string_view message,
                                       std::string_view request_line);

// Extracts "message" from an engine error body, falling back to the raw (trimmed) body.
[[nodiscard]] std::string engineMessageFromBody(std::string_view body);

}  // namespace sandbox::docker

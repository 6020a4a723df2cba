// Counts the decisions in a sidecar's audit log (one JSON object per line, sidecar/README.md) as
// it grows: feed it the bytes appended since the last call. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace server {

class AuditTally {
 public:
  // Consumes appended log bytes; a line cut in the middle waits for its end.
  void consume(std::string_view bytes);

  [[nodiscard]] std::uint64_t allowed() const noexcept { return allowed_; }
  [[nodiscard]] std::uint64_t denied() const noexcept { return denied_; }
  // Allowed by the policy, then failed upstream (unreachable, timeout, cut short).
  [[nodiscard]] std::uint64_t errors() const noexcept { return errors_; }

 private:
  void countLine(std::string_view line);

  std::string partial_;
  std::uint64_t allowed_ = 0;
  std::uint64_t denied_ = 0;
  std::uint64_t errors_ = 0;
};

}  // namespace server

// Counts the decisions in a sidecar's audit log (one JSON object per line, sidecar/README.md) as
// it grows: feed it the bytes appended since the last call. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace server {

class AuditTally {
 public:
  // Consumes appended log bytes; a line cut in the middle waits for its end.
  void consume(std::string_view bytes);

  [[nodiscard]] std::uint64_t allowed() const noexcept { return allowed_; }
  [[nodiscard]] std::uint64_t denied() const noexcept { return denied_; }
  // Allowed by the policy, then failed upstream (unreachable, timeout, cut short).
  [[nodiscard]] std::uint64_t errors() const noexcept { return errors_; }

  // The same for the egress proxy's lines (kind "egress"), which the counts above leave out.
  struct Egress {
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;
    std::uint64_t errors = 0;
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
  };
  [[nodiscard]] const Egress& egress() const noexcept { return egress_; }

  // "CONNECT evil.example:443: <reason>" for each egress request refused (or failed with an
  // HTTP error) since the last call, oldest first; at most kMaxRefusalsKept, then a count.
  static constexpr std::size_t kMaxRefusalsKept = 8;
  [[nodiscard]] std::vector<std::string> takeEgressRefusals();

 private:
  void countLine(std::string_view line);
  void countEgressLine(const nlohmann::json& record, const std::string& decision);

  std::string partial_;
  std::uint64_t allowed_ = 0;
  std::uint64_t denied_ = 0;
  std::uint64_t errors_ = 0;
  Egress egress_;
  std::deque<std::string> refusals_;
  std::uint64_t refusals_dropped_ = 0;
};

}  // namespace server

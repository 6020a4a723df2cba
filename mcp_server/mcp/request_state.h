// The requestState of MCP 2026-07-28 input-required results (MRTR): the server's state for the
// next round travels through the client, which must not be able to forge or alter it, nor replay
// it for another principal, another tool or prompt, or after it expired. A sealed state is
// base64(payload) "." hex(HMAC-SHA256(key, base64(payload))), the payload naming the owner, the
// purpose (e.g. "tools/call:my_tool"), the expiry and the state itself. The key is random per
// process, so states do not outlive the server. Thread-safe (immutable after construction).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mcp {

class RequestStateSeal {
 public:
  using Clock = std::chrono::system_clock;

  // A fresh random key (the kernel CSPRNG).
  RequestStateSeal();
  // A given key (tests).
  explicit RequestStateSeal(std::string key) : key_(std::move(key)) {}

  // `state` sealed for `owner` and `purpose`, valid until now + `ttl`.
  [[nodiscard]] std::string seal(const nlohmann::json& state, std::string_view owner,
                                 std::string_view purpose, std::chrono::seconds ttl,
                                 Clock::time_point now = Clock::now()) const;

  // The state, or nullopt when `sealed` is malformed, altered, expired, or sealed for another
  // owner or purpose.
  [[nodiscard]] std::optional<nlohmann::json> open(std::string_view sealed, std::string_view owner,
                                                   std::string_view purpose,
                                                   Clock::time_point now = Clock::now()) const;

 private:
  [[nodiscard]] std::string mac(std::string_view data) const;

  std::string key_;
};

}  // namespace mcp

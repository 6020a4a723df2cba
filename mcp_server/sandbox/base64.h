// Standard base64 (RFC 4648, with padding) for the agent's data_b64 fields. Pure, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sandbox {

[[nodiscard]] std::string base64Encode(std::string_view bytes);
// Throws std::invalid_argument on characters outside the alphabet or a bad length.
[[nodiscard]] std::string base64Decode(std::string_view text);

}  // namespace sandbox

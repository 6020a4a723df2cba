// Standard base64 (RFC 4648, '+' '/' alphabet, '=' padding) without external libraries, so the
// static agent needs no OpenSSL. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agent::base64 {

[[nodiscard]] std::string encode(std::string_view bytes);

// Decodes padded or unpadded input. Returns nullopt (and sets *error when given) on a character
// outside the alphabet, misplaced padding, or an impossible length.
[[nodiscard]] std::optional<std::string> decode(std::string_view text,
                                                std::string* error = nullptr);

}  // namespace agent::base64

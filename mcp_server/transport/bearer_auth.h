// Bearer-token check for the HTTP transport. Pure functions; thread-safe.
#pragma once

#include <string_view>

namespace transport {

// Compares in time that depends only on the lengths, never on where the first difference is.
[[nodiscard]] bool constantTimeEquals(std::string_view a, std::string_view b) noexcept;

// True when `authorization` is "Bearer <token>" (scheme case-insensitive, RFC 6750) and the
// credential equals `expected_token`. An empty expected token never authorises anything.
[[nodiscard]] bool isBearerAuthorized(std::string_view authorization,
                                      std::string_view expected_token) noexcept;

}  // namespace transport

// Bearer-token check for the HTTP transport. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "common/constant_time.h"

namespace transport {

using common::constantTimeEquals;

// True when `authorization` is "Bearer <token>" (scheme case-insensitive, RFC 6750) and the
// credential equals `expected_token`. An empty expected token never authorises anything.
[[nodiscard]] bool isBearerAuthorized(std::string_view authorization,
                                      std::string_view expected_token) noexcept;

}  // namespace transport

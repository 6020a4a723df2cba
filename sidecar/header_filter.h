// Which HTTP header fields a relay must not pass on (RFC 9110 section 7.6.1), for the request
// going upstream and the response coming back. Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.h"

namespace sidecar {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade (case-insensitive).
[[nodiscard]] bool isHopByHopHeader(std::string_view name) noexcept;

// Drops hop-by-hop fields, the fields the Connection header names, and the fields libcurl
// computes itself (Host, Content-Length, Expect).
[[nodiscard]] HeaderList filterRequestHeaders(const HeaderList& headers);

// Drops hop-by-hop fields and the fields the Connection header names. Content-Length is dropped
// too when `rechunked` (the sidecar re-frames the body with chunked encoding).
[[nodiscard]] HeaderList filterResponseHeaders(const HeaderList& headers, bool rechunked);

using common::iequals;

// The value of the first field called `name`, or empty.
[[nodiscard]] std::string findHeader(const HeaderList& headers, std::string_view name);

}  // namespace sidecar

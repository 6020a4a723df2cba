// Origin and Host header checks against DNS-rebinding and cross-site requests from browsers.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace transport {

// The parts of an "Origin"/"Host"-style authority, lower-cased. IPv6 hosts keep their brackets.
struct OriginParts {
  std::string scheme;  // empty for Host headers
  std::string host;
  std::optional<unsigned> port;
};

// Parses "scheme://host[:port]" (an Origin header or allowlist entry). nullopt if malformed,
// including the opaque origin "null".
[[nodiscard]] std::optional<OriginParts> parseOrigin(std::string_view origin);

// Parses "host[:port]" (a Host header).
[[nodiscard]] std::optional<OriginParts> parseHostHeader(std::string_view host);

// True when `origin` matches an allowlist entry: same scheme and host (case-insensitive), and
// the same port if the entry names one (an entry without a port allows any port).
[[nodiscard]] bool isOriginAllowed(std::string_view origin,
                                   const std::vector<std::string>& allowlist);

// The default allowlist: http://localhost, http://127.0.0.1, http://[::1] (any port).
[[nodiscard]] std::vector<std::string> defaultAllowedOrigins();

// True for "localhost", "127.x.y.z" and "[::1]", with or without a port. Used to reject
// DNS-rebinding requests (Host: evil.example resolving to 127.0.0.1) on a loopback bind.
[[nodiscard]] bool isLoopbackHostHeader(std::string_view host);

// What a host strictly under `domain` puts before it ("abc" for "abc.localhost:8766" under
// "localhost", "x.abc" for "x.abc.localhost"), lower-cased; nullopt when the host is not under it,
// or is `domain` itself. `host_or_origin`: a Host header or an Origin ("scheme://host[:port]").
[[nodiscard]] std::optional<std::string> subdomainLabel(std::string_view host_or_origin,
                                                        std::string_view domain);

}  // namespace transport

// Helpers shared by the policy/ translation units; not part of the public API.
// Thread safety: pure functions only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "policy/policy.h"

namespace policy::internal {

using Ipv4Bytes = std::array<std::uint8_t, 4>;
using Ipv6Bytes = std::array<std::uint8_t, 16>;

// WHATWG "ends in a number": such a host must parse as IPv4 or the URL is invalid.
[[nodiscard]] bool endsInNumber(std::string_view host) noexcept;
// WHATWG IPv4 host parser: 1-4 parts, each decimal, octal (leading 0) or hex (0x), last part
// filling the remaining bytes (127.1, 2130706433, 0x7f.1, 0177.0.0.1). Lowercase input.
[[nodiscard]] std::optional<Ipv4Bytes> parseLenientIpv4(std::string_view host) noexcept;
// Strict dotted-decimal, exactly four parts 0-255 without leading zeros.
[[nodiscard]] std::optional<Ipv4Bytes> parseStrictIpv4(std::string_view text) noexcept;
// RFC 4291 text without brackets or zone id; a trailing dotted-quad is allowed.
[[nodiscard]] std::optional<Ipv6Bytes> parseIpv6(std::string_view text) noexcept;

[[nodiscard]] std::string formatIpv4(const Ipv4Bytes& bytes);
[[nodiscard]] std::string formatIpv6(const Ipv6Bytes& bytes);  // RFC 5952, no brackets

[[nodiscard]] IpAddress makeIpv4(const Ipv4Bytes& bytes) noexcept;
[[nodiscard]] IpAddress makeIpv6(const Ipv6Bytes& bytes) noexcept;
// The IPv4 address an IPv6 address carries when it is IPv4-mapped (::ffff:0:0/96).
[[nodiscard]] std::optional<Ipv4Bytes> mappedIpv4(const Ipv6Bytes& bytes) noexcept;
// Mapped, IPv4-compatible (::/96 except :: and ::1) or NAT64 (64:ff9b::/96): the IPv4 inside.
[[nodiscard]] std::optional<Ipv4Bytes> embeddedIpv4(const IpAddress& address) noexcept;

[[nodiscard]] std::uint16_t defaultPort(std::string_view scheme) noexcept;
// Segment-boundary prefix: "/mcp" covers "/mcp" and "/mcp/x" but not "/mcpx"; "/mcp/" covers
// "/mcp/" and "/mcp/x" only.
[[nodiscard]] bool pathUnderPrefix(std::string_view prefix, std::string_view path) noexcept;
// "localhost" or "*.localhost" (RFC 6761: always loopback).
[[nodiscard]] bool isLocalhostName(std::string_view host) noexcept;
// Same scheme, host and port, and the path under the prefix.
[[nodiscard]] bool ruleCovers(const Url& base, const Url& url) noexcept;

}  // namespace policy::internal

#include "transport/origin_check.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace transport {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<unsigned> parsePort(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc{} || end != digits.data() + digits.size() || port > 65535)
    return std::nullopt;
  return port;
}

bool isHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

// "host[:port]" where host is a name, an IPv4 literal or a bracketed IPv6 literal.
std::optional<OriginParts> parseAuthority(std::string_view authority) {
  OriginParts parts;
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close < 2) return std::nullopt;
    const std::string_view inside = authority.substr(1, close - 1);
    const bool hex_or_colon = std::all_of(inside.begin(), inside.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
    });
    if (!hex_or_colon) return std::nullopt;
    parts.host = lower(authority.substr(0, close + 1));
    rest = authority.substr(close + 1);
  } else {
    const std::size_t colon = authority.find(':');
    const std::string_view host = authority.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), isHostChar)) return std::nullopt;
    parts.host = lower(host);
    rest = colon == std::string_view::npos ? std::string_view{} : authority.substr(colon);
  }
  if (!rest.empty()) {
    if (rest.front() != ':') return std::nullopt;
    parts.port = parsePort(rest.substr(1));
    if (!parts.port) return std::nullopt;
  }
  return parts;
}

}  // namespace

std::optional<OriginParts> parseOrigin(std::string_view origin) {
  const std::size_t sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const std::string_view scheme = origin.substr(0, sep);
  if (!std::all_of(scheme.begin(), scheme.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
      })) {
    return std::nullopt;
  }
  std::string_view authority = origin.substr(sep + 3);
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);  // lenient
  auto parts = parseAuthority(authority);
  if (!parts) return std::nullopt;
  parts->scheme = lower(scheme);
  return parts;
}

std::optional<OriginParts> parseHostHeader(std::string_view host) { return parseAuthority(host); }

bool isOriginAllowed(std::string_view origin, const std::vector<std::string>& allowlist) {
  const auto actual = parseOrigin(origin);
  if (!actual) return false;
  return std::any_of(allowlist.begin(), allowlist.end(), [&](const std::string& entry) {
    const auto allowed = parseOrigin(entry);
    if (!allowed) return false;
    if (allowed->scheme != actual->scheme || allowed->host != actual->host) return false;
    return !allowed->port || allowed->port == actual->port;
  });
}

std::vector<std::string> defaultAllowedOrigins() {
  return {"http://localhost", "http://127.0.0.1", "http://[::1]"};
}

bool isLoopbackHostHeader(std::string_view host) {
  const auto parts = parseHostHeader(host);
  if (!parts) return false;
  if (parts->host == "localhost" || parts->host == "[::1]") return true;
  // 127.0.0.0/8, written as a dotted quad.
  unsigned octets[4] = {0, 0, 0, 0};
  std::string_view rest = parts->host;
  for (int i = 0; i < 4; ++i) {
    const std::size_t dot = rest.find('.');
    if ((i < 3) == (dot == std::string_view::npos)) return false;
    const std::string_view digits = rest.substr(0, dot);
    if (digits.empty() || digits.size() > 3) return false;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), octets[i]);
    if (ec != std::errc{} || end != digits.data() + digits.size() || octets[i] > 255) return false;
    rest = i < 3 ? rest.substr(dot + 1) : std::string_view{};
  }
  return octets[0] == 127;
}

std::optional<std::string> subdomainLabel(std::string_view host_or_origin,
                                          std::string_view domain) {
  const auto parts = host_or_origin.find("://") != std::string_view::npos
                         ? parseOrigin(host_or_origin)
                         : parseHostHeader(host_or_origin);
  if (!parts || domain.empty()) return std::nullopt;
  std::string_view host = parts->host;
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // "abc.localhost."
  if (host.size() <= domain.size() + 1 || host.substr(host.size() - domain.size()) != domain ||
      host[host.size() - domain.size() - 1] != '.') {
    return std::nullopt;
  }
  return std::string(host.substr(0, host.size() - domain.size() - 1));
}

}  // namespace transport

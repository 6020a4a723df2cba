// parseUrl: turns URL text into one canonical Url, or an error when any part is ambiguous.
// Every rejection below closes a known trick for making an allowlist see one URL while the
// upstream server sees another; policy/README.md lists them.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace {

constexpr std::size_t kMaxInputLength = 3 * 8192;  // bounds work before canonicalization
constexpr std::size_t kMaxCanonicalLength = 8192;
constexpr std::size_t kMaxHostLength = 253;
constexpr std::size_t kMaxLabelLength = 63;

// The parse either produces a value or an error; the error text is what callers show.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
};

template <typename T>
Parsed<T> fail(std::string error) {
  return Parsed<T>{std::nullopt, std::move(error)};
}

std::string hexByte(unsigned char byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string{'%', kHex[byte >> 4], kHex[byte & 0xf]};
}

bool isAlpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }
bool isUnreserved(char c) noexcept {
  return isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
// RFC 3986 pchar minus unreserved and pct-encoded: kept literally in a path.
bool isPathDelimiter(char c) noexcept {
  return std::string_view{"!$&'()*+,;=:@/"}.find(c) != std::string_view::npos;
}
int hexValue(char c) noexcept {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
char toLower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), toLower);
  return out;
}

// Characters that are an error anywhere: whitespace and controls hide parts of the URL from
// one parser and not another; a backslash is "/" to WHATWG parsers but not to RFC 3986 ones.
std::optional<std::string> findForbiddenCharacter(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte <= 0x20 || byte == 0x7f) {
      return "whitespace or control character " + hexByte(byte) + " at offset " +
             std::to_string(i) + "; percent-encode it in the path or remove it";
    }
    if (byte == '\\') {
      return "backslash at offset " + std::to_string(i) + "; use '/' (parsers disagree on '\\')";
    }
    if (byte == '#') return "fragment ('#') not allowed in a request URL; remove it";
  }
  return std::nullopt;
}

bool hasNonAscii(std::string_view text) noexcept {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

Parsed<std::string> parseScheme(std::string_view text, std::string_view& rest) {
  const std::size_t colon = text.find(':');
  const auto is_scheme_char = [](char c) {
    return isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.';
  };
  if (colon == std::string_view::npos || colon == 0 || !isAlpha(text[0]) ||
      !std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(colon),
                   is_scheme_char)) {
    return fail<std::string>("missing scheme; write an absolute URL like http://host:port/path");
  }
  std::string scheme = lowercase(text.substr(0, colon));
  if (scheme != "http" && scheme != "https") {
    return fail<std::string>("unsupported scheme '" + scheme.substr(0, 16) +
                             "'; only http and https are allowed");
  }
  rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") return fail<std::string>("expected '//' after '" + scheme + ":'");
  rest.remove_prefix(2);
  return {std::move(scheme), {}};
}

Parsed<std::uint16_t> parsePort(std::string_view text) {
  if (text.empty()) return fail<std::uint16_t>("empty port after ':'; write a number or omit ':'");
  if (!std::all_of(text.begin(), text.end(), isDigit)) {
    return fail<std::uint16_t>("port '" + std::string(text.substr(0, 16)) + "' is not a number");
  }
  const std::size_t first = text.find_first_not_of('0');
  const std::string_view digits = first == std::string_view::npos ? "" : text.substr(first);
  unsigned value = 0;
  if (digits.size() <= 5) {
    for (const char c : digits) value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (digits.empty() || digits.size() > 5 || value > 65535) {
    return fail<std::uint16_t>("port " + std::string(text.substr(0, 16)) +
                               " is out of range 1-65535");
  }
  return {static_cast<std::uint16_t>(value), {}};
}

struct Host {
  std::string name;
  HostKind kind = HostKind::kDomain;
};

Parsed<Host> parseIpv6Host(std::string_view inner) {
  if (inner.find('%') != std::string_view::npos) {
    return fail<Host>("IPv6 zone id ('%') not allowed in a URL host");
  }
  const std::optional<internal::Ipv6Bytes> bytes = internal::parseIpv6(lowercase(inner));
  if (!bytes)
    return fail<Host>("invalid IPv6 address '[" + std::string(inner.substr(0, 64)) + "]'");
  // ::ffff:a.b.c.d reaches the IPv4 host a.b.c.d: one resource, one canonical form.
  if (const std::optional<internal::Ipv4Bytes> v4 = internal::mappedIpv4(*bytes)) {
    return {Host{internal::formatIpv4(*v4), HostKind::kIpv4}, {}};
  }
  return {Host{internal::formatIpv6(*bytes), HostKind::kIpv6}, {}};
}

Parsed<Host> parseDomainOrIpv4(std::string_view text) {
  // Decoding would let "%6c%6fcalhost" or "a%2eb" mean one host here and another upstream.
  if (text.find('%') != std::string_view::npos) {
    return fail<Host>("percent-encoded host not allowed; write the host literally");
  }
  std::string host = lowercase(text);
  if (host.size() > 1 && host.back() == '.') host.pop_back();  // "example.com." is example.com
  if (host.empty() || host == ".") return fail<Host>("empty host");
  if (internal::endsInNumber(host)) {
    const std::optional<internal::Ipv4Bytes> v4 = internal::parseLenientIpv4(host);
    if (!v4) return fail<Host>("host '" + host.substr(0, 64) + "' looks numeric but is not IPv4");
    return {Host{internal::formatIpv4(*v4), HostKind::kIpv4}, {}};
  }
  if (host.size() > kMaxHostLength) return fail<Host>("host longer than 253 characters");
  std::size_t label_length = 0;
  for (const char c : host) {
    if (c == '.') {
      if (label_length == 0) return fail<Host>("empty label in host '" + host.substr(0, 64) + "'");
      label_length = 0;
      continue;
    }
    if (!isAlpha(c) && !isDigit(c) && c != '-' && c != '_') {
      return fail<Host>("invalid character '" + std::string(1, c) + "' in host");
    }
    if (++label_length > kMaxLabelLength) return fail<Host>("host label longer than 63 characters");
  }
  if (label_length == 0) return fail<Host>("empty label in host '" + host.substr(0, 64) + "'");
  return {Host{std::move(host), HostKind::kDomain}, {}};
}

struct Authority {
  Host host;
  std::uint16_t port = 0;
};

Parsed<Authority> parseAuthority(std::string_view text, std::string_view scheme) {
  if (text.empty()) return fail<Authority>("empty host");
  if (text.find('@') != std::string_view::npos) {
    return fail<Authority>("userinfo ('user@host') not allowed; remove everything up to '@'");
  }
  if (hasNonAscii(text)) {
    return fail<Authority>("non-ASCII host; write its punycode (xn--) form");
  }
  std::string_view host_text = text;
  std::optional<std::string_view> port_text;
  Parsed<Host> host;
  if (text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return fail<Authority>("unterminated '[' in host");
    const std::string_view after = text.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return fail<Authority>("unexpected text after ']' in host");
    }
    if (!after.empty()) port_text = after.substr(1);
    host = parseIpv6Host(text.substr(1, close - 1));
  } else {
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      if (text.find(':', colon + 1) != std::string_view::npos) {
        return fail<Authority>("IPv6 address must be in brackets, like http://[::1]:8080/");
      }
      host_text = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    }
    host = parseDomainOrIpv4(host_text);
  }
  if (!host.value) return fail<Authority>(std::move(host.error));
  Authority authority{std::move(*host.value), internal::defaultPort(scheme)};
  if (port_text) {
    const Parsed<std::uint16_t> port = parsePort(*port_text);
    if (!port.value) return fail<Authority>(port.error);
    authority.port = *port.value;
  }
  return {std::move(authority), {}};
}

// Decodes what is safe to decode (unreserved characters, so "%2e%2e" becomes ".." and is
// resolved), keeps other escapes in one spelling (uppercase hex), escapes stray characters,
// and refuses escapes that change the path's structure or hide control characters.
Parsed<std::string> normalizeEscapes(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '%') {
      const int high = i + 2 < path.size() ? hexValue(path[i + 1]) : -1;
      const int low = i + 2 < path.size() ? hexValue(path[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return fail<std::string>("malformed percent-encoding at path offset " + std::to_string(i));
      }
      const auto byte = static_cast<unsigned char>(high * 16 + low);
      if (byte == '/' || byte == '\\') {
        return fail<std::string>("encoded slash (" + hexByte(byte) +
                                 ") in path; servers disagree on whether it separates segments");
      }
      if (byte < 0x20 || byte == 0x7f) {
        return fail<std::string>("encoded control character " + hexByte(byte) + " in path");
      }
      const char decoded = static_cast<char>(byte);
      out += isUnreserved(decoded) ? std::string(1, decoded) : hexByte(byte);
      i += 2;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return fail<std::string>("non-ASCII byte in path; percent-encode it");
    } else if (isUnreserved(c) || isPathDelimiter(c)) {
      out += c;
    } else {
      out += hexByte(static_cast<unsigned char>(c));  // '"', '<', '>', '[', '^', '{', '|', ...
    }
  }
  return {std::move(out), {}};
}

// RFC 3986 section 5.2.4 on whole segments. "..;x" is refused: some servers (Tomcat) strip
// ";params" before resolving dot segments, so it would climb out of the allowed prefix there.
Parsed<std::string> removeDotSegments(std::string_view path) {
  std::vector<std::string_view> output;
  std::size_t start = 1;  // path starts with '/'
  while (true) {
    const std::size_t slash = path.find('/', start);
    const bool last = slash == std::string_view::npos;
    const std::string_view segment =
        path.substr(start, last ? std::string_view::npos : slash - start);
    const std::string_view bare = segment.substr(0, segment.find(';'));
    if ((bare == "." || bare == "..") && bare.size() != segment.size()) {
      return fail<std::string>("dot segment with parameters ('" + std::string(bare) +
                               ";') in path");
    }
    if (segment == "..") {
      if (!output.empty()) output.pop_back();
      if (last) output.emplace_back();
    } else if (segment == ".") {
      if (last) output.emplace_back();
    } else {
      output.push_back(segment);
    }
    if (last) break;
    start = slash + 1;
  }
  std::string out;
  for (const std::string_view segment : output) {
    out += '/';
    out += segment;
  }
  return {out.empty() ? std::string("/") : std::move(out), {}};
}

Parsed<std::string> canonicalPath(std::string_view path) {
  if (path.empty()) return {std::string("/"), {}};
  Parsed<std::string> escaped = normalizeEscapes(path);
  if (!escaped.value) return escaped;
  return removeDotSegments(*escaped.value);
}

}  // namespace

ParseResult parseUrl(std::string_view text) {
  auto error = [](std::string message) { return ParseResult{std::nullopt, std::move(message)}; };
  if (text.empty()) return error("empty URL");
  if (text.size() > kMaxInputLength) return error("URL longer than 24576 bytes");
  if (std::optional<std::string> forbidden = findForbiddenCharacter(text)) return error(*forbidden);

  std::string_view rest;
  Parsed<std::string> scheme = parseScheme(text, rest);
  if (!scheme.value) return error(scheme.error);
  const std::size_t authority_end = rest.find_first_of("/?");
  const std::string_view authority_text = rest.substr(0, authority_end);
  const std::string_view after_authority =
      authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  Parsed<Authority> authority = parseAuthority(authority_text, *scheme.value);
  if (!authority.value) return error(authority.error);

  const std::size_t question = after_authority.find('?');
  const std::string_view query = question == std::string_view::npos
                                     ? std::string_view{}
                                     : after_authority.substr(question + 1);
  if (hasNonAscii(query)) return error("non-ASCII byte in query; percent-encode it");
  Parsed<std::string> path = canonicalPath(after_authority.substr(0, question));
  if (!path.value) return error(path.error);

  Url url;
  url.scheme = std::move(*scheme.value);
  url.host = std::move(authority.value->host.name);
  url.host_kind = authority.value->host.kind;
  url.port = authority.value->port;
  url.path = std::move(*path.value);
  url.query = std::string(query);
  if (url.toString().size() > kMaxCanonicalLength) return error("URL longer than 8192 bytes");
  return ParseResult{std::move(url), {}};
}

std::string Url::origin() const {
  std::string text = scheme + "://";
  text += host_kind == HostKind::kIpv6 ? "[" + host + "]" : host;
  if (port != internal::defaultPort(scheme)) text += ":" + std::to_string(port);
  return text;
}

std::string Url::toString() const {
  std::string text = origin() + path;
  if (!query.empty()) text += "?" + query;
  return text;
}

}  // namespace policy

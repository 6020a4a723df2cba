// IPv4 and IPv6 literal parsing and formatting: the lenient WHATWG forms a URL host may use
// (decimal, octal, hex, short) and the strict forms DNS resolution produces.
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy::internal {
namespace {

constexpr std::uint64_t kOverflow = std::uint64_t{1} << 33;  // > any valid IPv4 part

std::vector<std::string_view> splitOn(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

int digitValue(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// WHATWG IPv4 number parser. Values past 2^32 saturate at kOverflow so callers reject them.
std::optional<std::uint64_t> parseIpv4Number(std::string_view text) noexcept {
  if (text.empty()) return std::nullopt;
  int radix = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    radix = 16;
  } else if (text.size() >= 2 && text[0] == '0') {
    text.remove_prefix(1);
    radix = 8;
  }
  std::uint64_t value = 0;  // "0x" alone is 0, as in WHATWG
  for (const char c : text) {
    const int digit = digitValue(c);
    if (digit < 0 || digit >= radix) return std::nullopt;
    value = std::min(value * static_cast<std::uint64_t>(radix) + static_cast<std::uint64_t>(digit),
                     kOverflow);
  }
  return value;
}

bool allDigits(std::string_view text) noexcept {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One hex group of an IPv6 address: 1-4 hex digits.
std::optional<std::uint16_t> parseHexGroup(std::string_view text) noexcept {
  if (text.empty() || text.size() > 4) return std::nullopt;
  unsigned value = 0;
  for (const char c : text) {
    const int digit = digitValue(c);
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<unsigned>(digit);
  }
  return static_cast<std::uint16_t>(value);
}

// Parses "a:b:c" (possibly ending in a dotted quad when allow_ipv4) into 16-bit groups.
bool parseGroups(std::string_view text, bool allow_ipv4, std::vector<std::uint16_t>& groups) {
  if (text.empty()) return true;
  const std::vector<std::string_view> parts = splitOn(text, ':');
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (last && allow_ipv4 && parts[i].find('.') != std::string_view::npos) {
      const std::optional<Ipv4Bytes> v4 = parseStrictIpv4(parts[i]);
      if (!v4) return false;
      groups.push_back(static_cast<std::uint16_t>(((*v4)[0] << 8) | (*v4)[1]));
      groups.push_back(static_cast<std::uint16_t>(((*v4)[2] << 8) | (*v4)[3]));
      continue;
    }
    const std::optional<std::uint16_t> group = parseHexGroup(parts[i]);
    if (!group) return false;
    groups.push_back(*group);
  }
  return true;
}

}  // namespace

bool endsInNumber(std::string_view host) noexcept {
  std::vector<std::string_view> parts = splitOn(host, '.');
  if (parts.back().empty()) {
    if (parts.size() == 1) return false;
    parts.pop_back();
  }
  const std::string_view last = parts.back();
  if (allDigits(last)) return true;
  return parseIpv4Number(last).has_value();
}

std::optional<Ipv4Bytes> parseLenientIpv4(std::string_view host) noexcept {
  std::vector<std::string_view> parts = splitOn(host, '.');
  if (parts.size() > 1 && parts.back().empty()) parts.pop_back();  // one trailing dot
  if (parts.empty() || parts.size() > 4) return std::nullopt;
  std::vector<std::uint64_t> numbers;
  for (const std::string_view part : parts) {
    const std::optional<std::uint64_t> number = parseIpv4Number(part);
    if (!number) return std::nullopt;
    numbers.push_back(*number);
  }
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) {
    if (numbers[i] > 255) return std::nullopt;
  }
  const std::size_t leading = numbers.size() - 1;
  const std::uint64_t last_limit = std::uint64_t{1} << (8 * (4 - leading));
  if (numbers.back() >= last_limit) return std::nullopt;
  std::uint64_t value = numbers.back();
  for (std::size_t i = 0; i < leading; ++i) value += numbers[i] << (8 * (3 - i));
  return Ipv4Bytes{static_cast<std::uint8_t>(value >> 24), static_cast<std::uint8_t>(value >> 16),
                   static_cast<std::uint8_t>(value >> 8), static_cast<std::uint8_t>(value)};
}

std::optional<Ipv4Bytes> parseStrictIpv4(std::string_view text) noexcept {
  const std::vector<std::string_view> parts = splitOn(text, '.');
  if (parts.size() != 4) return std::nullopt;
  Ipv4Bytes bytes{};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string_view part = parts[i];
    if (!allDigits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) {
      return std::nullopt;
    }
    unsigned value = 0;
    for (const char c : part) value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 255) return std::nullopt;
    bytes[i] = static_cast<std::uint8_t>(value);
  }
  return bytes;
}

std::optional<Ipv6Bytes> parseIpv6(std::string_view text) noexcept {
  if (text.empty() || text.size() > 45) return std::nullopt;
  std::vector<std::uint16_t> head;
  std::vector<std::uint16_t> tail;
  const std::size_t gap = text.find("::");
  if (gap == std::string_view::npos) {
    if (!parseGroups(text, true, head) || head.size() != 8) return std::nullopt;
  } else {
    const std::string_view left = text.substr(0, gap);
    const std::string_view right = text.substr(gap + 2);
    if (right.find("::") != std::string_view::npos) return std::nullopt;
    if (!parseGroups(left, false, head) || !parseGroups(right, true, tail)) return std::nullopt;
    if (head.size() + tail.size() > 7) return std::nullopt;
  }
  Ipv6Bytes bytes{};
  auto put = [&bytes](std::size_t index, std::uint16_t group) {
    bytes[2 * index] = static_cast<std::uint8_t>(group >> 8);
    bytes[2 * index + 1] = static_cast<std::uint8_t>(group & 0xff);
  };
  for (std::size_t i = 0; i < head.size(); ++i) put(i, head[i]);
  for (std::size_t i = 0; i < tail.size(); ++i) put(8 - tail.size() + i, tail[i]);
  return bytes;
}

std::string formatIpv4(const Ipv4Bytes& bytes) {
  return std::to_string(bytes[0]) + "." + std::to_string(bytes[1]) + "." +
         std::to_string(bytes[2]) + "." + std::to_string(bytes[3]);
}

std::string formatIpv6(const Ipv6Bytes& bytes) {
  if (const std::optional<Ipv4Bytes> v4 = mappedIpv4(bytes)) return "::ffff:" + formatIpv4(*v4);
  std::array<unsigned, 8> groups{};
  for (std::size_t i = 0; i < 8; ++i) groups[i] = (unsigned{bytes[2 * i]} << 8) | bytes[2 * i + 1];
  // RFC 5952: the longest run (first on ties) of two or more zero groups becomes "::".
  std::size_t best_start = 8;
  std::size_t best_length = 1;
  for (std::size_t i = 0; i < 8;) {
    std::size_t j = i;
    while (j < 8 && groups[j] == 0) ++j;
    if (j - i > best_length) {
      best_start = i;
      best_length = j - i;
    }
    i = j == i ? i + 1 : j;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < 8; ++i) {
    if (i == best_start) {
      text += "::";
      i += best_length - 1;
      continue;
    }
    if (!text.empty() && text.back() != ':') text += ':';
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      const unsigned digit = (groups[i] >> shift) & 0xf;
      if (digit != 0 || started || shift == 0) {
        text += kHex[digit];
        started = true;
      }
    }
  }
  return text;
}

IpAddress makeIpv4(const Ipv4Bytes& bytes) noexcept {
  IpAddress address;
  std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
  return address;
}

IpAddress makeIpv6(const Ipv6Bytes& bytes) noexcept {
  IpAddress address;
  address.v6 = true;
  address.bytes = bytes;
  return address;
}

std::optional<Ipv4Bytes> mappedIpv4(const Ipv6Bytes& bytes) noexcept {
  for (std::size_t i = 0; i < 10; ++i) {
    if (bytes[i] != 0) return std::nullopt;
  }
  if (bytes[10] != 0xff || bytes[11] != 0xff) return std::nullopt;
  return Ipv4Bytes{bytes[12], bytes[13], bytes[14], bytes[15]};
}

std::optional<Ipv4Bytes> embeddedIpv4(const IpAddress& address) noexcept {
  if (!address.v6) return std::nullopt;
  const Ipv6Bytes& b = address.bytes;
  const Ipv4Bytes tail{b[12], b[13], b[14], b[15]};
  if (mappedIpv4(b)) return tail;
  const bool first_twelve_zero =
      std::all_of(b.begin(), b.begin() + 12, [](auto x) { return x == 0; });
  // IPv4-compatible (deprecated), except :: and ::1 which are IPv6's own specials.
  if (first_twelve_zero && (b[12] | b[13] | b[14]) != 0) return tail;
  if (first_twelve_zero && b[15] > 1) return tail;
  // NAT64 well-known prefix 64:ff9b::/96.
  static constexpr std::array<std::uint8_t, 12> kNat64{0x00, 0x64, 0xff, 0x9b, 0, 0,
                                                       0,    0,    0,    0,    0, 0};
  if (std::equal(kNat64.begin(), kNat64.end(), b.begin())) return tail;
  return std::nullopt;
}

}  // namespace policy::internal

namespace policy {

std::string IpAddress::toString() const {
  if (!v6) return internal::formatIpv4({bytes[0], bytes[1], bytes[2], bytes[3]});
  return internal::formatIpv6(bytes);
}

std::optional<IpAddress> ipAddressFromSockaddr(const void* sockaddr_ptr) {
  if (sockaddr_ptr == nullptr) return std::nullopt;
  sa_family_t family = 0;
  std::memcpy(&family, static_cast<const char*>(sockaddr_ptr) + offsetof(sockaddr, sa_family),
              sizeof(family));
  IpAddress result;
  if (family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, sockaddr_ptr, sizeof(v4));
    std::memcpy(result.bytes.data(), &v4.sin_addr, 4);
    return result;
  }
  if (family == AF_INET6) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, sockaddr_ptr, sizeof(v6));
    result.v6 = true;
    std::memcpy(result.bytes.data(), &v6.sin6_addr, 16);
    return result;
  }
  return std::nullopt;
}

std::optional<IpAddress> parseIpAddress(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    const std::optional<internal::Ipv4Bytes> v4 = internal::parseStrictIpv4(text);
    if (!v4) return std::nullopt;
    return internal::makeIpv4(*v4);
  }
  const std::optional<internal::Ipv6Bytes> v6 = internal::parseIpv6(text);
  if (!v6) return std::nullopt;
  return internal::makeIpv6(*v6);
}

}  // namespace policy

#include "sidecar/header_filter.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace sidecar {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Field names listed in every Connection header (they are hop-by-hop for this hop only).
std::vector<std::string> connectionOptions(const HeaderList& headers) {
  std::vector<std::string> names;
  for (const auto& [name, value] : headers) {
    if (!iequals(name, "Connection")) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const auto token = trim(rest.substr(0, comma));
      if (!token.empty()) names.emplace_back(token);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return names;
}

bool startsWithIgnoringCase(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

HeaderList filter(const HeaderList& headers, const std::vector<std::string_view>& also_drop) {
  const auto listed = connectionOptions(headers);
  HeaderList kept;
  for (const auto& header : headers) {
    const std::string_view name = header.first;
    const auto matches = [name](std::string_view other) { return iequals(name, other); };
    if (isHopByHopHeader(name) || std::any_of(also_drop.begin(), also_drop.end(), matches) ||
        std::any_of(listed.begin(), listed.end(), matches)) {
      continue;
    }
    kept.push_back(header);
  }
  return kept;
}

}  // namespace

bool isHopByHopHeader(std::string_view name) noexcept {
  static constexpr std::array<std::string_view, 6> kNames = {
      "Connection", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding", "Upgrade"};
  // Proxy-Authorization, Proxy-Authenticate, Proxy-Connection, ...: meant for a proxy, and the
  // sidecar must not leak credentials meant for itself to the upstream.
  if (startsWithIgnoringCase(name, "Proxy-")) return true;
  return std::any_of(kNames.begin(), kNames.end(),
                     [name](std::string_view hop) { return iequals(name, hop); });
}

HeaderList filterRequestHeaders(const HeaderList& headers) {
  return filter(headers, {"Host", "Content-Length", "Expect"});
}

HeaderList filterResponseHeaders(const HeaderList& headers, bool rechunked) {
  if (rechunked) return filter(headers, {"Content-Length"});
  return filter(headers, {});
}

std::string findHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

}  // namespace sidecar

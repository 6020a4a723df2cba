// The URL decision (before DNS) and the address decision (after DNS).
#include <optional>
#include <string>
#include <string_view>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace internal {

std::uint16_t defaultPort(std::string_view scheme) noexcept { return scheme == "https" ? 443 : 80; }

bool pathUnderPrefix(std::string_view prefix, std::string_view path) noexcept {
  if (prefix.empty()) return true;
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

bool isLocalhostName(std::string_view host) noexcept {
  constexpr std::string_view kSuffix = ".localhost";
  return host == "localhost" ||
         (host.size() > kSuffix.size() && host.substr(host.size() - kSuffix.size()) == kSuffix);
}

bool ruleCovers(const Url& base, const Url& url) noexcept {
  return base.scheme == url.scheme && base.host == url.host && base.port == url.port &&
         pathUnderPrefix(base.path, url.path);
}

}  // namespace internal

namespace {

Decision allow(std::string reason, std::string rule_id) {
  return Decision{Verdict::kAllow, std::move(reason), std::move(rule_id)};
}

Decision deny(std::string reason, std::string rule_id = {}) {
  return Decision{Verdict::kDeny, std::move(reason), std::move(rule_id)};
}

// The rule's host as an address, IPv4-mapped addresses folded to IPv4 so that
// "http://127.0.0.1/" names the resolved "::ffff:127.0.0.1".
std::optional<IpAddress> literalAddress(const Url& base) {
  if (base.host_kind == HostKind::kDomain) return std::nullopt;
  return parseIpAddress(base.host);
}

IpAddress foldMapped(const IpAddress& address) {
  if (!address.v6) return address;
  if (const std::optional<internal::Ipv4Bytes> v4 = internal::mappedIpv4(address.bytes)) {
    return internal::makeIpv4(*v4);
  }
  return address;
}

}  // namespace

const Rule* findRule(const Policy& policy, const Url& url) {
  for (const Rule& rule : policy.rules) {
    if (internal::ruleCovers(rule.base, url)) return &rule;
  }
  return nullptr;
}

Decision decideUrl(const Policy& policy, const Url& url) {
  if (const Rule* rule = findRule(policy, url)) {
    return allow(url.toString() + " is allowed by " + rule->id + " (" + rule->base.toString() + ")",
                 rule->id);
  }
  for (const Rule& rule : policy.rules) {
    if (rule.base.origin() == url.origin()) {
      return deny("path '" + url.path + "' is outside the allowed prefixes for " + url.origin() +
                  " (first: " + rule.base.path + ")");
    }
  }
  return deny("no allowlist entry covers " + url.origin() +
              "; ask the operator to add it or use an allowed server");
}

Decision decideUrl(const Policy& policy, std::string_view url_text) {
  ParseResult parsed = parseUrl(url_text);
  if (!parsed.url) return deny("unparsable URL: " + parsed.error);
  return decideUrl(policy, *parsed.url);
}

Decision decideAddress(const Rule& rule, const Url& url, const IpAddress& resolved) {
  const AddressClass address_class = classifyAddress(resolved);
  const std::string address = resolved.toString();
  if (address_class == AddressClass::kPublic) {
    return allow(url.host + " resolved to public address " + address, rule.id);
  }
  const std::string class_name = toString(address_class);
  if (address_class == AddressClass::kMetadata) {
    return deny(url.host + " resolved to cloud metadata address " + address +
                    "; never allowed, not even by the operator's mcp.allowlist",
                rule.id);
  }
  const std::optional<IpAddress> named = literalAddress(rule.base);
  if (named && foldMapped(*named) == foldMapped(resolved)) {
    return allow(address + " is " + class_name + " but " + rule.id + " names it explicitly",
                 rule.id);
  }
  if (address_class == AddressClass::kLoopback && rule.base.host_kind == HostKind::kDomain &&
      internal::isLocalhostName(rule.base.host)) {
    return allow(address + " is loopback and " + rule.id + " names " + rule.base.host, rule.id);
  }
  return deny(url.host + " resolved to " + class_name + " address " + address +
                  "; denied unless the allowlist entry names that address explicitly",
              rule.id);
}

}  // namespace policy

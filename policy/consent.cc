// Egress is the operator's to grant: a call's own list (the model's choice) may name public
// hosts only; loopback, private, link-local and other special addresses, and names that resolve
// through local configuration, need an operator rule naming them (narrow() then applies).
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace {

// Suffixes of names that only local resolvers answer (RFC 6762 .local, RFC 8375 .home.arpa,
// ICANN's private-use .internal, and the common home-router and distribution defaults).
constexpr std::array<std::string_view, 5> kLocalSuffixes = {".local", ".internal", ".lan",
                                                            ".home.arpa", ".localdomain"};

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool isLocalName(std::string_view host) {
  if (internal::isLocalhostName(host)) return true;
  if (host.find('.') == std::string_view::npos) return true;  // /etc/hosts or a search domain
  for (const std::string_view suffix : kLocalSuffixes) {
    if (endsWith(host, suffix)) return true;
  }
  return false;
}

// Why the host needs the operator, or nullopt when it is public.
std::optional<std::string> specialHost(const Url& url) {
  if (url.host_kind == HostKind::kDomain) {
    if (isLocalName(url.host)) return std::string("a local name");
    return std::nullopt;
  }
  const std::optional<IpAddress> address = parseIpAddress(url.host);
  if (!address) return std::string("not a valid IP literal");
  const AddressClass value = classifyAddress(*address);
  if (value == AddressClass::kPublic) return std::nullopt;
  const std::string name = toString(value);
  const bool vowel = std::string_view("aeiou").find(name.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name + " address";
}

}  // namespace

bool needsOperatorConsent(const Url& url) { return specialHost(url).has_value(); }

void requirePublicHosts(const Policy& requested) {
  for (const Rule& rule : requested.rules) {
    if (const std::optional<std::string> why = specialHost(rule.base)) {
      throw PolicyError(rule.id + ": " + rule.base.host + " is " + *why +
                        "; a call's mcp_allowlist may name public hosts only. To allow it, the "
                        "operator must add " +
                        rule.base.toString() + " to mcp.allowlist in the server's config");
    }
  }
}

}  // namespace policy

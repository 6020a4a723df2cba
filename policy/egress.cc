// Egress rules: parsing entries into host patterns, combining the operator's lists with a call's
// choice, and the decisions before and after DNS.
#include "policy/egress.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "policy/internal.h"

namespace policy {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw PolicyError(where + ": " + what);
}

std::optional<std::uint16_t> parsePort(std::string_view text) {
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || at != end || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// A host as parseUrl canonicalizes it; `text` holds no port, path or user.
HostPattern canonicalHost(const std::string& text, const std::string& where) {
  if (text.empty()) fail(where, "empty host");
  if (text.find_first_of("/\\@?#% \t") != std::string::npos) {
    fail(where, "'" + text + "' is not a host name (no scheme, path, user or port here)");
  }
  const auto parsed = parseUrl("http://" + text + "/");
  if (!parsed.url || parsed.url->port != 80 || parsed.url->path != "/") {
    fail(where, "'" + text + "' is not a host name" +
                    (parsed.error.empty() ? std::string() : " (" + parsed.error + ")"));
  }
  return HostPattern{parsed.url->host, parsed.url->host_kind, false};
}

HostPattern hostPattern(const std::string& text, const std::string& where) {
  if (text == "*") fail(where, "'*' would allow every host; list the domains instead");
  if (!text.starts_with("*.")) return canonicalHost(text, where);
  HostPattern pattern = canonicalHost(text.substr(2), where);
  if (pattern.kind != HostKind::kDomain) fail(where, "a wildcard covers names, not addresses");
  if (pattern.host.find('.') == std::string::npos) {
    fail(where, "'" + text + "' would cover a whole top-level domain; name a domain under it");
  }
  pattern.subdomains = true;
  return pattern;
}

// "host", "host:port", "[v6]", "[v6]:port", each optionally "*."-prefixed.
EgressRule ruleFromText(const std::string& text, const std::string& where) {
  if (text.find_first_of("/\\@?#% \t") != std::string::npos) {
    fail(where, "'" + text + "' is not a host name (no scheme, path or user here)");
  }
  std::string host = text;
  std::optional<std::uint16_t> port;
  const auto colon = text.rfind(':');
  const auto bracket = text.rfind(']');
  const bool has_port = colon != std::string::npos &&
                        (bracket == std::string::npos ? text.find(':') == colon : colon > bracket);
  if (has_port) {
    port = parsePort(std::string_view(text).substr(colon + 1));
    if (!port) fail(where, "'" + text + "' has no valid port after ':' (1 to 65535)");
    host = text.substr(0, colon);
  }
  return EgressRule{where, hostPattern(host, where), {port.value_or(443)}};
}

EgressRule ruleFromObject(const json& entry, const std::string& where) {
  for (const auto& [key, value] : entry.items()) {
    if (key != "host" && key != "ports" && key != "id") {
      fail(where, "'" + key + "' is not a known setting (host, ports, id)");
    }
  }
  const auto host = entry.find("host");
  if (host == entry.end() || !host->is_string()) fail(where, "\"host\" (a string) is required");
  EgressRule rule{where, hostPattern(host->get<std::string>(), where), {443}};
  if (const auto id = entry.find("id"); id != entry.end()) {
    if (!id->is_string() || id->get<std::string>().empty()) fail(where, "\"id\" must be a name");
    rule.id = id->get<std::string>();
  }
  if (const auto ports = entry.find("ports"); ports != entry.end()) {
    if (!ports->is_array() || ports->empty()) fail(where, "\"ports\" must be a non-empty list");
    rule.ports.clear();
    for (const auto& port : *ports) {
      if (!port.is_number_unsigned() || port.get<std::uint64_t>() == 0 ||
          port.get<std::uint64_t>() > 65535) {
        fail(where, "ports must be numbers from 1 to 65535");
      }
      rule.ports.push_back(static_cast<std::uint16_t>(port.get<std::uint64_t>()));
    }
  }
  return rule;
}

bool holdsPort(const EgressRule& rule, std::uint16_t port) {
  return std::find(rule.ports.begin(), rule.ports.end(), port) != rule.ports.end();
}

std::string hostPort(const Url& target) {
  return (target.host_kind == HostKind::kIpv6 ? "[" + target.host + "]" : target.host) + ":" +
         std::to_string(target.port);
}

}  // namespace

bool HostPattern::matches(std::string_view canonical_host) const {
  if (!subdomains) return canonical_host == host;
  return canonical_host.size() > host.size() + 1 && canonical_host.ends_with(host) &&
         canonical_host[canonical_host.size() - host.size() - 1] == '.';
}

bool HostPattern::covers(const HostPattern& other) const {
  if (!subdomains) return !other.subdomains && other.host == host;
  return (other.subdomains && other.host == host) || matches(other.host);
}

std::string HostPattern::toString() const {
  if (kind == HostKind::kIpv6) return "[" + host + "]";
  return subdomains ? "*." + host : host;
}

EgressPolicy loadEgressRules(const json& entries, const std::string& where) {
  if (!entries.is_array()) fail(where, "must be a list of hosts");
  EgressPolicy policy;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const auto& entry = entries[i];
    if (entry.is_string()) {
      policy.rules.push_back(ruleFromText(entry.get<std::string>(), at));
    } else if (entry.is_object()) {
      policy.rules.push_back(ruleFromObject(entry, at));
    } else {
      fail(at, "an entry is a host (\"pypi.org\", \"*.example.com:8443\") or an object");
    }
  }
  return policy;
}

nlohmann::json toJson(const EgressPolicy& policy) {
  auto entries = nlohmann::json::array();
  for (const auto& rule : policy.rules) {
    entries.push_back({{"host", rule.host.toString()}, {"ports", rule.ports}, {"id", rule.id}});
  }
  return entries;
}

EgressPolicy effectiveEgress(const EgressCatalog& catalog, const std::vector<std::string>& profiles,
                             const EgressPolicy& requested) {
  EgressPolicy granted = catalog.allow;
  for (const auto& name : profiles) {
    const auto it = catalog.profiles.find(name);
    if (it == catalog.profiles.end()) {
      std::string known;
      for (const auto& [profile, rules] : catalog.profiles) {
        known += (known.empty() ? "" : ", ") + profile;
      }
      throw PolicyError("egress: there is no profile '" + name + "' on this server (" +
                        (known.empty() ? "it has none" : "it has " + known) + ")");
    }
    granted.rules.insert(granted.rules.end(), it->second.rules.begin(), it->second.rules.end());
  }
  if (requested.rules.empty()) return granted;
  for (const auto& wanted : requested.rules) {
    const bool within = std::any_of(granted.rules.begin(), granted.rules.end(), [&](const auto& g) {
      return g.host.covers(wanted.host) &&
             std::all_of(wanted.ports.begin(), wanted.ports.end(),
                         [&](std::uint16_t port) { return holdsPort(g, port); });
    });
    if (!within) {
      throw PolicyError(wanted.id + ": " + wanted.host.toString() +
                        " is not in this server's egress list for the session (egress.allow and "
                        "the profiles asked for); a call can only narrow it");
    }
  }
  return requested;
}

ParseResult parseConnectTarget(std::string_view authority) {
  if (authority.empty() || authority.find_first_of("/\\@?# \t") != std::string_view::npos) {
    return {std::nullopt, "a CONNECT target is host:port, nothing else"};
  }
  const auto colon = authority.rfind(':');
  const auto bracket = authority.rfind(']');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket) ||
      !parsePort(authority.substr(colon + 1))) {
    return {std::nullopt, "a CONNECT target needs a port (host:443)"};
  }
  auto parsed = parseUrl("https://" + std::string(authority) + "/");
  if (parsed.url && parsed.url->path != "/") return {std::nullopt, "not a host:port"};
  return parsed;
}

const EgressRule* findEgressRule(const EgressPolicy& policy, const Url& target) {
  for (const auto& rule : policy.rules) {
    if (rule.host.matches(target.host) && holdsPort(rule, target.port)) return &rule;
  }
  return nullptr;
}

Decision decideEgress(const EgressPolicy& policy, const Url& target,
                      const std::vector<Endpoint>& server_endpoints) {
  const auto* rule = findEgressRule(policy, target);
  if (rule == nullptr) {
    return Decision{Verdict::kDeny,
                    "egress to " + hostPort(target) +
                        " is not allowed: no entry of this session's egress list covers it. The "
                        "server's operator can add it to egress.allow or a profile",
                    {}};
  }
  if (auto forbidden = decideForbiddenUrl(target, server_endpoints); !forbidden.allowed()) {
    return forbidden;
  }
  return Decision{Verdict::kAllow, hostPort(target) + " allowed by " + rule->id, rule->id};
}

Decision decideEgressAddress(const EgressRule& rule, const Url& target, const IpAddress& resolved,
                             const std::vector<Endpoint>& server_endpoints) {
  if (auto forbidden = decideForbiddenAddress(target, resolved, server_endpoints);
      !forbidden.allowed()) {
    return forbidden;
  }
  // The URL decision's rule form: only a rule that names one host can name an address.
  Rule named;
  named.id = rule.id;
  named.base = target;
  if (rule.host.subdomains) named.base.host.clear();  // a wildcard is never consent
  return decideAddress(named, target, resolved);
}

}  // namespace policy

// The egress gateway's rules: which host and port a sandbox's proxied HTTP(S) requests may reach
// (a CONNECT target, or an absolute-form request's URL). Pure, like the rest of policy/: entries
// are parsed into canonical host patterns, the operator's lists and a call's choice combine into
// one EgressPolicy, and a target is decided against it before DNS (decideEgress) and for each
// resolved address after it (decideEgressAddress). Thread safety: pure functions; const objects
// may be shared.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"

namespace policy {

// A host, or every name under a domain ("*.example.com": a.example.com, a.b.example.com, but not
// example.com itself).
struct HostPattern {
  std::string host;  // canonical, as parseUrl writes it; for a wildcard, the suffix without "*."
  HostKind kind = HostKind::kDomain;
  bool subdomains = false;

  [[nodiscard]] bool matches(std::string_view canonical_host) const;
  // Whether every host `other` matches, this one matches too.
  [[nodiscard]] bool covers(const HostPattern& other) const;
  [[nodiscard]] std::string toString() const;  // "example.com", "*.example.com", "[::1]"
  friend bool operator==(const HostPattern&, const HostPattern&) = default;
};

struct EgressRule {
  std::string id;  // "egress.allow[2]", or the operator's name for it
  HostPattern host;
  std::vector<std::uint16_t> ports;  // never empty; 443 unless the entry names others
};

struct EgressPolicy {
  std::vector<EgressRule> rules;  // first match wins; none: everything denied
};

// Entries: "host", "host:port", "*.domain", "*.domain:port", or {"host": "...", "ports": [...],
// "id": "..."}. IP literals in any spelling parseUrl folds are canonicalized; "*" alone, a
// wildcard over an IP or a single label ("*.com"), a path, a user, a port 0 and unknown keys are
// refused. `where` names the list in errors ("egress.allow[1]: ..."). Throws PolicyError.
[[nodiscard]] EgressPolicy loadEgressRules(const nlohmann::json& entries, const std::string& where);

// The rules as loadEgressRules reads them back: [{"host", "ports", "id"}, ...].
[[nodiscard]] nlohmann::json toJson(const EgressPolicy& policy);

// The operator's egress configuration: `allow`, which every session with egress gets, and named
// profiles (e.g. "python-packages") a call may add.
struct EgressCatalog {
  EgressPolicy allow;
  std::map<std::string, EgressPolicy> profiles;
};

// What one session may reach: the operator's allow list plus the profiles the call picks; a
// call's own entries (`requested`, non-empty) narrow that to what they name, each within it (its
// hosts covered by one rule, its ports a subset of that rule's). Throws PolicyError naming an
// unknown profile (and the known ones) or the first entry the operator did not allow.
[[nodiscard]] EgressPolicy effectiveEgress(const EgressCatalog& catalog,
                                           const std::vector<std::string>& profiles,
                                           const EgressPolicy& requested);

// A CONNECT request's target ("host:port", the port required; "[v6]:port"), canonicalized as a
// URL host (scheme "https", path "/"). Anything else (a path, a user, a query, spaces, no port)
// is an error.
[[nodiscard]] ParseResult parseConnectTarget(std::string_view authority);

// Before DNS: the first rule whose host pattern matches the target's host and whose ports hold
// its port; then the hosts no rule may open (decideForbiddenUrl: metadata, the server itself).
// The reason names the host and port and, on a denial, what the operator would add.
[[nodiscard]] Decision decideEgress(const EgressPolicy& policy, const Url& target,
                                    const std::vector<Endpoint>& server_endpoints);
// The rule decideEgress allowed `target` by; nullptr when none. Lives as long as `policy`.
[[nodiscard]] const EgressRule* findEgressRule(const EgressPolicy& policy, const Url& target);

// After DNS, for each address a connection would go to: special ranges (loopback, private,
// link-local, ...) only when the rule names that address as its host (an IP literal, or a
// localhost name for loopback); metadata and the server's own endpoints never.
[[nodiscard]] Decision decideEgressAddress(const EgressRule& rule, const Url& target,
                                           const IpAddress& resolved,
                                           const std::vector<Endpoint>& server_endpoints);

}  // namespace policy

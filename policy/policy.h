// Pure, I/O-free policy for the MCP sidecar: URL canonicalization and allow/deny decisions.
// Parsing, loading and deciding are separate; deciding is pure and every Decision carries a
// readable reason and the id of the rule that decided. A Policy is immutable once built and is
// shared as std::shared_ptr<const Policy>. Thread safety: every function is pure and reentrant;
// const objects may be shared freely between threads.
//
// The canonicalization rules (what is rejected and why) are written down in policy/README.md.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace policy {

enum class HostKind { kDomain, kIpv4, kIpv6 };

// A canonical absolute http(s) URL. Two URLs that reach the same resource compare equal, and
// parseUrl(url.toString()) == url for every Url that parseUrl returned.
struct Url {
  std::string scheme;  // "http" or "https"
  // Lowercase ASCII; no trailing dot; IPv4 as a dotted quad; IPv6 RFC 5952-compressed without
  // brackets. An IPv4-mapped IPv6 literal (::ffff:a.b.c.d) becomes the IPv4 host it names.
  std::string host;
  HostKind host_kind = HostKind::kDomain;
  std::uint16_t port = 0;  // explicit or the scheme's default (80, 443); never 0
  std::string path;        // starts with "/", dot segments removed, unreserved %XX decoded
  std::string query;       // without "?", kept verbatim (empty when none)

  [[nodiscard]] std::string toString() const;  // scheme://host[:port]/path[?query]
  [[nodiscard]] std::string origin() const;    // scheme://host[:port] (port only if non-default)
  friend bool operator==(const Url&, const Url&) = default;
};

struct ParseResult {
  std::optional<Url> url;
  std::string error;  // why the text could not be canonicalized (then url is empty)
};

// Anything it cannot canonicalize unambiguously is an error (and so denied by callers).
[[nodiscard]] ParseResult parseUrl(std::string_view text);

// An IP address after DNS resolution. IPv4 uses bytes[0..3] (the rest stay zero); IPv6 all 16.
struct IpAddress {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};
  [[nodiscard]] std::string toString() const;  // dotted quad or RFC 5952 text
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};
// Strict numeric text as inet_ntop writes it: dotted-decimal IPv4 or IPv6 (no brackets, no
// zone id). Lenient URL-host forms (0x7f.1, 2130706433) are parseUrl's job, not this one's.
[[nodiscard]] std::optional<IpAddress> parseIpAddress(std::string_view text);
// The address of an AF_INET / AF_INET6 socket address (getaddrinfo, getifaddrs); nullopt for
// any other family or null. Takes `const void*` so this header needs no socket headers.
[[nodiscard]] std::optional<IpAddress> ipAddressFromSockaddr(const void* sockaddr_ptr);

enum class AddressClass {
  kPublic,
  kPrivate,      // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
  kLoopback,     // 127/8, ::1
  kLinkLocal,    // 169.254/16, fe80::/10
  kMetadata,     // 169.254.169.254, 169.254.170.2, 100.100.100.200, fd00:ec2::254
  kUnspecified,  // 0.0.0.0/8, ::
  kSharedCgnat,  // 100.64/10
  kMulticast,    // 224/4, ff00::/8
  kReserved,     // 240/4, broadcast, documentation/benchmark ranges, IPv6 outside 2000::/3, ...
};
// IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96) and NAT64 (64:ff9b::/96) IPv6 addresses
// are classified as the IPv4 address they carry.
[[nodiscard]] AddressClass classifyAddress(const IpAddress& address);
[[nodiscard]] const char* toString(AddressClass value);

struct Rule {
  std::string id;  // "allowlist[2]" or the operator's name for it
  Url base;        // scheme + host + port + path prefix (matched on segment boundaries); no query
  std::vector<std::string> methods;  // allowed JSON-RPC methods; empty = any
  std::vector<std::string> tools;    // allowed tools/call names; empty = any
};

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Policy {
  std::vector<Rule> rules;  // first match wins; no rules = everything denied
};

// Builds from ["http://host:port/prefix", {"url": "...", "methods": [...], "tools": [...],
// "id": "..."}, ...]. Rejects unparsable URLs, URLs with a query, duplicate URLs or ids, unknown
// keys, and a "tools" list whose "methods" list lacks "tools/call". Errors name the entry
// ("allowlist[1].methods[0]: ...") and throw PolicyError.
[[nodiscard]] std::shared_ptr<const Policy> loadPolicy(const nlohmann::json& entries);

// The JSON form loadPolicy accepts, with every rule's id: loadPolicy(toJson(p)) decides like p.
[[nodiscard]] nlohmann::json toJson(const Policy& policy);

enum class Verdict { kAllow, kDeny };

struct Decision {
  Verdict verdict = Verdict::kDeny;
  std::string reason;   // always set, readable
  std::string rule_id;  // the rule that matched, empty when none did
  [[nodiscard]] bool allowed() const noexcept { return verdict == Verdict::kAllow; }
};

// Step 1, before DNS: does a rule cover this URL? Unknown -> deny.
[[nodiscard]] Decision decideUrl(const Policy& policy, const Url& url);
// Same, from text: an unparsable URL is denied with the parser's error in the reason.
[[nodiscard]] Decision decideUrl(const Policy& policy, std::string_view url_text);
// The first rule whose scheme, host and port equal the URL's and whose path is a segment-wise
// prefix of the URL's path; nullptr when none. The pointer lives as long as `policy`.
[[nodiscard]] const Rule* findRule(const Policy& policy, const Url& url);

// Step 2, after DNS, for each resolved address: special ranges (everything but kPublic) are
// denied unless the matched rule names that address explicitly: its host is an IP literal equal
// to the address, or its host is "localhost" / "*.localhost" and the address is loopback.
// Cloud metadata addresses are denied even then (see decideForbiddenUrl).
// A hostname alone is not consent: a public name that resolves to 169.254.169.254 is denied.
[[nodiscard]] Decision decideAddress(const Rule& rule, const Url& url, const IpAddress& resolved);

// Step 3, for rules with methods/tools lists: the JSON-RPC body (single message or batch; every
// element of a batch must be allowed). The lifecycle methods initialize, ping,
// notifications/initialized and notifications/cancelled are always allowed (no MCP server is
// usable without them). JSON-RPC responses (no "method") carry no call and are allowed.
[[nodiscard]] Decision decideMcpCall(const Rule& rule, const nlohmann::json& body);
// True for the methods decideMcpCall always allows.
[[nodiscard]] bool isLifecycleMethod(std::string_view method) noexcept;

// An address and port that no allowlist may open, not even the operator's: one of the MCP
// server's own listeners (code that reaches it drives the server that hosts its sandbox). A
// loopback or unspecified address stands for every local address (127/8, ::1, 0.0.0.0, ::) at
// that port; callers list the interface addresses of a wildcard bind themselves.
struct Endpoint {
  IpAddress address;
  std::uint16_t port = 0;
  [[nodiscard]] std::string toString() const;  // "127.0.0.1:8765", "[::1]:8765"
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};
// "a.b.c.d:port" or "[v6]:port", strict numeric forms as Endpoint::toString writes them.
[[nodiscard]] std::optional<Endpoint> parseEndpoint(std::string_view text);

// Hosts that are never allowed, whatever any allowlist says: cloud metadata services (by address,
// in any spelling parseUrl folds to it, or by their well-known names such as
// metadata.google.internal) and the server's own endpoints (by address, or by a localhost name at
// a local endpoint's port). Denials name the rule; allow otherwise.
[[nodiscard]] Decision decideForbiddenUrl(const Url& url,
                                          const std::vector<Endpoint>& server_endpoints);
// The same rule after DNS, for the address a connection would go to.
[[nodiscard]] Decision decideForbiddenAddress(const Url& url, const IpAddress& resolved,
                                              const std::vector<Endpoint>& server_endpoints);

// True when only the operator may open the URL's host: an IP literal outside the public ranges,
// or a local name (localhost, *.localhost, single-label names, *.local, *.internal, *.lan,
// *.home.arpa, *.localdomain) that resolves through local configuration.
[[nodiscard]] bool needsOperatorConsent(const Url& url);

// A call's own list when the operator configured none: public hosts only. Throws PolicyError
// naming the first entry that needs the operator's consent and what to configure.
void requirePublicHosts(const Policy& requested);

// Operator narrowing: every entry of `requested` must be allowed by `operator_policy` (its URL
// covered by an operator rule, and its methods/tools a subset of that rule's). Returns the
// effective policy (requested entries, with the operator's restrictions applied: an empty
// requested list inherits the operator's list) or throws PolicyError naming the first entry the
// operator did not allow.
[[nodiscard]] std::shared_ptr<const Policy> narrow(const Policy& operator_policy,
                                                   const Policy& requested);

}  // namespace policy

// Resolves the upstream host once, checks every address against the rule (policy::decideAddress)
// and pins the first allowed one for the connection, so that a second DNS answer (rebinding)
// cannot send the request elsewhere. Thread-safety: reentrant; resolveAndPin blocks in
// getaddrinfo, so call it on a worker thread, never on the io_context thread.
#pragma once

#include <string>
#include <vector>

#include "policy/egress.h"
#include "policy/policy.h"

namespace sidecar {

struct PinnedAddress {
  policy::Decision decision;   // allowed: `address` may be used
  bool lookup_failed = false;  // the name did not resolve (a 502, not a policy denial)
  std::string address;         // the address checked, as text (no brackets)
  std::string curl_resolve;    // CURLOPT_RESOLVE entry "host:port:addr"; empty for IP literals
};

// Pure part: picks the first address the rule allows, in the resolver's order. An address that
// reaches one of `denied` (the MCP server's own listeners) or cloud metadata is never picked.
[[nodiscard]] PinnedAddress pinFirstAllowed(const policy::Rule& rule, const policy::Url& url,
                                            const std::vector<policy::IpAddress>& addresses,
                                            const std::vector<policy::Endpoint>& denied = {});

// getaddrinfo + pinFirstAllowed. IP-literal hosts are not looked up.
[[nodiscard]] PinnedAddress resolveAndPin(const policy::Rule& rule, const policy::Url& url,
                                          const std::vector<policy::Endpoint>& denied = {});

// The egress proxy's counterparts: the first address policy::decideEgressAddress allows (metadata
// and the server's own endpoints never), and the lookup in front of it. `curl_resolve` stays
// empty: the proxy connects to `address` itself.
[[nodiscard]] PinnedAddress pinFirstAllowedEgress(const policy::EgressRule& rule,
                                                  const policy::Url& target,
                                                  const std::vector<policy::IpAddress>& addresses,
                                                  const std::vector<policy::Endpoint>& denied);
[[nodiscard]] PinnedAddress resolveAndPinEgress(const policy::EgressRule& rule,
                                                const policy::Url& target,
                                                const std::vector<policy::Endpoint>& denied);

// "host:port:addr" with an IPv6 address in brackets, as CURLOPT_RESOLVE expects.
[[nodiscard]] std::string curlResolveEntry(const policy::Url& url,
                                           const policy::IpAddress& address);

}  // namespace sidecar

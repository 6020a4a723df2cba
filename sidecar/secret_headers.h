// The secret headers the sidecar sets on requests to some hosts, the MCP relay on the requests it
// forwards (request_handler.h) and the egress proxy by interception (tls_intercept.h): the
// server resolves the operator's `egress.secrets` (values from its environment or files) and
// writes them into the session directory as JSON, mode 0600:
//   [{"host": "api.example.com", "port": 443, "relay": true,
//     "headers": {"Authorization": "Bearer ..."}}]
// `port` defaults to 443. `relay` (default false): the MCP relay sets them too, which the server
// writes only for hosts both the session's and the operator's MCP allowlists name; the proxy
// intercepts only the hosts its egress rules reach (reachableThrough). Validated at load time:
// hosts canonical as policy::parseUrl writes them (lowercase, IPv6 without brackets), one entry per
// host and port, header names HTTP tokens and not ones that frame or route the request (hop-by-hop,
// Host, Content-Length, Expect), no name twice (case-insensitive), values without CR, LF or NUL.
// Secret values never leave this struct except into a request: errors name the entry and header
// but never quote a value (not even JSON syntax errors, whose text would), and toString() lists
// names only.
// Thread-safety: immutable after loading; share as std::shared_ptr<const SecretHeaders>.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "policy/egress.h"

namespace sidecar {

struct SecretHeader {
  std::string name;   // as the operator spelled it
  std::string value;  // never logged
};

struct SecretHost {
  std::string host;  // canonical
  std::uint16_t port = 443;
  std::vector<SecretHeader> headers;  // never empty
  bool relay = false;                 // the MCP relay sets them too

  // "Authorization, X-Api-Key": the names, for logs.
  [[nodiscard]] std::string headerNames() const;
};

// Whether a request with this method asks the server to echo its headers back (TRACE, TRACK): a
// request that would carry secret headers must not be sent with it.
[[nodiscard]] bool echoesRequestHeaders(std::string_view method) noexcept;

class SecretsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SecretHeaders {
  std::vector<SecretHost> hosts;

  // Throws SecretsError naming the entry and what to fix (e.g. `secrets[1].headers["X-Key"]:
  // the value holds a line break`).
  [[nodiscard]] static SecretHeaders fromJson(const nlohmann::json& entries);
  // Reads the file the server wrote; refuses one that group or others may read or write.
  [[nodiscard]] static SecretHeaders load(const std::string& path);

  // The entry for a CONNECT target (canonical host), or nullptr. Lives as long as this.
  [[nodiscard]] const SecretHost* find(std::string_view host, std::uint16_t port) const noexcept;
  // "api.example.com:443 [Authorization, X-Api-Key]; ..." — names, never values.
  [[nodiscard]] std::string toString() const;
  // The hosts, for SessionCa::generateCa's name constraints.
  [[nodiscard]] std::vector<std::string> hostNames() const;
  // The entries whose host and port `rules` allow (what the egress proxy may intercept).
  [[nodiscard]] SecretHeaders reachableThrough(const policy::EgressPolicy& rules) const;
  // The entries marked `relay` (what the MCP relay sets).
  [[nodiscard]] SecretHeaders forRelay() const;
};

}  // namespace sidecar

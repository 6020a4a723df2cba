// What a sandbox asks of the egress proxy, from a request's head: a tunnel (`CONNECT host:port`,
// TLS passed through unopened) or a plain-HTTP request in absolute form, and whether this
// session's egress rules let it through (policy/egress.h, before DNS). Refuses, with the HTTP
// status to answer and a reason the model can act on: origin-form requests (not a proxy
// request), https:// in absolute form (TLS goes through CONNECT), a Host header that names
// another authority than the target (a front routing by Host must not be steered), a CONNECT
// with a body, and anything the rules do not allow. Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/egress.h"

namespace sidecar {

struct ProxyRequest {
  enum class Kind { kConnect, kAbsolute, kRefused };
  Kind kind = Kind::kRefused;
  policy::Url target;                        // set unless the head could not name one
  const policy::EgressRule* rule = nullptr;  // the rule that allowed it (lives with the policy)
  int status = 0;                            // for kRefused: 400 (malformed) or 403 (denied)
  std::string reason;                        // for kRefused, and the allow decision's otherwise
  [[nodiscard]] bool refused() const noexcept { return kind == Kind::kRefused; }
};

// `method` and `target` from the request line, `host_header` the Host field (empty when absent),
// `has_body` whether a Content-Length or Transfer-Encoding announced one.
[[nodiscard]] ProxyRequest classifyProxyRequest(
    const policy::EgressPolicy& rules, std::string_view method, std::string_view target,
    std::string_view host_header, bool has_body,
    const std::vector<policy::Endpoint>& server_endpoints);

}  // namespace sidecar

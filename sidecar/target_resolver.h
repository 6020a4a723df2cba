// Turns the request line's target into the upstream URL and the allowlist rule covering it.
// Absolute-form ("http://host:port/path") is parsed as is; origin-form ("/path") is combined with
// the Host header, and its scheme comes from the first rule that covers host + port + path with
// that scheme (the sandbox speaks plain HTTP to the socket, TLS happens upstream).
// Thread-safety: pure; the returned rule pointer lives as long as the policy.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "policy/policy.h"

namespace sidecar {

struct ResolvedTarget {
  std::optional<policy::Url> url;      // set when the target names an http(s) URL
  const policy::Rule* rule = nullptr;  // set when the decision allows
  policy::Decision decision;           // policy::decideUrl's verdict (or why none was possible)
  std::string display_url;             // for logs: the canonical URL, or what the client sent
};

[[nodiscard]] ResolvedTarget resolveTarget(const policy::Policy& policy, std::string_view target,
                                           std::string_view host_header);

}  // namespace sidecar

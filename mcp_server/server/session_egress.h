// What a call's `egress` argument grants a new session: nothing (absent, false), or the
// operator's egress.allow plus the profiles it picks, narrowed by its own `allow` entries. A
// model's argument never widens what the operator configured. Thread-safe (pure).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "policy/egress.h"
#include "policy/policy.h"

namespace server {

// The catalog an operator's egress section describes. Throws policy::PolicyError (the config
// loader has checked the entries already, so only a config built in code can fail).
[[nodiscard]] policy::EgressCatalog egressCatalog(const config::EgressConfig& config);

// nullptr when the call asks for no egress. Throws sandbox::SandboxError saying what the call
// may ask for instead: egress off on this server, an unknown profile, a host the operator did
// not list, or nothing left to allow.
[[nodiscard]] std::shared_ptr<const policy::EgressPolicy> sessionEgress(
    const nlohmann::json& requested, const config::EgressConfig& config);

// The secrets file the session's sidecar reads (sidecar/secret_headers.h): the operator's
// egress.secrets entries whose host and port the session reaches through its egress rules, or
// through an MCP server its allowlist has that the operator's mcp.allowlist lists too (a model's
// own list never brings a secret); any of the three may be null. Each header's value is read now
// from the server's environment or its file (prefix first). An empty array when none apply.
// Throws sandbox::SandboxError naming the variable or file that is missing, never a value.
[[nodiscard]] nlohmann::json resolveSecrets(const config::EgressConfig& config,
                                            const policy::EgressPolicy* egress_rules,
                                            const policy::Policy* session_mcp_policy,
                                            const policy::Policy* operator_mcp_policy);

// "pypi.org, files.pythonhosted.org:443", for messages and logs.
[[nodiscard]] std::string egressRulesText(const policy::EgressPolicy& rules);

}  // namespace server

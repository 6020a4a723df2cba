// Reads the policy file (the JSON array policy::loadPolicy accepts).
// Thread-safety: reentrant.
#pragma once

#include <memory>
#include <string>

#include "policy/egress.h"
#include "policy/policy.h"

namespace sidecar {

// Throws std::runtime_error naming the file and what is wrong with it.
[[nodiscard]] std::shared_ptr<const policy::Policy> loadPolicyFile(const std::string& path);
// The egress rules file (the JSON array policy::loadEgressRules accepts); throws likewise.
[[nodiscard]] std::shared_ptr<const policy::EgressPolicy> loadEgressRulesFile(
    const std::string& path);

}  // namespace sidecar

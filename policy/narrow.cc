// narrow: a per-call allowlist may only narrow the operator's, never widen it.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace {

// The requested list within the operator's: an empty request inherits the operator's list;
// otherwise every requested name must be one the operator allows (lifecycle methods always are).
std::vector<std::string> narrowList(const std::vector<std::string>& allowed,
                                    const std::vector<std::string>& requested,
                                    const std::string& what, const Rule& requested_rule,
                                    const Rule& operator_rule, bool is_methods) {
  if (allowed.empty()) return requested;
  if (requested.empty()) return allowed;
  for (const std::string& name : requested) {
    if (is_methods && isLifecycleMethod(name)) continue;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      throw PolicyError(requested_rule.id + ": " + what + " '" + name +
                        "' is not allowed by operator rule " + operator_rule.id);
    }
  }
  return requested;
}

}  // namespace

std::shared_ptr<const Policy> narrow(const Policy& operator_policy, const Policy& requested) {
  auto effective = std::make_shared<Policy>();
  for (const Rule& wanted : requested.rules) {
    const Rule* granted = findRule(operator_policy, wanted.base);
    if (granted == nullptr) {
      throw PolicyError(wanted.id + ": " + wanted.base.toString() +
                        " is not covered by the operator's allowlist; ask the operator to add it");
    }
    Rule rule{wanted.id, wanted.base, {}, {}};
    rule.methods = narrowList(granted->methods, wanted.methods, "method", wanted, *granted, true);
    rule.tools = narrowList(granted->tools, wanted.tools, "tool", wanted, *granted, false);
    effective->rules.push_back(std::move(rule));
  }
  return effective;
}

}  // namespace policy

#include "server/session_egress.h"

#include "sandbox/backend.h"

namespace server {
namespace {

// What one call may name (the tool schema says the same).
constexpr std::size_t kMaxProfiles = 16;
constexpr std::size_t kMaxAllowEntries = 64;

std::string profileNames(const config::EgressConfig& config) {
  std::string names;
  for (const auto& [name, entries] : config.profiles) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

// What the operator offers, for a refusal: the call can pick from it.
std::string offer(const config::EgressConfig& config) {
  std::string text = "This server's egress.allow: ";
  try {
    const auto allow = policy::loadEgressRules(config.allow, "egress.allow");
    text += allow.rules.empty() ? std::string("(empty)") : egressRulesText(allow);
  } catch (const policy::PolicyError&) {
    text += "(unreadable)";
  }
  return text + "; profiles: " + profileNames(config);
}

}  // namespace

std::string egressRulesText(const policy::EgressPolicy& rules) {
  std::string text;
  for (const auto& rule : rules.rules) {
    text += (text.empty() ? "" : ", ") + rule.host.toString();
    if (rule.ports != std::vector<std::uint16_t>{443}) {
      std::string ports;
      for (const auto port : rule.ports) ports += (ports.empty() ? "" : ",") + std::to_string(port);
      text += ":" + ports;
    }
  }
  return text;
}

policy::EgressCatalog egressCatalog(const config::EgressConfig& config) {
  policy::EgressCatalog catalog;
  catalog.allow = policy::loadEgressRules(config.allow, "egress.allow");
  for (const auto& [name, entries] : config.profiles) {
    catalog.profiles[name] = policy::loadEgressRules(entries, "egress.profiles." + name);
  }
  return catalog;
}

std::shared_ptr<const policy::EgressPolicy> sessionEgress(const nlohmann::json& requested,
                                                          const config::EgressConfig& config) {
  if (requested.is_boolean() && !requested.get<bool>()) return nullptr;
  if (!requested.is_boolean() && !requested.is_object()) {
    throw sandbox::SandboxError(
        "egress: must be true, false or {\"profiles\": [...], \"allow\": [...]}");
  }
  if (!config.enabled) {
    throw sandbox::SandboxError(
        "egress: this server keeps sandboxes off the network (its operator has not set "
        "egress.enabled). Omit egress; packages the image lacks cannot be installed here");
  }
  std::vector<std::string> profiles;
  policy::EgressPolicy narrowing;
  try {
    if (requested.is_object()) {
      for (const auto& [key, value] : requested.items()) {
        if (key != "profiles" && key != "allow") {
          throw policy::PolicyError("egress: unknown key '" + key +
                                    "' (it takes \"profiles\" and \"allow\")");
        }
      }
      if (const auto it = requested.find("profiles"); it != requested.end()) {
        profiles = it->get<std::vector<std::string>>();
        if (profiles.size() > kMaxProfiles) {
          throw policy::PolicyError("egress.profiles: at most " + std::to_string(kMaxProfiles));
        }
      }
      if (const auto it = requested.find("allow"); it != requested.end()) {
        if (it->is_array() && it->size() > kMaxAllowEntries) {
          throw policy::PolicyError("egress.allow: at most " + std::to_string(kMaxAllowEntries) +
                                    " entries");
        }
        narrowing = policy::loadEgressRules(*it, "egress.allow (the call's)");
        if (narrowing.rules.empty()) {
          throw policy::PolicyError("egress.allow: an empty list allows nothing; use false");
        }
      }
    }
    auto granted = policy::effectiveEgress(egressCatalog(config), profiles, narrowing);
    if (granted.rules.empty()) {
      throw policy::PolicyError("nothing to allow: pick one of the profiles");
    }
    return std::make_shared<const policy::EgressPolicy>(std::move(granted));
  } catch (const policy::PolicyError& e) {
    throw sandbox::SandboxError(std::string(e.what()) + ". " + offer(config));
  } catch (const nlohmann::json::exception&) {
    throw sandbox::SandboxError("egress.profiles: must be a list of profile names. " +
                                offer(config));
  }
}

}  // namespace server

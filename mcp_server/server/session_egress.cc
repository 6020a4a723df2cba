#include "server/session_egress.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

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

// A secret's value: its environment variable or file (one trailing newline dropped, as files
// written by `echo` or secret stores end with one), after its prefix.
std::string secretValue(const nlohmann::json& source, const std::string& where) {
  std::string value;
  if (const auto env = source.value("env", std::string()); !env.empty()) {
    const char* text = std::getenv(env.c_str());
    if (text == nullptr) {
      throw sandbox::SandboxError(where + ": the server's environment has no " + env +
                                  "; the operator sets it, or removes the entry");
    }
    value = text;
  } else {
    const auto file = source.value("file", std::string());
    std::ifstream in(file, std::ios::binary);
    std::ostringstream content;
    if (!in || !(content << in.rdbuf())) {
      throw sandbox::SandboxError(where + ": cannot read " + file +
                                  " on the server; the operator fixes or removes the entry");
    }
    value = content.str();
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
  }
  value = source.value("prefix", std::string()) + value;
  if (value.find_first_of("\r\n") != std::string::npos || value.find('\0') != std::string::npos) {
    throw sandbox::SandboxError(where + ": the value holds CR, LF or NUL, which no header may");
  }
  // Printable ASCII only: a byte past it would make the secrets file's JSON writer throw an error
  // quoting that byte, which would reach the model in the creation's error.
  const auto unprintable = [](unsigned char c) { return c != '\t' && (c < 0x20 || c > 0x7e); };
  if (std::any_of(value.begin(), value.end(), unprintable)) {
    throw sandbox::SandboxError(where +
                                ": the value holds a byte that is not printable ASCII; secret "
                                "header values are tokens (base64 or hex for binary ones)");
  }
  return value;
}

bool namesMcpServer(const policy::Policy* mcp_policy, const policy::Url& url) {
  if (mcp_policy == nullptr) return false;
  return std::any_of(mcp_policy->rules.begin(), mcp_policy->rules.end(), [&](const auto& rule) {
    return rule.base.host == url.host && rule.base.port == url.port;
  });
}

}  // namespace

nlohmann::json resolveSecrets(const config::EgressConfig& config,
                              const policy::EgressPolicy* egress_rules,
                              const policy::Policy* session_mcp_policy,
                              const policy::Policy* operator_mcp_policy) {
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < config.secrets.size(); ++i) {
    const auto& entry = config.secrets[i];
    const auto host = entry.value("host", std::string());
    const auto port = entry.value("port", 443);
    const auto url = policy::parseUrl("https://" + host + ":" + std::to_string(port) + "/");
    if (!url.url) continue;
    const bool by_egress =
        egress_rules != nullptr && policy::findEgressRule(*egress_rules, *url.url) != nullptr;
    const bool by_mcp = namesMcpServer(session_mcp_policy, *url.url) &&
                        namesMcpServer(operator_mcp_policy, *url.url);
    if (!by_egress && !by_mcp) continue;
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [name, source] : entry.at("headers").items()) {
      headers[name] =
          secretValue(source, "egress.secrets[" + std::to_string(i) + "].headers." + name);
    }
    // The relay sets them only where both MCP lists name the host: a model's own mcp_allowlist
    // naming a host that egress reaches brings it no secret through the relay.
    out.push_back({{"host", url.url->host},
                   {"port", port},
                   {"relay", by_mcp},
                   {"headers", std::move(headers)}});
  }
  return out;
}

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

// Config section egress: the operator's egress allow list and profiles (each parsed as egress
// rules at load time, so a typo stops the server at start, not a session later) and the proxy's
// per-session limits.
#include <string>

#include "config/sections.h"
#include "policy/egress.h"

namespace config {

using nlohmann::json;

std::map<std::string, json> EgressConfig::defaultEgressProfiles() {
  return {
      {"python-packages", json::array({"pypi.org", "files.pythonhosted.org"})},
      {"npm-packages", json::array({"registry.npmjs.org"})},
      {"git-hosting",
       json::array({"github.com", "codeload.github.com", "objects.githubusercontent.com",
                    "raw.githubusercontent.com", "gitlab.com", "bitbucket.org"})},
  };
}

namespace {

// Parses `entries` as egress rules; cloud metadata is refused even when the operator names it.
void checkRules(const json& entries, const std::string& where) {
  try {
    const auto rules = policy::loadEgressRules(entries, where);
    for (const auto& rule : rules.rules) {
      if (rule.host.subdomains) continue;
      const auto url = policy::parseUrl("https://" + rule.host.toString() + "/");
      if (!url.url) continue;
      const auto forbidden = policy::decideForbiddenUrl(*url.url, {});
      if (!forbidden.allowed()) throw policy::PolicyError(rule.id + ": " + forbidden.reason);
    }
  } catch (const policy::PolicyError& e) {
    ObjectReader::fail(where, e.what());
  }
}

void readProfiles(ObjectReader& parent, EgressConfig& out) {
  const json* node = parent.child("profiles");
  if (!node) return;
  if (!node->is_object()) ObjectReader::fail("egress.profiles", "must be an object of lists");
  for (const auto& [name, entries] : node->items()) {
    const std::string where = "egress.profiles." + name;
    if (name.empty() || name.size() > 64 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos) {
      ObjectReader::fail(where, "a profile name is lowercase letters, digits, - and _");
    }
    if (entries.is_null()) {
      out.profiles.erase(name);
      continue;
    }
    checkRules(entries, where);
    out.profiles[name] = entries;
  }
}

}  // namespace

void readEgress(ObjectReader& parent, EgressConfig& out) {
  const json* node = parent.child("egress");
  if (!node) return;
  ObjectReader r(*node, "egress");
  r.read("enabled", out.enabled);
  if (const json* allow = r.child("allow")) {
    checkRules(*allow, "egress.allow");
    out.allow = *allow;
  }
  readProfiles(r, out);
  r.read("proxy_port", out.proxy_port);
  r.read("max_connections", out.max_connections);
  r.read("max_mib", out.max_mib);
  r.read("idle_timeout_s", out.idle_timeout_s);
  r.read("max_connection_s", out.max_connection_s);
  r.rejectUnknown();
  if (out.proxy_port < 1024 || out.proxy_port > 65535) {
    ObjectReader::fail("egress.proxy_port",
                       "must be 1024..65535 (code in the sandbox runs without privileges)");
  }
  requireAtLeast(out.max_connections, 1, "egress.max_connections");
  requireAtLeast(out.max_mib, 1, "egress.max_mib");
  requireAtLeast(out.idle_timeout_s, 1, "egress.idle_timeout_s");
  requireAtLeast(out.max_connection_s, 1, "egress.max_connection_s");
}

}  // namespace config

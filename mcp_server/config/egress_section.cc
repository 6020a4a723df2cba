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

bool isToken(const std::string& name) {
  return !name.empty() && name.size() <= 128 &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
             "!#$%&'*+-.^_`|~") == std::string::npos;
}

// One header's source: {"env": NAME} or {"file": "/abs/path"}, and an optional "prefix".
void checkSecretSource(const json& source, const std::string& where) {
  if (!source.is_object()) ObjectReader::fail(where, "must be {\"env\": NAME} or {\"file\": PATH}");
  ObjectReader r(source, where);
  std::string env;
  std::string file;
  std::string prefix;
  r.read("env", env);
  r.read("file", file);
  r.read("prefix", prefix);
  r.rejectUnknown();
  if (env.empty() == file.empty()) ObjectReader::fail(where, "needs exactly one of env and file");
  if (!file.empty() && file.front() != '/') ObjectReader::fail(where + ".file", "must be absolute");
  if (prefix.find_first_of("\r\n") != std::string::npos || prefix.find('\0') != std::string::npos) {
    ObjectReader::fail(where + ".prefix", "must not hold CR, LF or NUL");
  }
}

void readSecrets(ObjectReader& parent, EgressConfig& out) {
  const json* node = parent.child("secrets");
  if (!node) return;
  if (!node->is_array()) ObjectReader::fail("egress.secrets", "must be a list");
  for (std::size_t i = 0; i < node->size(); ++i) {
    const std::string where = "egress.secrets[" + std::to_string(i) + "]";
    const json& entry = (*node)[i];
    if (!entry.is_object()) ObjectReader::fail(where, "must be {\"host\", \"port\", \"headers\"}");
    ObjectReader r(entry, where);
    std::string host;
    std::int64_t port = 443;
    r.read("host", host);
    r.read("port", port);
    const json* headers = r.child("headers");
    r.rejectUnknown();
    const auto url = policy::parseUrl("https://" + host + "/");
    if (host.empty() || !url.url || url.url->host != host) {
      ObjectReader::fail(where + ".host",
                         "must be a host name or address as written canonically "
                         "(lowercase, no port, no wildcard)");
    }
    if (port < 1 || port > 65535) ObjectReader::fail(where + ".port", "must be 1..65535");
    if (headers == nullptr || !headers->is_object() || headers->empty()) {
      ObjectReader::fail(where + ".headers", "must name at least one header");
    }
    for (const auto& [name, source] : headers->items()) {
      if (!isToken(name))
        ObjectReader::fail(where + ".headers", "'" + name + "' is not a header name");
      checkSecretSource(source, where + ".headers." + name);
    }
  }
  out.secrets = *node;
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
  readSecrets(r, out);
  r.read("upstream_ca_file", out.upstream_ca_file);
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
  if (!out.upstream_ca_file.empty() && out.upstream_ca_file.front() != '/') {
    ObjectReader::fail("egress.upstream_ca_file", "must be an absolute path");
  }
  requireAtLeast(out.max_connections, 1, "egress.max_connections");
  requireAtLeast(out.max_mib, 1, "egress.max_mib");
  requireAtLeast(out.idle_timeout_s, 1, "egress.idle_timeout_s");
  requireAtLeast(out.max_connection_s, 1, "egress.max_connection_s");
}

}  // namespace config

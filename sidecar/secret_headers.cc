#include "sidecar/secret_headers.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/text.h"
#include "policy/policy.h"
#include "sidecar/header_filter.h"

namespace sidecar {
namespace {

using json = nlohmann::json;

// RFC 9110 5.6.2 tchar.
bool isToken(std::string_view text) noexcept {
  static constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  if (text.empty()) return false;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool alnum = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
                       (byte >= 'A' && byte <= 'Z');
    if (!alnum && kSymbols.find(c) == std::string_view::npos) return false;
  }
  return true;
}

// Fields that frame or route the request: the interceptor writes them itself.
bool reservedName(std::string_view name) noexcept {
  return isHopByHopHeader(name) || common::iequals(name, "host") ||
         common::iequals(name, "content-length") || common::iequals(name, "expect");
}

// Why a value may not be sent, or nullptr. Never quotes it.
const char* badValue(std::string_view value) noexcept {
  if (value.find_first_of(std::string_view("\r\n", 2)) != std::string_view::npos) {
    return "the value holds a line break (CR or LF)";
  }
  if (value.find('\0') != std::string_view::npos) return "the value holds a NUL byte";
  return nullptr;
}

std::string checkedHost(const json& entry, const std::string& where) {
  const auto found = entry.find("host");
  if (found == entry.end() || !found->is_string()) {
    throw SecretsError(where + ".host: required, a host name or IP literal");
  }
  const auto& host = found->get_ref<const std::string&>();
  const bool v6 = host.find(':') != std::string::npos;
  const auto parsed = policy::parseUrl("https://" + (v6 ? "[" + host + "]" : host) + "/");
  if (host.empty() || !parsed.url || parsed.url->host != host) {
    throw SecretsError(where + ".host: \"" + host +
                       "\" is not canonical (lowercase, no trailing dot, IPv6 without brackets" +
                       (parsed.url ? ", write \"" + parsed.url->host + "\"" : std::string()) + ")");
  }
  return host;
}

std::uint16_t checkedPort(const json& entry, const std::string& where) {
  const auto found = entry.find("port");
  if (found == entry.end()) return 443;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 1 ||
      found->get<std::int64_t>() > 65535) {
    throw SecretsError(where + ".port: a number from 1 to 65535");
  }
  return static_cast<std::uint16_t>(found->get<std::int64_t>());
}

std::vector<SecretHeader> checkedHeaders(const json& entry, const std::string& where) {
  const auto found = entry.find("headers");
  if (found == entry.end() || !found->is_object() || found->empty()) {
    throw SecretsError(where + ".headers: required, an object of header names to values");
  }
  std::vector<SecretHeader> headers;
  for (const auto& [name, value] : found->items()) {
    const std::string field = where + ".headers[\"" + (isToken(name) ? name : "?") + "\"]";
    if (!isToken(name)) {
      throw SecretsError(where +
                         ".headers: a header name is not an HTTP token (letters, digits "
                         "and !#$%&'*+-.^_`|~ only)");
    }
    if (reservedName(name)) {
      throw SecretsError(field +
                         ": the proxy writes this header itself (hop-by-hop, Host, "
                         "Content-Length, Expect); it cannot be a secret");
    }
    for (const auto& earlier : headers) {
      if (common::iequals(earlier.name, name)) {
        throw SecretsError(field + ": named twice (header names ignore case)");
      }
    }
    if (!value.is_string()) throw SecretsError(field + ": the value must be a string");
    const auto& text = value.get_ref<const std::string&>();
    if (const char* why = badValue(text)) throw SecretsError(field + ": " + why);
    headers.push_back({name, text});
  }
  return headers;
}

}  // namespace

SecretHeaders SecretHeaders::fromJson(const json& entries) {
  if (!entries.is_array()) throw SecretsError("secrets: must be a JSON array of entries");
  SecretHeaders secrets;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "secrets[" + std::to_string(i) + "]";
    const json& entry = entries[i];
    if (!entry.is_object()) throw SecretsError(where + ": must be an object");
    for (const auto& [key, unused] : entry.items()) {
      if (key != "host" && key != "port" && key != "headers" && key != "relay") {
        throw SecretsError(where + ": unknown key \"" + (isToken(key) ? key : "?") +
                           "\" (host, port, headers, relay)");
      }
    }
    SecretHost host{checkedHost(entry, where), checkedPort(entry, where), {}};
    if (const auto relay = entry.find("relay"); relay != entry.end()) {
      if (!relay->is_boolean()) throw SecretsError(where + ".relay: must be true or false");
      host.relay = relay->get<bool>();
    }
    if (secrets.find(host.host, host.port) != nullptr) {
      throw SecretsError(where + ": " + host.host + ":" + std::to_string(host.port) +
                         " has an earlier entry; merge their headers");
    }
    host.headers = checkedHeaders(entry, where);
    secrets.hosts.push_back(std::move(host));
  }
  return secrets;
}

SecretHeaders SecretHeaders::load(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw SecretsError("cannot read the secrets file " + path + ": not a readable regular file");
  }
  if ((info.st_mode & 077) != 0) {
    throw SecretsError("the secrets file " + path +
                       " may be read or written by others than its owner: it must be mode 0600");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw SecretsError("cannot read the secrets file " + path);
  json entries;
  try {
    entries = json::parse(text.str());
  } catch (const json::parse_error& error) {
    // Its message quotes the bytes it read last, which may be a secret: the offset only.
    throw SecretsError("the secrets file " + path + " is not valid JSON (at byte " +
                       std::to_string(error.byte) + ")");
  }
  return fromJson(entries);
}

const SecretHost* SecretHeaders::find(std::string_view host, std::uint16_t port) const noexcept {
  for (const auto& entry : hosts) {
    if (entry.port == port && entry.host == host) return &entry;
  }
  return nullptr;
}

bool echoesRequestHeaders(std::string_view method) noexcept {
  return common::iequals(method, "TRACE") || common::iequals(method, "TRACK");
}

std::string SecretHost::headerNames() const {
  std::string names;
  for (const auto& header : headers) names += (names.empty() ? "" : ", ") + header.name;
  return names;
}

std::string SecretHeaders::toString() const {
  std::string out;
  for (const auto& entry : hosts) {
    if (!out.empty()) out += "; ";
    const bool v6 = entry.host.find(':') != std::string::npos;
    out += (v6 ? "[" + entry.host + "]" : entry.host) + ":" + std::to_string(entry.port) + " [" +
           entry.headerNames() + "]";
  }
  return out;
}

SecretHeaders SecretHeaders::reachableThrough(const policy::EgressPolicy& rules) const {
  SecretHeaders reachable;
  for (const auto& entry : hosts) {
    const bool v6 = entry.host.find(':') != std::string::npos;
    const auto url = policy::parseUrl("https://" + (v6 ? "[" + entry.host + "]" : entry.host) +
                                      ":" + std::to_string(entry.port) + "/");
    if (url.url && policy::findEgressRule(rules, *url.url) != nullptr) {
      reachable.hosts.push_back(entry);
    }
  }
  return reachable;
}

SecretHeaders SecretHeaders::forRelay() const {
  SecretHeaders relayed;
  for (const auto& entry : hosts) {
    if (entry.relay) relayed.hosts.push_back(entry);
  }
  return relayed;
}

std::vector<std::string> SecretHeaders::hostNames() const {
  std::vector<std::string> names;
  for (const auto& entry : hosts) {
    if (std::find(names.begin(), names.end(), entry.host) == names.end()) {
      names.push_back(entry.host);
    }
  }
  return names;
}

}  // namespace sidecar

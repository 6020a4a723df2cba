// Config sections for the transports clients connect through: http, stdio.
#include <algorithm>

#include "config/sections.h"

namespace config {

using nlohmann::json;

void readHttp(ObjectReader& parent, HttpConfig& out) {
  const json* node = parent.child("http");
  if (!node) return;
  ObjectReader r(*node, "http");
  r.read("path", out.path);
  r.read("max_body_bytes", out.max_body_bytes);
  r.read("allowed_origins", out.allowed_origins);
  r.read("session_idle_timeout_s", out.session_idle_timeout_s);
  r.read("max_sessions", out.max_sessions);
  r.read("max_requests_in_flight_per_session", out.max_requests_in_flight_per_session);
  r.read("max_connections", out.max_connections);
  r.read("max_connections_per_address", out.max_connections_per_address);
  r.read("header_timeout_ms", out.header_timeout_ms);
  r.read("idle_timeout_ms", out.idle_timeout_ms);
  r.read("max_body_bytes_in_flight", out.max_body_bytes_in_flight);
  r.rejectUnknown();
  if (out.path.empty() || out.path.front() != '/') {
    ObjectReader::fail("http.path", "must start with /");
  }
  requireAtLeast(out.max_body_bytes, 1024, "http.max_body_bytes");
  requireAtLeast(out.session_idle_timeout_s, 1, "http.session_idle_timeout_s");
  requireAtLeast(out.max_sessions, 1, "http.max_sessions");
  requireAtLeast(out.max_requests_in_flight_per_session, 1,
                 "http.max_requests_in_flight_per_session");
  requireAtLeast(out.max_connections, 0, "http.max_connections");  // 0: from the fd limit
  requireAtLeast(out.max_connections_per_address, 0, "http.max_connections_per_address");
  requireAtLeast(out.header_timeout_ms, 100, "http.header_timeout_ms");
  requireAtLeast(out.idle_timeout_ms, 100, "http.idle_timeout_ms");
  requireAtLeast(out.max_body_bytes_in_flight, out.max_body_bytes, "http.max_body_bytes_in_flight");
}

void readStdio(ObjectReader& parent, StdioConfig& out) {
  const json* node = parent.child("stdio");
  if (!node) return;
  ObjectReader r(*node, "stdio");
  r.read("max_message_bytes", out.max_message_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_message_bytes, 1024, "stdio.max_message_bytes");
}

}  // namespace config

namespace config {
namespace {

// "host:port" with a port of 0-65535 (0: any free port, for tests); IPv6 in brackets.
bool validListen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) return false;
  const std::string port = listen.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  if (std::stoi(port) > 65535) return false;
  const std::string host = listen.substr(0, colon);
  if (host.front() == '[') return host.back() == ']';
  return host.find_first_of(":/ ") == std::string::npos;
}

// Lower-case DNS labels separated by dots: what a browser sends back in Host unchanged.
bool validDomain(const std::string& domain) {
  if (domain.empty() || domain.size() > 200 || domain.front() == '.' || domain.back() == '.' ||
      domain.find("..") != std::string::npos) {
    return false;
  }
  return domain.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos;
}

}  // namespace

void readPreview(ObjectReader& parent, PreviewConfig& out) {
  const json* node = parent.child("preview");
  if (!node) return;
  ObjectReader r(*node, "preview");
  r.read("listen", out.listen);
  r.read("domain", out.domain);
  r.read("public_url", out.public_url);
  r.read("default_expires_s", out.default_expires_s);
  r.read("max_expires_s", out.max_expires_s);
  r.read("max_ports_per_session", out.max_ports_per_session);
  r.read("max_connections_per_session", out.max_connections_per_session);
  r.read("max_connections", out.max_connections);
  r.read("idle_timeout_s", out.idle_timeout_s);
  r.read("max_mib_per_session", out.max_mib_per_session);
  r.read("max_head_bytes", out.max_head_bytes);
  r.read("header_timeout_ms", out.header_timeout_ms);
  r.read("require_login", out.require_login);
  r.rejectUnknown();
  if (!out.listen.empty() && !validListen(out.listen)) {
    ObjectReader::fail("preview.listen", "must be host:port, e.g. 127.0.0.1:8766");
  }
  if (!validDomain(out.domain)) {
    ObjectReader::fail("preview.domain",
                       "must be a lower-case domain name, e.g. localhost or preview.example.com");
  }
  // The label must be the host's first part and the URL end with "/": the login link is built on
  // it, and the listener routes by the Host the browser sends for it.
  if (!out.public_url.empty() &&
      ((out.public_url.rfind("http://{label}.", 0) != 0 &&
        out.public_url.rfind("https://{label}.", 0) != 0) ||
       out.public_url.find("{label}", out.public_url.find("{label}") + 1) != std::string::npos ||
       out.public_url.back() != '/' ||
       std::count(out.public_url.begin(), out.public_url.end(), '/') != 3)) {
    ObjectReader::fail("preview.public_url",
                       "must be http(s)://{label}.<host>[:port]/ with the host under "
                       "preview.domain, e.g. https://{label}.preview.example.com/");
  }
  if (!out.public_url.empty()) {
    const auto host_start = out.public_url.find("{label}.") + 8;
    std::string host = out.public_url.substr(host_start, out.public_url.size() - 1 - host_start);
    host = host.substr(0, host.find(':'));
    if (host != out.domain) {
      ObjectReader::fail("preview.public_url",
                         "its host after {label}. must be preview.domain (" + out.domain + ")");
    }
  }
  requireAtLeast(out.default_expires_s, 1, "preview.default_expires_s");
  requireAtLeast(out.max_expires_s, out.default_expires_s, "preview.max_expires_s");
  if (out.max_expires_s > 10LL * 365 * 86400) {
    ObjectReader::fail("preview.max_expires_s", "must be at most 315360000 (ten years)");
  }
  requireAtLeast(out.max_ports_per_session, 1, "preview.max_ports_per_session");
  requireAtLeast(out.max_connections_per_session, 1, "preview.max_connections_per_session");
  requireAtLeast(out.max_connections, out.max_connections_per_session, "preview.max_connections");
  requireAtLeast(out.idle_timeout_s, 1, "preview.idle_timeout_s");
  requireAtLeast(out.max_mib_per_session, 0, "preview.max_mib_per_session");
  requireAtLeast(out.max_head_bytes, 1024, "preview.max_head_bytes");
  requireAtLeast(out.header_timeout_ms, 100, "preview.header_timeout_ms");
}

}  // namespace config

// Config sections for the transports clients connect through: http, stdio.
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

// Config section mcp: the operator's MCP allowlist (checked as a policy at load time), run-time
// and audit paths, and how each session's sidecar runs.
#include <string>

#include "config/sections.h"
#include "policy/policy.h"

namespace config {

using nlohmann::json;

namespace {

void readSidecar(ObjectReader& parent, SidecarConfig& out) {
  const json* node = parent.child("sidecar");
  if (!node) return;
  ObjectReader r(*node, "mcp.sidecar");
  r.read("mode", out.mode);
  r.read("image", out.image);
  r.read("network", out.network);
  r.read("user", out.user);
  r.read("binary_path", out.binary_path);
  r.read("memory_mib", out.memory_mib);
  r.read("pids_limit", out.pids_limit);
  r.read("start_timeout_ms", out.start_timeout_ms);
  r.read("upstream_connect_timeout_ms", out.upstream_connect_timeout_ms);
  r.read("upstream_idle_timeout_ms", out.upstream_idle_timeout_ms);
  r.read("max_concurrent_requests", out.max_concurrent_requests);
  r.read("max_body_bytes", out.max_body_bytes);
  r.read("audit_log_max_bytes", out.audit_log_max_bytes);
  r.rejectUnknown();
  requireAtLeast(out.audit_log_max_bytes, 4096, "mcp.sidecar.audit_log_max_bytes");
  if (out.mode != "container" && out.mode != "process") {
    ObjectReader::fail("mcp.sidecar.mode", "must be \"container\" or \"process\"");
  }
  if (out.image.empty()) ObjectReader::fail("mcp.sidecar.image", "must not be empty");
  if (out.network.empty() || out.network == "none") {
    ObjectReader::fail("mcp.sidecar.network",
                       "must name a network the relay can reach its upstreams on (default host)");
  }
  requireAtLeast(out.memory_mib, 16, "mcp.sidecar.memory_mib");
  requireAtLeast(out.pids_limit, 16, "mcp.sidecar.pids_limit");
  requireAtLeast(out.start_timeout_ms, 100, "mcp.sidecar.start_timeout_ms");
  requireAtLeast(out.upstream_connect_timeout_ms, 1, "mcp.sidecar.upstream_connect_timeout_ms");
  requireAtLeast(out.upstream_idle_timeout_ms, 1, "mcp.sidecar.upstream_idle_timeout_ms");
  requireAtLeast(out.max_concurrent_requests, 1, "mcp.sidecar.max_concurrent_requests");
  requireAtLeast(out.max_body_bytes, 1024, "mcp.sidecar.max_body_bytes");
}

}  // namespace

void readMcp(ObjectReader& parent, McpConfig& out) {
  const json* node = parent.child("mcp");
  if (!node) return;
  ObjectReader r(*node, "mcp");
  if (const json* allowlist = r.child("allowlist")) {
    try {
      // Cloud metadata stays unreachable even when the operator names it.
      const auto operator_policy = policy::loadPolicy(*allowlist);
      for (const auto& rule : operator_policy->rules) {
        const auto forbidden = policy::decideForbiddenUrl(rule.base, {});
        if (!forbidden.allowed()) throw policy::PolicyError(rule.id + ": " + forbidden.reason);
      }
    } catch (const policy::PolicyError& e) {
      ObjectReader::fail("mcp.allowlist", std::string("is not a valid allowlist: ") + e.what());
    }
    out.allowlist = *allowlist;
  }
  r.read("runtime_dir", out.runtime_dir);
  r.read("audit_log", out.audit_log);
  r.read("upstream_ca_file", out.upstream_ca_file);
  readSidecar(r, out.sidecar);
  r.read("audit_log_max_bytes", out.audit_log_max_bytes);
  r.rejectUnknown();
  requireAtLeast(out.audit_log_max_bytes, 4096, "mcp.audit_log_max_bytes");
  if (!out.runtime_dir.empty() && out.runtime_dir.front() != '/') {
    ObjectReader::fail("mcp.runtime_dir", "must be an absolute path");
  }
  if (!out.audit_log.empty() && out.audit_log.front() != '/') {
    ObjectReader::fail("mcp.audit_log", "must be an absolute path");
  }
  if (!out.upstream_ca_file.empty() && out.upstream_ca_file.front() != '/') {
    ObjectReader::fail("mcp.upstream_ca_file", "must be an absolute path");
  }
}

}  // namespace config

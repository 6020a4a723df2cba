// ServerConfig back to a JSON document with every field (defaults included): fromJson(toJson(c))
// gives c back, which is how a command-line setting is applied over a loaded file.
#include "config/config.h"

namespace config {

using nlohmann::json;

json toJson(const ServerConfig& c) {
  json dirs = json::array();
  for (const auto& d : c.volumes.allowed_host_dirs) {
    dirs.push_back({{"path", d.path}, {"allow_rw", d.allow_rw}});
  }
  json document =
      json{{"docker",
            {{"host", c.docker.host},
             {"tls",
              {{"ca_file", c.docker.tls.ca_file},
               {"cert_file", c.docker.tls.cert_file},
               {"key_file", c.docker.tls.key_file}}},
             {"api_version", c.docker.api_version},
             {"request_timeout_ms", c.docker.request_timeout_ms}}},
           {"sandbox",
            {{"image", c.sandbox.image},
             {"runtime", c.sandbox.runtime},
             {"platform", c.sandbox.platform},
             {"memory_mib", c.sandbox.memory_mib},
             {"cpus", c.sandbox.cpus},
             {"pids_limit", c.sandbox.pids_limit},
             {"tmp_size_mib", c.sandbox.tmp_size_mib},
             {"workdir_size_mib", c.sandbox.workdir_size_mib},
             {"workdir", c.sandbox.workdir},
             {"user", c.sandbox.user},
             {"read_only_root", c.sandbox.read_only_root},
             {"agent_path", c.sandbox.agent_path},
             {"agent_channel", c.sandbox.agent_channel},
             {"allow_custom_images", c.sandbox.allow_custom_images},
             {"allow_dockerfile", c.sandbox.allow_dockerfile},
             {"allow_runc_fallback", c.sandbox.allow_runc_fallback},
             {"allowed_images", c.sandbox.allowed_images},
             {"allowed_image_label", c.sandbox.allowed_image_label},
             {"build_runtime", c.sandbox.build_runtime},
             {"build_timeout_s", c.sandbox.build_timeout_s},
             {"build_max_steps", c.sandbox.build_max_steps},
             {"built_images_max", c.sandbox.built_images_max},
             {"built_image_max_idle_s", c.sandbox.built_image_max_idle_s},
             {"build_max_size_mib", c.sandbox.build_max_size_mib}}},
           {"execution",
            {{"default_timeout_s", c.execution.default_timeout_s},
             {"max_timeout_s", c.execution.max_timeout_s},
             {"max_output_bytes", c.execution.max_output_bytes},
             {"max_file_bytes", c.execution.max_file_bytes},
             {"max_concurrent", c.execution.max_concurrent},
             {"max_saved_output_bytes", c.execution.max_saved_output_bytes}}},
           {"resources", {{"max_read_bytes", c.resources.max_read_bytes}}},
           {"images",
            {{"max_per_call", c.images.max_per_call},
             {"max_px", c.images.max_px},
             {"max_bytes", c.images.max_bytes}}},
           {"sessions",
            {{"max_sessions", c.sessions.max_sessions},
             {"idle_timeout_s", c.sessions.idle_timeout_s},
             {"pause_after_idle_s", c.sessions.pause_after_idle_s},
             {"freeze_after_idle_s", c.sessions.freeze_after_idle_s},
             {"max_frozen_mib", c.sessions.max_frozen_mib},
             {"max_paused_sessions", c.sessions.max_paused_sessions},
             {"max_paused_gib", c.sessions.max_paused_gib},
             {"snapshot_dir", c.sessions.snapshot_dir},
             {"max_snapshots_per_client", c.sessions.max_snapshots_per_client},
             {"max_snapshot_mib_per_client", c.sessions.max_snapshot_mib_per_client},
             {"snapshot_ttl_s", c.sessions.snapshot_ttl_s},
             {"max_forks_per_call", c.sessions.max_forks_per_call},
             {"persist", c.sessions.persist}}},
           {"pool", {{"size", c.pool.size}, {"preload_python", c.pool.preload_python}}},
           {"volumes", {{"allowed_host_dirs", dirs}}},
           {"http",
            {{"path", c.http.path},
             {"max_body_bytes", c.http.max_body_bytes},
             {"allowed_origins", c.http.allowed_origins},
             {"session_idle_timeout_s", c.http.session_idle_timeout_s},
             {"max_connections", c.http.max_connections},
             {"max_connections_per_address", c.http.max_connections_per_address},
             {"max_sessions", c.http.max_sessions},
             {"max_requests_in_flight_per_session", c.http.max_requests_in_flight_per_session},
             {"max_body_bytes_in_flight", c.http.max_body_bytes_in_flight},
             {"header_timeout_ms", c.http.header_timeout_ms},
             {"idle_timeout_ms", c.http.idle_timeout_ms}}},
           {"stdio", {{"max_message_bytes", c.stdio.max_message_bytes}}},
           {"preview",
            {{"listen", c.preview.listen},
             {"domain", c.preview.domain},
             {"public_url", c.preview.public_url},
             {"default_expires_s", c.preview.default_expires_s},
             {"max_expires_s", c.preview.max_expires_s},
             {"max_ports_per_session", c.preview.max_ports_per_session},
             {"max_connections_per_session", c.preview.max_connections_per_session},
             {"max_connections", c.preview.max_connections},
             {"idle_timeout_s", c.preview.idle_timeout_s},
             {"max_mib_per_session", c.preview.max_mib_per_session},
             {"max_head_bytes", c.preview.max_head_bytes},
             {"header_timeout_ms", c.preview.header_timeout_ms},
             {"require_login", c.preview.require_login}}},
           {"mcp",
            {{"allowlist", c.mcp.allowlist},
             {"runtime_dir", c.mcp.runtime_dir},
             {"audit_log", c.mcp.audit_log},
             {"sidecar",
              {{"mode", c.mcp.sidecar.mode},
               {"image", c.mcp.sidecar.image},
               {"network", c.mcp.sidecar.network},
               {"user", c.mcp.sidecar.user},
               {"binary_path", c.mcp.sidecar.binary_path},
               {"memory_mib", c.mcp.sidecar.memory_mib},
               {"pids_limit", c.mcp.sidecar.pids_limit},
               {"start_timeout_ms", c.mcp.sidecar.start_timeout_ms},
               {"upstream_connect_timeout_ms", c.mcp.sidecar.upstream_connect_timeout_ms},
               {"upstream_idle_timeout_ms", c.mcp.sidecar.upstream_idle_timeout_ms},
               {"max_concurrent_requests", c.mcp.sidecar.max_concurrent_requests},
               {"max_body_bytes", c.mcp.sidecar.max_body_bytes}}}}},
           {"log_level", c.log_level}};
  // Fair-share quotas and audit caps (issue 9).
  document["execution"]["max_concurrent_per_client"] = c.execution.max_concurrent_per_client;
  document["sessions"]["max_sessions_per_client"] = c.sessions.max_sessions_per_client;
  document["mcp"]["audit_log_max_bytes"] = c.mcp.audit_log_max_bytes;
  document["mcp"]["upstream_ca_file"] = c.mcp.upstream_ca_file;
  document["tasks"] = {{"max_per_client", c.tasks.max_per_client},
                       {"default_ttl_ms", c.tasks.default_ttl_ms},
                       {"max_ttl_ms", c.tasks.max_ttl_ms},
                       {"poll_interval_ms", c.tasks.poll_interval_ms},
                       {"inline_wait_ms", c.tasks.inline_wait_ms},
                       {"max_result_bytes_per_client", c.tasks.max_result_bytes_per_client},
                       {"max_result_bytes", c.tasks.max_result_bytes},
                       {"max_queued_bytes_per_client", c.tasks.max_queued_bytes_per_client},
                       {"max_queued_bytes", c.tasks.max_queued_bytes}};
  document["mcp"]["sidecar"]["audit_log_max_bytes"] = c.mcp.sidecar.audit_log_max_bytes;
  // A default profile the operator removed reads back as removed: null.
  nlohmann::json profiles = c.egress.profiles;
  for (const auto& [name, entries] : EgressConfig::defaultEgressProfiles()) {
    if (!profiles.contains(name)) profiles[name] = nullptr;
  }
  document["egress"] = {{"enabled", c.egress.enabled},
                        {"allow", c.egress.allow},
                        {"profiles", profiles},
                        {"proxy_port", c.egress.proxy_port},
                        {"max_connections", c.egress.max_connections},
                        {"max_mib", c.egress.max_mib},
                        {"idle_timeout_s", c.egress.idle_timeout_s},
                        {"max_connection_s", c.egress.max_connection_s},
                        {"secrets", c.egress.secrets},
                        {"upstream_ca_file", c.egress.upstream_ca_file}};
  document["shutdown"] = {{"grace_s", c.shutdown.grace_s}};
  document["instance_id"] = c.instance_id;
  return document;
}

}  // namespace config

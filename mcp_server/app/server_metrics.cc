#include "app/server_metrics.h"

namespace app {

void registerServerMetrics(metrics::Registry& registry, server::SessionRegistry& sessions,
                           const FleetEndpoints& fleet, const sandbox::docker::EngineClient& engine,
                           const std::string& instance_id) {
  registry
      .gauge("sandbox_mcp_info", "This server: its instance id (value 1).",
             {{"instance_id", instance_id}})
      .set(1);
  registry.gaugeCallback("sandbox_mcp_sessions", "Sandbox sessions (each holds a sandbox).",
                         [&sessions] { return static_cast<double>(sessions.size()); });
  constexpr const char* kByState = "sandbox_mcp_sessions_by_state";
  constexpr const char* kByStateHelp =
      "Sandbox sessions by state: running, frozen (the host's cgroup freezer: no CPU, memory "
      "kept), paused (to disk).";
  registry.gaugeCallback(
      kByState, kByStateHelp,
      [&sessions] { return static_cast<double>(sessions.stateCounts().running); },
      {{"state", "running"}});
  registry.gaugeCallback(kByState, kByStateHelp,
                         [&sessions] { return static_cast<double>(sessions.stateCounts().frozen); },
                         {{"state", "frozen"}});
  registry.gaugeCallback(kByState, kByStateHelp,
                         [&sessions] { return static_cast<double>(sessions.stateCounts().paused); },
                         {{"state", "paused"}});
  registry.counterCallback(
      "sandbox_mcp_session_freezes_total",
      "Idle sessions frozen (sessions.freeze_after_idle_s) since the server started.",
      [&sessions] { return static_cast<double>(sessions.stateCounts().freezes); });
  registry.gaugeCallback("sandbox_mcp_executions_running", "Executions running now.", [&sessions] {
    return static_cast<double>(sessions.executionSlots().inUse());
  });
  registry.gaugeCallback("sandbox_mcp_draining", "1 while the server drains (SIGTERM), else 0.",
                         [&fleet] { return fleet.draining() ? 1.0 : 0.0; });
  constexpr const char* kEngineFailures = "sandbox_mcp_engine_errors_total";
  constexpr const char* kEngineFailuresHelp =
      "Docker Engine API calls that failed for the engine's sake (kind: transport = unreachable, "
      "timed out or cut off; server = a 5xx answer).";
  registry.counterCallback(kEngineFailures, kEngineFailuresHelp,
                           [&engine] { return static_cast<double>(engine.failures().transport); },
                           {{"kind", "transport"}});
  registry.counterCallback(kEngineFailures, kEngineFailuresHelp,
                           [&engine] { return static_cast<double>(engine.failures().server); },
                           {{"kind", "server"}});
  auto& factory = sessions.factory();
  registry.gaugeCallback("sandbox_mcp_pool_target", "Ready sandboxes the warm pool keeps.",
                         [&factory] { return static_cast<double>(factory.poolStats().size); });
  registry.gaugeCallback("sandbox_mcp_pool_ready", "Ready sandboxes in the warm pool now.",
                         [&factory] { return static_cast<double>(factory.poolStats().ready); });
  registry.counterCallback(
      "sandbox_mcp_pool_misses_total",
      "New sessions the warm pool could not serve (started cold, or a profile it does not keep).",
      [&factory] { return static_cast<double>(factory.poolStats().misses); });
  registry.counterCallback(
      "sandbox_mcp_pool_failures_total", "Warm pool sandboxes that failed to start.",
      [&factory] { return static_cast<double>(factory.poolStats().failures); });
}

void registerTaskMetrics(metrics::Registry& registry, mcp::TaskMemory& tasks) {
  registry.gaugeCallback("sandbox_mcp_task_result_bytes",
                         "Serialized task results the server keeps for its clients.",
                         [&tasks] { return static_cast<double>(tasks.results.used()); });
  registry.gaugeCallback(
      "sandbox_mcp_task_queued_bytes",
      "Serialized task notifications waiting for a tasks/result stream (all clients).",
      [&tasks] { return static_cast<double>(tasks.queued.used()); });
  registry.counterCallback(
      "sandbox_mcp_task_notifications_dropped_total",
      "Task notifications dropped, oldest first, to keep a client's (or the server's) queue "
      "within tasks.max_queued_bytes_per_client (tasks.max_queued_bytes).",
      [&tasks] { return static_cast<double>(tasks.dropped_notifications.load()); });
}

void registerPreviewMetrics(metrics::Registry& registry, const preview::PreviewStats& stats) {
  const auto counter = [&registry](const char* name, const char* help,
                                   const std::atomic<std::uint64_t>& value) {
    registry.counterCallback(name, help, [&value] { return static_cast<double>(value.load()); });
  };
  counter("sandbox_mcp_preview_connections_total", "Connections the preview listener accepted.",
          stats.connections_total);
  counter("sandbox_mcp_preview_refused_total",
          "Preview connections refused from their first request (unknown or expired link, bad "
          "framing, a limit) without touching a sandbox.",
          stats.refused_total);
  counter("sandbox_mcp_preview_failed_total",
          "Preview connections whose port could not be opened in the sandbox (nothing listens, "
          "the session could not be resumed).",
          stats.failed_total);
  counter("sandbox_mcp_preview_bytes_to_sandbox_total",
          "Bytes browsers sent to sandboxes through previews.", stats.bytes_to_sandbox);
  counter("sandbox_mcp_preview_bytes_from_sandbox_total",
          "Bytes sandboxes sent to browsers through previews.", stats.bytes_from_sandbox);
  registry.gaugeCallback("sandbox_mcp_preview_connections_open", "Preview connections open now.",
                         [&stats] { return static_cast<double>(stats.open.load()); });
}

}  // namespace app

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

}  // namespace app

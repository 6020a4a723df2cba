// The server-wide series of GET /metrics read at scrape time: sessions, executions running, the
// warm pool, draining, and which instance this is. (Counters updated as things happen live in
// server::SessionMetrics and tools::ToolMetrics.)
#pragma once

#include <string>

#include "app/fleet_endpoints.h"
#include "mcp/task_memory.h"
#include "metrics/registry.h"
#include "preview/preview_connection.h"
#include "sandbox/docker/engine_client.h"
#include "server/session_registry.h"

namespace app {

// The callbacks refer to `sessions`, `fleet` and `engine`: scrape only while they live.
void registerServerMetrics(metrics::Registry& registry, server::SessionRegistry& sessions,
                           const FleetEndpoints& fleet, const sandbox::docker::EngineClient& engine,
                           const std::string& instance_id);

// What the tasks of all clients keep in memory; `tasks` must outlive every scrape.
void registerTaskMetrics(metrics::Registry& registry, mcp::TaskMemory& tasks);
// The preview listener's counters (sandbox_mcp_preview_*); `stats` outlives the registry's use.
void registerPreviewMetrics(metrics::Registry& registry, const preview::PreviewStats& stats);

}  // namespace app

// The server-wide series of GET /metrics read at scrape time: sessions, executions running, the
// warm pool, draining, and which instance this is. (Counters updated as things happen live in
// server::SessionMetrics and tools::ToolMetrics.)
#pragma once

#include <string>

#include "app/fleet_endpoints.h"
#include "metrics/registry.h"
#include "server/session_registry.h"

namespace app {

// The callbacks refer to `sessions` and `fleet`: scrape only while both live.
void registerServerMetrics(metrics::Registry& registry, server::SessionRegistry& sessions,
                           const FleetEndpoints& fleet, const std::string& instance_id);

}  // namespace app

// Serving MCP over the chosen transport until a signal or the end of input, with the graceful
// drain on the first signal (drain.h) and, over HTTP, the fleet endpoints beside /mcp.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "app/cli_options.h"
#include "app/drain.h"
#include "app/fleet_endpoints.h"
#include "app/signal_watcher.h"
#include "app/warm_up.h"
#include "config/config.h"
#include "config/principals.h"
#include "mcp/mcp_server.h"
#include "metrics/registry.h"
#include "server/server_endpoints.h"
#include "transport/http_transport.h"

namespace app {

// What serve() built for the transports; all outlive them.
struct Serving {
  const config::ServerConfig& config;
  std::shared_ptr<mcp::McpServer> protocol;
  SignalWatcher& signals;
  Drain& drain;
  FleetEndpoints& fleet;
  metrics::Registry& registry;
  std::shared_ptr<server::ServerEndpoints> server_endpoints;
  std::size_t max_workers;  // requestWorkers(config)
  // The HTTP transport while it exists (the MCP-sessions gauge reads it), else null.
  std::atomic<const transport::HttpTransport*>& http_transport;
  const std::vector<config::Principal>& principals;  // the tokens file's; empty: none
  // The start-up work a stdio server does at its client's first request (app/warm_up.h); null
  // over HTTP, which does it before serving.
  StartUp* start_up;
};

// Both return once the transport stopped (signal, drain, end of input).
// Worker threads for requests: requests that wait are answered later and hold none, so what holds
// one is work the server's limits bound: a running execution, a sandbox being created, one call
// per session (a transfer, a listing), plus headroom for requests that finish at once. Sized so
// that one client at its limits leaves threads for everyone else.
[[nodiscard]] inline std::size_t requestWorkers(const config::ServerConfig& config) {
  return static_cast<std::size_t>(config.execution.max_concurrent) +
         2 * static_cast<std::size_t>(config.sessions.max_sessions) + 16;
}

void serveStdio(Serving& serving);
void serveHttp(const CliOptions& options, Serving& serving);

}  // namespace app

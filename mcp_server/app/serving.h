// Serving MCP over the chosen transport until a signal or the end of input, with the graceful
// drain on the first signal (drain.h) and, over HTTP, the fleet endpoints beside /mcp.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "app/cli_options.h"
#include "app/drain.h"
#include "app/fleet_endpoints.h"
#include "app/signal_watcher.h"
#include "config/config.h"
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
  std::size_t max_workers;  // every running execution holds a worker; the rest answer at once
  // The HTTP transport while it exists (the MCP-sessions gauge reads it), else null.
  std::atomic<const transport::HttpTransport*>& http_transport;
};

// Both return once the transport stopped (signal, drain, end of input).
void serveStdio(Serving& serving);
void serveHttp(const CliOptions& options, Serving& serving);

}  // namespace app

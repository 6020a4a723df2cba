#include "app/serving.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "app/warm_up.h"
#include "common/open_file_limit.h"
#include "transport/connection_limiter.h"
#include "transport/http_transport.h"
#include "transport/stdio_transport.h"

namespace app {
namespace {

std::string readToken(const CliOptions& options) {
  std::string token;
  if (!options.token_file.empty()) {
    std::ifstream in(options.token_file);
    if (!in) throw config::ConfigError("cannot read --token-file " + options.token_file);
    std::getline(in, token);
  } else if (const char* env = std::getenv("SANDBOX_MCP_TOKEN")) {
    token = env;
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

// http.max_connections and max_connections_per_address; 0 takes the bound derived from the
// open-file limit. Logged, with a warning when descriptors would run out first.
void setConnectionBounds(const config::HttpConfig& http, transport::HttpTransportOptions& out) {
  const std::uint64_t open_files = common::openFileLimit();
  const auto derived = transport::defaultConnectionBounds(open_files);
  out.max_connections =
      http.max_connections > 0 ? static_cast<std::size_t>(http.max_connections) : derived.total;
  out.max_connections_per_address = http.max_connections_per_address > 0
                                        ? static_cast<std::size_t>(http.max_connections_per_address)
                                        : std::max<std::size_t>(1, out.max_connections / 2);
  spdlog::info(
      "http: at most {} connections, {} per address{}; at a bound the longest-idle one makes room",
      out.max_connections, out.max_connections_per_address,
      http.max_connections > 0 ? "" : " (from the open-file limit)");
  if (open_files != 0 && out.max_connections > open_files / 2) {
    spdlog::warn(
        "http.max_connections {} is above half the open-file limit ({}): descriptors can run out "
        "first, and then new connections wait in the kernel's queue instead of idle ones making "
        "room; raise LimitNOFILE= (ulimit -n) or lower http.max_connections",
        out.max_connections, open_files);
  }
}

transport::HttpTransportOptions httpOptions(const CliOptions& options,
                                            const config::ServerConfig& cfg,
                                            std::size_t max_workers) {
  transport::HttpTransportOptions http;
  http.address = options.http_address;
  http.port = options.http_port;
  http.path = cfg.http.path;
  http.token = readToken(options);
  if (!cfg.http.allowed_origins.empty()) http.allowed_origins = cfg.http.allowed_origins;
  if (cfg.preview.enabled()) http.preview_domain = cfg.preview.domain;
  http.max_body_bytes = static_cast<std::size_t>(cfg.http.max_body_bytes);
  http.max_worker_threads = max_workers;
  http.session_idle_timeout = std::chrono::seconds(cfg.http.session_idle_timeout_s);
  http.max_sessions = static_cast<std::size_t>(cfg.http.max_sessions);
  http.max_requests_in_flight_per_session =
      static_cast<std::size_t>(cfg.http.max_requests_in_flight_per_session);
  http.header_timeout = std::chrono::milliseconds(cfg.http.header_timeout_ms);
  http.idle_timeout = std::chrono::milliseconds(cfg.http.idle_timeout_ms);
  http.max_body_bytes_in_flight = static_cast<std::size_t>(cfg.http.max_body_bytes_in_flight);
  return http;
}

}  // namespace

void serveStdio(Serving& serving) {
  transport::StdioTransportOptions options;
  options.max_message_bytes = static_cast<std::size_t>(serving.config.stdio.max_message_bytes);
  options.max_worker_threads = serving.max_workers;
  // server/discover is answered at once; other messages wait for the start-up work, which they
  // begin (or kStdioStartDelay does). If it fails, they get its reason and the server stops.
  auto endpoints = std::make_shared<GatedEndpoints>(serving.protocol, *serving.start_up);
  transport::StdioTransport stdio(STDIN_FILENO, STDOUT_FILENO, endpoints, options);
  serving.start_up->onFailure([&stdio] { stdio.stop(); });
  // One client, no new sessions to refuse: the drain only lets running executions finish.
  serving.signals.onSignals([&] { serving.drain.run([] {}, [&] { stdio.stop(); }); },
                            [&] { serving.drain.hurry(); });
  spdlog::info("serving MCP over stdio");
  stdio.run();
  serving.start_up->stop();  // work not begun never begins; work under way ends first
  // The input ended (or a drain stopped the transport): a drain still under way must end before
  // the transport and what the drain uses go.
  serving.drain.hurry();
  serving.signals.finish();
}

void serveHttp(const CliOptions& options, Serving& serving) {
  auto http = httpOptions(options, serving.config, serving.max_workers);
  for (const auto& principal : serving.principals) {
    http.principal_tokens.push_back({principal.name, principal.token});
  }
  http.param_headers = transport::ParamHeaders::fromToolsList(serving.protocol->toolsList());
  setConnectionBounds(serving.config.http, http);
  http.session_route_tag = serving.fleet.instanceId();
  http.get_endpoints = serving.fleet.handlers();
  transport::HttpTransport server(serving.protocol, http);
  server.start();
  serving.server_endpoints->set(server::listenerEndpoints(http.address, server.port()));
  serving.http_transport.store(&server);  // read by the sandbox_mcp_mcp_sessions gauge
  serving.signals.onSignals(
      [&] {
        serving.drain.run(
            [&] {
              serving.fleet.beginDrain();
              server.beginDrain();
            },
            [&] { server.stop(); });
      },
      [&] { serving.drain.hurry(); });
  const bool loopback =
      http.address == "::1" || http.address == "localhost" || http.address.rfind("127.", 0) == 0;
  if (!loopback) {
    spdlog::warn("WEAKENED: HTTP listens on {} beyond loopback; every request needs a bearer token",
                 http.address);
  }
  spdlog::info(
      "serving MCP over Streamable HTTP at http://{}:{}{}{} (and /healthz, /readyz, /metrics)",
      http.address.find(':') != std::string::npos ? "[" + http.address + "]" : http.address,
      server.port(), http.path,
      http.token.empty() && http.principal_tokens.empty() ? "" : " (bearer token required)");
  server.wait();
  serving.drain.hurry();
  serving.signals.finish();  // joins the drain thread while `server` still exists
  serving.http_transport.store(nullptr);
}

}  // namespace app

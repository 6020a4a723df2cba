// conformance_server: the real MCP layer (McpServer, McpEndpoint, the dispatcher) and the real
// Streamable HTTP transport, serving the official conformance suite's fixtures (fixtures.h) and
// no sandbox: the engine behind the session registry refuses every creation. Test-only; never
// installed. Usage: conformance_server --http 127.0.0.1:PORT (0: any free port). Logs
// "Streamable HTTP at http://..." on stderr once it listens; SIGTERM or SIGINT stops it.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "fixtures.h"
#include "mcp/mcp_server.h"
#include "sandbox/backend.h"
#include "server/session_factory.h"
#include "server/session_registry.h"
#include "transport/http_transport.h"

namespace {

// An engine that has nothing: the fixtures never ask for a sandbox.
class NoBackend final : public sandbox::Backend {
 public:
  std::unique_ptr<sandbox::Sandbox> create(const sandbox::SandboxSpec&) override { refuse(); }
  bool imageExists(const std::string&) override { return false; }
  std::optional<sandbox::ImageFacts> inspectImage(const std::string&) override {
    return std::nullopt;
  }
  std::string buildImage(const sandbox::BuildRequest&, const CancelToken&) override { refuse(); }
  std::vector<std::string> runtimes() override { return {}; }
  int removeOrphans() override { return 0; }
  std::vector<sandbox::HealthCheck> healthChecks() override { return {}; }

 private:
  [[noreturn]] static void refuse() {
    throw sandbox::SandboxError("the conformance server has no sandboxes");
  }
};

// "HOST:PORT" from --http; false when the arguments are not that.
bool parseAddress(int argc, char** argv, std::string& host, std::uint16_t& port) {
  if (argc != 3 || std::string(argv[1]) != "--http") return false;
  const std::string address = argv[2];
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  host = address.substr(0, colon);
  try {
    const int value = std::stoi(address.substr(colon + 1));
    if (value < 0 || value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
  } catch (const std::exception&) {
    return false;
  }
  return !host.empty();
}

// Blocks SIGINT and SIGTERM here (inherited by every thread started later) and stops the
// transport on the first one.
std::thread stopOnSignal(transport::HttpTransport& server) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return std::thread([set, &server] {
    int signal = 0;
    sigwait(&set, &signal);
    server.stop();
  });
}

}  // namespace

int main(int argc, char** argv) {
  transport::HttpTransportOptions options;
  if (!parseAddress(argc, argv, options.address, options.port)) {
    std::fprintf(stderr, "usage: conformance_server --http HOST:PORT\n");
    return 2;
  }
  config::ServerConfig config;
  config.pool.size = 0;
  // Calls of the task fixtures that take a second or more become tasks; instant ones answer inline.
  config.tasks.inline_wait_ms = 250;
  NoBackend backend;
  server::SessionRegistry sessions(config,
                                   std::make_unique<server::SessionFactory>(config, backend));

  mcp::Subscriptions subscriptions(mcp::Announceable{true, true, false, true});
  tools::ToolRegistry tools;
  conformance::registerContentTools(tools);
  conformance::registerStatelessTools(tools, subscriptions);
  conformance::registerInputRequiredTools(tools);
  conformance::registerClientRequestTools(tools);
  conformance::registerTaskTools(tools);
  mcp::PromptCatalog prompts;
  conformance::registerPrompts(prompts);
  mcp::ResourceCatalog resources;
  conformance::registerResources(resources);
  mcp::Completions completions;
  conformance::registerCompletions(completions);

  mcp::ServerFeatures features;
  features.identity = {"sandbox-mcp-conformance", "Conformance fixtures", "0.1.0", ""};
  features.prompts = &prompts;
  features.resources = &resources;
  features.completions = &completions;
  features.subscriptions = &subscriptions;
  features.session_resources = false;
  auto protocol = std::make_shared<mcp::McpServer>(config, sessions, tools, nullptr,
                                                   std::vector<config::Principal>{}, features);

  // x-mcp-header parameters (test_header_param) are checked against their Mcp-Param-* headers.
  options.param_headers = transport::ParamHeaders::fromToolsList(protocol->toolsList());
  transport::HttpTransport server(protocol, options);
  std::thread watcher = stopOnSignal(server);
  server.start();
  std::fprintf(stderr, "conformance fixtures over Streamable HTTP at http://%s:%u%s\n",
               options.address.c_str(), static_cast<unsigned>(server.port()), options.path.c_str());
  server.wait();
  watcher.join();
  sessions.shutdown();
  return 0;
}

// In-process sandbox-mcp (real tools, real SessionRegistry, real DockerBackend over dockerd with
// runsc) for the build/image/runtime attacks, plus engine look-ups that prove nothing leaked.
// Each test edits `cfg` before its first call (the SessionRegistry reads it on use).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "config/config.h"
#include "mcp/mcp_server.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/image_builder.h"
#include "server/session_registry.h"
#include "tools/builtin_tools.h"

namespace build_attacks {

using nlohmann::json;
using sandbox::docker::EngineClient;
using sandbox::docker::Method;
using sandbox::docker::urlEncode;

inline std::set<std::string> listIds(EngineClient& engine, const std::string& what,
                                     const std::string& label) {
  const json filters = {{"label", {label}}};
  std::set<std::string> ids;
  const auto path = what == "containers"
                        ? "/containers/json?all=1&filters=" + urlEncode(filters.dump())
                        : "/" + what + "/json?filters=" + urlEncode(filters.dump());
  for (const auto& item : engine.request(Method::kGet, path).json()) {
    ids.insert(item.at("Id").get<std::string>());
  }
  return ids;
}

// Images our builder made (tagged or not).
inline std::set<std::string> builtImages(EngineClient& engine) {
  return listIds(engine, "images", std::string(sandbox::kLabelBuilt) + "=1");
}

// Build containers of any server (the tests run one at a time).
inline std::set<std::string> buildContainers(EngineClient& engine) {
  const json filters = {{"name", {std::string(sandbox::docker::kBuildContainerPrefix)}}};
  std::set<std::string> ids;
  for (const auto& item :
       engine.request(Method::kGet, "/containers/json?all=1&filters=" + urlEncode(filters.dump()))
           .json()) {
    ids.insert(item.at("Id").get<std::string>());
  }
  return ids;
}

// A TCP listener on 127.0.0.1 that counts connections: proves an attack never reached the host.
class LoopbackCanary {
 public:
  LoopbackCanary() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0 || stopping_) break;
        ++connections_;
        ::close(client);
      }
    });
  }
  ~LoopbackCanary() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  LoopbackCanary(const LoopbackCanary&) = delete;
  LoopbackCanary& operator=(const LoopbackCanary&) = delete;
  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] int connections() const noexcept { return connections_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

class ServerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sandbox::docker::DockerBackendOptions options;
    options.agent_path = SANDBOX_AGENT_BIN;
    backend = new sandbox::docker::DockerBackend(options);
  }
  static void TearDownTestSuite() {
    delete backend;
    backend = nullptr;
  }

  ServerFixture() {
    cfg.pool.size = 0;  // no warm containers: each test counts what it creates
    tools::registerBuiltinTools(registry, cfg);
  }
  ~ServerFixture() override { stop(); }

  // Ends every session (their containers go); idempotent. Derived fixtures call it before
  // removing images those sessions used.
  void stop() {
    if (endpoint) endpoint->close();
    endpoint.reset();
    mcp.reset();
    if (sessions) sessions->shutdown();
    sessions.reset();
  }

  // Starts the server part with the current cfg (call after editing cfg).
  void start() {
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, *backend));
    mcp = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    endpoint = mcp->open("adversarial");
    jsonrpc::RequestContext ctx;
    (void)endpoint->handle({{"jsonrpc", "2.0"},
                            {"id", 0},
                            {"method", "initialize"},
                            {"params", {{"protocolVersion", "2025-11-25"}}}},
                           ctx);
  }

  json call(const std::string& tool, const json& arguments) {
    if (!endpoint) start();
    jsonrpc::RequestContext ctx;
    auto reply = endpoint->handle({{"jsonrpc", "2.0"},
                                   {"id", ++next_id},
                                   {"method", "tools/call"},
                                   {"params", {{"name", tool}, {"arguments", arguments}}}},
                                  ctx);
    EXPECT_TRUE(reply && reply->contains("result")) << (reply ? reply->dump() : "no reply");
    return reply ? (*reply)["result"] : json();
  }
  static std::string text(const json& result) {
    return result.value("content", json::array()).empty()
               ? std::string()
               : result["content"][0].value("text", std::string());
  }
  bool runtimeRegistered(const std::string& name) {
    const auto names = backend->runtimes();
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  static inline sandbox::docker::DockerBackend* backend = nullptr;
  config::ServerConfig cfg;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> mcp;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  int next_id = 0;
};

}  // namespace build_attacks

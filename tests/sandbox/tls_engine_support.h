// The second, TLS-only Docker engine of the remote-engine tests (scripts/tls_dockerd.sh; started
// and stopped by scripts/test.sh): where it listens, its certificates, and backend options for
// it. Without it the tests skip, which scripts/test.sh counts as a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "docker_test_support.h"

namespace tls_engine {

using namespace docker_test;

struct TlsEngine {
  std::string host;   // tcp://127.0.0.1:PORT
  std::string certs;  // ca.pem, client.pem, client-key.pem, rogue-ca.pem, rogue-client*.pem
  std::string image;  // loaded into it from the main engine
};

inline std::optional<TlsEngine> tlsEngine() {
  const char* host = std::getenv("SANDBOX_TLS_ENGINE_HOST");
  const char* certs = std::getenv("SANDBOX_TLS_ENGINE_CERTS");
  if (host == nullptr || certs == nullptr || *host == '\0') return std::nullopt;
  const char* image = std::getenv("SANDBOX_TLS_ENGINE_IMAGE");
  return TlsEngine{host, certs, image != nullptr && *image != '\0' ? image : kImage};
}

inline constexpr const char* kNoEngine =
    "no TLS engine: run `scripts/tls_dockerd.sh start && eval \"$(scripts/tls_dockerd.sh env)\"` "
    "first (scripts/test.sh does)";

inline EngineTlsFiles goodFiles(const TlsEngine& engine) {
  return {engine.certs + "/ca.pem", engine.certs + "/client.pem", engine.certs + "/client-key.pem"};
}

// Options for a backend on the TLS engine, as server_app builds them.
inline DockerBackendOptions remoteOptions(const TlsEngine& engine) {
  DockerBackendOptions out = options();
  out.host = engine.host;
  out.tls = goodFiles(engine);
  out.default_image = engine.image;
  out.python_modules = {{"sandbox_mcp.py", "ANSWER = 42\n"}};
  return out;
}

inline SandboxSpec remoteSpec(const TlsEngine& engine) {
  SandboxSpec out = spec("runsc");
  out.image = engine.image;
  // What the session factory passes: a directory of this host, which a remote engine never sees.
  out.python_helper_dir = "/nonexistent/sandbox-mcp/python";
  return out;
}

// Threads of this process (/proc/self/task).
inline int threadCount() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++count;
  }
  return count;
}

// An engine client for looking around the TLS engine.
inline EngineClient client(const TlsEngine& engine) {
  EngineClientOptions options;
  options.endpoint = common::parseEngineHost(engine.host);
  options.tls = goodFiles(engine);
  return EngineClient(options);
}

}  // namespace tls_engine

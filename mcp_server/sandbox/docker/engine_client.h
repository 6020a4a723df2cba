// Synchronous HTTP/1.1 client for the Docker Engine API over its Unix socket (Boost.Beast), with
// per-call deadlines and a small pool of keep-alive connections. Never shells out to `docker`.
// Thread-safe: any number of threads may call it at once (each call uses its own connection).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox/docker/engine_error.h"

namespace sandbox::docker {

using common::UniqueFd;

enum class Method { kGet, kHead, kPost, kPut, kDelete };

struct EngineClientOptions {
  std::string socket_path = "/var/run/docker.sock";
  std::string api_version = "v1.41";  // every path is sent as /<api_version><path>
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{30000};  // default per call (write + full reply)
  std::size_t max_idle_connections = 4;
  std::size_t max_reply_bytes = std::size_t{64} * 1024 * 1024;
};

struct EngineResponse {
  int status = 0;
  std::string body;
  // The body parsed as JSON; throws EngineError when it is not JSON.
  [[nodiscard]] nlohmann::json json() const;
};

// A connection switched to a raw duplex stream by "101 Switching Protocols" (attach).
struct UpgradedConnection {
  UniqueFd fd;           // blocking mode, owned by the caller
  std::string buffered;  // bytes already read past the 101 reply: they belong to the stream
};

class EngineClient {
 public:
  explicit EngineClient(EngineClientOptions options = {});
  ~EngineClient();
  EngineClient(const EngineClient&) = delete;
  EngineClient& operator=(const EngineClient&) = delete;

  // Sends one request; `path` starts with '/' and may carry a query (already URL-encoded).
  // Returns replies with status < 400; throws EngineError for engine errors and for transport
  // failures (status 0). A stale keep-alive connection is retried once on a fresh one.
  EngineResponse request(Method method, std::string_view path,
                         const std::optional<nlohmann::json>& body = std::nullopt,
                         std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // There is deliberately no POST /build: dockerd's builder runs RUN steps under runc as root
  // and fetches ADD URLs from the host. Images are built by image_builder.h.

  // Sends `method path` with Connection: Upgrade / Upgrade: tcp on a fresh, unpooled connection
  // and expects 101. Throws EngineError otherwise.
  UpgradedConnection upgrade(Method method, std::string_view path,
                             std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  [[nodiscard]] const EngineClientOptions& options() const noexcept { return options_; }

 private:
  class Connection;

  std::unique_ptr<Connection> acquire(bool& reused);
  void release(std::unique_ptr<Connection> connection);

  EngineClientOptions options_;
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

// Percent-encodes everything except RFC 3986 unreserved characters. Pure.
[[nodiscard]] std::string urlEncode(std::string_view text);

}  // namespace sandbox::docker

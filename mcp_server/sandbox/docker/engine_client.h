// Synchronous HTTP/1.1 client for the Docker Engine API (Boost.Beast), over the engine's Unix
// socket or over TCP with TLS (a client certificate; the engine's certificate is verified against
// a CA file and the host name / IP address: tls_connection.h), with per-call deadlines and a
// small pool of keep-alive connections. Never shells out to `docker`; never reads DOCKER_HOST.
// Thread-safe: any number of threads may call it at once (each call uses its own connection).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/engine_host.h"
#include "common/unique_fd.h"
#include "sandbox/docker/engine_error.h"

namespace sandbox::docker {

using common::UniqueFd;

namespace detail {
class EngineConnection;
class TlsContext;
}  // namespace detail

enum class Method { kGet, kHead, kPost, kPut, kDelete };

// PEM files for a tcp:// engine (dockerd --tlsverify): every one is required there.
struct EngineTlsFiles {
  std::string ca_file;    // the CA the engine's certificate must chain to
  std::string cert_file;  // this client's certificate (chain), presented to the engine
  std::string key_file;   // its private key
};

struct EngineClientOptions {
  common::EngineHost endpoint;        // default: unix:///var/run/docker.sock
  EngineTlsFiles tls;                 // tcp:// only
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

// Moves bytes between an upgraded TLS connection and the far end of `fd` on a thread of its own;
// destroying it ends the pump and joins the thread (tls_pump.h).
class StreamPump {
 public:
  virtual ~StreamPump() = default;
};

// A connection switched to a raw duplex stream by "101 Switching Protocols" (attach). `fd` is a
// plain socket whichever the transport: the Unix connection itself, or for TLS one end of a
// socketpair whose other end `pump` relays to the TLS stream. Closing or shutting `fd` down ends
// the connection (the pump then closes the TLS stream); the engine closing it ends `fd`'s stream
// after the bytes sent before. Keep `pump` alive as long as `fd` is used.
struct UpgradedConnection {
  UniqueFd fd;           // blocking mode, owned by the caller
  std::string buffered;  // bytes already read past the 101 reply: they belong to the stream
  std::unique_ptr<StreamPump> pump;  // TLS only
};

// A request body other than JSON (e.g. a tar archive for PUT /containers/{id}/archive).
struct RawBody {
  std::string content_type;
  std::string bytes;
};

class EngineClient {
 public:
  // Throws SandboxError when a tcp:// engine lacks TLS files or they cannot be loaded.
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
  // The same with a body of any content type.
  EngineResponse request(Method method, std::string_view path, const RawBody& body,
                         std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // There is deliberately no POST /build: dockerd's builder runs RUN steps under runc as root
  // and fetches ADD URLs from the host. Images are built by image_builder.h.

  // Sends `method path` with Connection: Upgrade / Upgrade: tcp on a fresh, unpooled connection
  // and expects 101. Throws EngineError otherwise.
  UpgradedConnection upgrade(Method method, std::string_view path,
                             std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  [[nodiscard]] const EngineClientOptions& options() const noexcept { return options_; }
  // True for a tcp:// engine: it runs on another machine, so nothing of this host can be
  // bind-mounted into its containers.
  [[nodiscard]] bool remote() const noexcept { return options_.endpoint.isTcp(); }

  // Calls that failed for the engine's sake, since start (GET /metrics): unreachable, timed out
  // or cut off (`transport`), or answered 5xx (`server`). 4xx answers are the caller's business.
  struct FailureCounts {
    std::uint64_t transport = 0;
    std::uint64_t server = 0;
  };
  [[nodiscard]] FailureCounts failures() const noexcept {
    return {transport_failures_.load(std::memory_order_relaxed),
            server_failures_.load(std::memory_order_relaxed)};
  }

 private:
  EngineResponse send(Method method, std::string_view path, std::optional<RawBody> body,
                      std::optional<std::chrono::milliseconds> timeout);
  std::unique_ptr<detail::EngineConnection> connect();
  std::unique_ptr<detail::EngineConnection> acquire(bool& reused);
  void release(std::unique_ptr<detail::EngineConnection> connection);
  void noteFailure(const EngineError& error) noexcept;

  EngineClientOptions options_;
  std::unique_ptr<detail::TlsContext> tls_;  // tcp:// only: certificates loaded once
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<detail::EngineConnection>> idle_;
  std::atomic<std::uint64_t> transport_failures_{0};
  std::atomic<std::uint64_t> server_failures_{0};
};

// Percent-encodes everything except RFC 3986 unreserved characters. Pure.
[[nodiscard]] std::string urlEncode(std::string_view text);

}  // namespace sandbox::docker

// One connection of EngineClient to the engine: a Unix socket, or TCP with TLS (tls_connection.h).
// Each has a private io_context on which asynchronous Beast operations run to completion on the
// calling thread: synchronous calls with real deadlines. Private to the engine client.
// Not thread-safe: one thread uses a connection at a time (the pool hands it out).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "sandbox/docker/engine_client.h"

namespace sandbox::docker::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using EngineRequest = http::request<http::string_body>;
using EngineReplyParser = http::response_parser<http::string_body>;

class EngineConnection {
 public:
  virtual ~EngineConnection() = default;

  // Writes the request and reads the reply header (and the body unless header_only), all
  // within `timeout`.
  virtual beast::error_code exchange(const EngineRequest& request, EngineReplyParser& parser,
                                     std::chrono::milliseconds timeout, bool header_only) = 0;
  // Finishes reading a reply whose header exchange(header_only) already read.
  virtual beast::error_code readRest(EngineReplyParser& parser) = 0;
  // True when nothing unexpected is left in the read buffer, so the connection can be reused.
  [[nodiscard]] virtual bool clean() const noexcept = 0;
  // A transport error in words, with what to check.
  [[nodiscard]] virtual std::string describe(const beast::error_code& ec) const {
    return ec.message();
  }

  // Turns a connection that answered 101 into a raw duplex stream (see UpgradedConnection).
  static UpgradedConnection detach(std::unique_ptr<EngineConnection> connection) {
    EngineConnection* raw = connection.get();
    return raw->detachSelf(std::move(connection));
  }

 protected:
  // `self` owns this object.
  virtual UpgradedConnection detachSelf(std::unique_ptr<EngineConnection> self) = 0;
};

// exchange/readRest/clean for any Beast stream whose lowest layer is a beast::basic_stream.
template <class Stream>
class BeastConnection : public EngineConnection {
 public:
  beast::error_code exchange(const EngineRequest& request, EngineReplyParser& parser,
                             std::chrono::milliseconds timeout, bool header_only) override {
    beast::get_lowest_layer(stream_).expires_after(timeout);  // one deadline for it all
    auto ec = run([&](auto handler) { http::async_write(stream_, request, handler); });
    if (ec) return ec;
    ec =
        header_only
            ? run([&](auto handler) { http::async_read_header(stream_, buffer_, parser, handler); })
            : run([&](auto handler) { http::async_read(stream_, buffer_, parser, handler); });
    answered_ = answered_ || !ec;
    return ec;
  }

  beast::error_code readRest(EngineReplyParser& parser) override {
    return run([&](auto handler) { http::async_read(stream_, buffer_, parser, handler); });
  }

  [[nodiscard]] bool clean() const noexcept override { return buffer_.size() == 0; }

 protected:
  template <class... Args>
  explicit BeastConnection(Args&&... args) : stream_(ioc_, std::forward<Args>(args)...) {}

  template <class Initiate>
  beast::error_code run(Initiate&& initiate) {
    std::optional<beast::error_code> result;
    std::forward<Initiate>(initiate)([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result.value_or(beast::error_code(net::error::operation_aborted));
  }

  // The bytes read past the reply header; they belong to an upgraded stream.
  std::string takeBuffered() {
    const auto data = buffer_.data();
    std::string out(static_cast<const char*>(data.data()), data.size());
    buffer_.consume(buffer_.size());
    return out;
  }

  net::io_context ioc_{1};
  Stream stream_;
  beast::flat_buffer buffer_;
  bool answered_ = false;  // the engine has answered a request on this connection
};

using LocalStream = beast::basic_stream<net::local::stream_protocol>;

class UnixConnection final : public BeastConnection<LocalStream> {
 public:
  // Throws EngineError (status 0) when the socket does not accept within `timeout`.
  UnixConnection(const std::string& socket_path, std::chrono::milliseconds timeout);

 protected:
  UpgradedConnection detachSelf(std::unique_ptr<EngineConnection> self) override;
};

}  // namespace sandbox::docker::detail

#include "sandbox/docker/tls_pump.h"

#include <sys/socket.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <system_error>
#include <thread>

#include "sandbox/docker/tls_connection.h"

namespace sandbox::docker::detail {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{64} * 1024;

class TlsPump final : public StreamPump {
 public:
  TlsPump(std::unique_ptr<TlsConnection> connection, common::UniqueFd pump_end)
      : connection_(std::move(connection)), local_(connection_->context()) {
    local_.assign(net::local::stream_protocol(), pump_end.release());
    readTls();
    readLocal();
    thread_ = std::thread([this] {
      auto& context = connection_->context();
      context.restart();
      context.run();
    });
  }

  ~TlsPump() override {
    net::post(connection_->context(), [this] { stop(); });  // runs unless the pump already ended
    thread_.join();
  }

  TlsPump(const TlsPump&) = delete;
  TlsPump& operator=(const TlsPump&) = delete;

 private:
  // Engine -> caller.
  void readTls() {
    connection_->stream().async_read_some(
        net::buffer(from_tls_), [this](beast::error_code ec, std::size_t n) {
          if (ec) return stop();  // end of stream (close_notify or not) or an error
          net::async_write(local_, net::buffer(from_tls_.data(), n),
                           [this](beast::error_code write_ec, std::size_t) {
                             if (write_ec) return stop();
                             readTls();
                           });
        });
  }

  // Caller -> engine.
  void readLocal() {
    local_.async_read_some(net::buffer(from_local_), [this](beast::error_code ec, std::size_t n) {
      if (ec) return stop();
      net::async_write(connection_->stream(), net::buffer(from_local_.data(), n),
                       [this](beast::error_code write_ec, std::size_t) {
                         if (write_ec) return stop();
                         readLocal();
                       });
    });
  }

  // Ends both directions; the remaining handlers complete with operation_aborted and run()
  // returns. The engine sees its connection close (for attach: stdin ends).
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    beast::error_code ignored;
    local_.shutdown(net::socket_base::shutdown_both, ignored);
    local_.close(ignored);
    auto& tcp = beast::get_lowest_layer(connection_->stream());
    tcp.socket().shutdown(net::socket_base::shutdown_both, ignored);
    tcp.close();
  }

  std::unique_ptr<TlsConnection> connection_;
  net::local::stream_protocol::socket local_;
  std::array<char, kChunkBytes> from_tls_{};
  std::array<char, kChunkBytes> from_local_{};
  bool stopped_ = false;  // pump thread only
  std::thread thread_;
};

}  // namespace

std::pair<common::UniqueFd, common::UniqueFd> socketPair() {
  int fds[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair for the TLS pump");
  }
  return {common::UniqueFd(fds[0]), common::UniqueFd(fds[1])};
}

std::unique_ptr<StreamPump> startTlsPump(std::unique_ptr<TlsConnection> connection,
                                         common::UniqueFd pump_end) {
  return std::make_unique<TlsPump>(std::move(connection), std::move(pump_end));
}

}  // namespace sandbox::docker::detail

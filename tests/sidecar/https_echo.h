// An HTTPS upstream for the sidecar's TLS tests: 127.0.0.1 (port 0), a certificate for `name`
// minted by a test SessionCa. Every request gets 200 with a JSON echo of it ({"method", "target",
// "headers": [[name, value]...], "body"}); GET /big gets kBigBody bytes (pattern()) chunked; HEAD
// gets a head with Content-Length only; GET /then-close is answered keep-alive and the connection
// then closed (an upstream's keep-alive timeout). One connection at a time, on its own thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/session_ca.h"

namespace sidecar_test {

// `size` bytes of a repeating lowercase pattern (bodies that are easy to compare).
[[nodiscard]] std::string pattern(std::size_t size);

class HttpsEcho {
 public:
  static constexpr std::size_t kBigBody = std::size_t{300} * 1024;

  explicit HttpsEcho(sidecar::SessionCa& ca, const std::string& name = "localhost");
  ~HttpsEcho();
  HttpsEcho(const HttpsEcho&) = delete;
  HttpsEcho& operator=(const HttpsEcho&) = delete;

  [[nodiscard]] std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  [[nodiscard]] std::vector<nlohmann::json> requests();

 private:
  void serve();

  boost::asio::io_context io_;
  boost::asio::ssl::context context_{boost::asio::ssl::context::tls_server};
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<nlohmann::json> requests_;
};

}  // namespace sidecar_test

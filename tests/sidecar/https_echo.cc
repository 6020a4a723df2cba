#include "https_echo.h"

#include <sys/socket.h>

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace sidecar_test {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using json = nlohmann::json;

void serveConnection(ssl::stream<net::ip::tcp::socket>& stream, std::mutex& mutex,
                     std::vector<json>& requests) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    boost::system::error_code ec;
    http::request<http::string_body> request;
    http::read(stream, buffer, request, ec);
    if (ec) return;
    json seen = {{"method", std::string(request.method_string())},
                 {"target", std::string(request.target())},
                 {"headers", json::array()},
                 {"body", request.body()}};
    for (const auto& field : request) {
      seen["headers"].push_back({std::string(field.name_string()), std::string(field.value())});
    }
    {
      const std::lock_guard lock(mutex);
      requests.push_back(seen);
    }
    if (request.method() == http::verb::head) {
      http::response<http::empty_body> head{http::status::ok, 11};
      head.set(http::field::content_length, "1234");
      head.keep_alive(request.keep_alive());
      http::response_serializer<http::empty_body> writer(head);
      http::write_header(stream, writer, ec);
    } else {
      http::response<http::string_body> answer{http::status::ok, 11};
      answer.keep_alive(request.keep_alive());
      if (request.target() == "/big") {
        answer.body() = pattern(HttpsEcho::kBigBody);
        answer.chunked(true);
      } else {
        answer.set(http::field::content_type, "application/json");
        answer.body() = seen.dump();
        answer.prepare_payload();
      }
      http::write(stream, answer, ec);
    }
    if (ec || !request.keep_alive() || request.target() == "/then-close") return;
  }
}

}  // namespace

std::string pattern(std::size_t size) {
  std::string text(size, ' ');
  for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7) % 26);
  return text;
}

HttpsEcho::HttpsEcho(sidecar::SessionCa& ca, const std::string& name) {
  SSL_CTX_use_certificate(context_.native_handle(), ca.leafFor(name).get());
  SSL_CTX_use_PrivateKey(context_.native_handle(), ca.leafKey());
  acceptor_.open(net::ip::tcp::v4());
  acceptor_.bind({net::ip::make_address("127.0.0.1"), 0});
  acceptor_.listen();
  thread_ = std::thread([this] { serve(); });
}

HttpsEcho::~HttpsEcho() {
  ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes accept()
  thread_.join();
}

std::vector<json> HttpsEcho::requests() {
  const std::lock_guard lock(mutex_);
  return requests_;
}

void HttpsEcho::serve() {
  for (;;) {
    boost::system::error_code ec;
    net::ip::tcp::socket socket(io_);
    acceptor_.accept(socket, ec);
    if (ec) return;
    timeval timeout{5, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ssl::stream<net::ip::tcp::socket> stream(std::move(socket), context_);
    stream.handshake(ssl::stream_base::server, ec);
    if (!ec) serveConnection(stream, mutex_, requests_);
  }
}

}  // namespace sidecar_test

// Helpers shared by the HTTP transport tests (http_transport_*_test.cc): one exchange with curl
// against 127.0.0.1, JSON-RPC request builders, and a fixture that runs an HttpTransport on a free
// port with the fake endpoint factory.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fake_endpoint.h"
#include "transport/http_transport.h"

namespace http_test {

using transport_test::FakeFactory;
using transport_test::json;

struct Reply {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::vector<std::string> status_lines;       // interim (1xx) and final
  std::string body;

  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  [[nodiscard]] json bodyJson() const { return json::parse(body); }
};

struct Call {
  std::string method = "POST";
  std::string path = "/mcp";
  std::vector<std::string> headers = {"Content-Type: application/json",
                                      "Accept: application/json, text/event-stream"};
  std::string body;
  std::function<void(const std::string& received_so_far)> on_data;
};

// Sends `call` to 127.0.0.1:`port` and collects the reply; throws std::runtime_error when curl
// fails (no connection, timeout).
Reply perform(std::uint16_t port, const Call& call);

json request(int id, const std::string& method, json params = json::object());

json initializeRequest(bool fail = false);

class HttpFixture : public ::testing::Test {
 protected:
  void startServer(transport::HttpTransportOptions options = {}) {
    options.address = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<transport::HttpTransport>(factory_, options);
    server_->start();
    ASSERT_NE(server_->port(), 0);
  }

  Reply call(Call c) {
    for (const auto& h : extra_headers_) c.headers.push_back(h);
    return perform(server_->port(), c);
  }
  Reply post(const json& body, std::vector<std::string> more_headers = {}) {
    Call c;
    c.body = body.dump();
    for (auto& h : more_headers) c.headers.push_back(std::move(h));
    return call(std::move(c));
  }
  // Initializes a session and returns its id.
  std::string openSession() {
    const Reply reply = post(initializeRequest());
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.header("mcp-session-id");
  }

  std::shared_ptr<FakeFactory> factory_ = std::make_shared<FakeFactory>();
  std::unique_ptr<transport::HttpTransport> server_;
  std::vector<std::string> extra_headers_;
};

}  // namespace http_test

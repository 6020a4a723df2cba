// The HTTP transport's requests over 127.0.0.1: body limits (plain, chunked, Expect: 100-continue),
// notifications and batches, header and JSON validation, methods, SSE streaming of notifications
// before the response, and a slow request that does not block ping or cancellation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "http_test_support.h"
#include "transport/http_transport.h"

namespace {

using http_test::Call;
using http_test::initializeRequest;
using http_test::Reply;
using http_test::request;
using transport_test::json;
using namespace std::chrono_literals;

using Http = http_test::HttpFixture;

TEST_F(Http, OversizedBodyIs413AndServerKeepsServing) {
  transport::HttpTransportOptions options;
  options.max_body_bytes = 2048;
  startServer(options);
  const std::string session = openSession();
  const Reply big = post(request(3, "echo", {{"blob", std::string(100'000, 'x')}}),
                         {"Mcp-Session-Id: " + session});
  EXPECT_EQ(big.status, 413);
  const std::string message = big.bodyJson()["error"]["message"];
  EXPECT_NE(message.find("2048"), std::string::npos) << message;
  EXPECT_NE(message.find("http.max_body_bytes"), std::string::npos) << message;
  const Reply next =
      post(request(4, "echo", {{"blob", std::string(1000, 'y')}}), {"Mcp-Session-Id: " + session});
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.bodyJson()["id"], 4);
}

TEST_F(Http, ChunkedOversizedBodyIs413) {
  transport::HttpTransportOptions options;
  options.max_body_bytes = 2048;
  startServer(options);
  const std::string session = openSession();
  Call c;
  c.body = request(3, "echo", {{"blob", std::string(50'000, 'x')}}).dump();
  c.headers.push_back("Mcp-Session-Id: " + session);
  c.headers.push_back("Transfer-Encoding: chunked");  // no Content-Length: found while reading
  const Reply big = call(c);
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(post(request(4, "ping"), {"Mcp-Session-Id: " + session}).status, 200);
}

TEST_F(Http, ExpectContinueGetsInterimResponse) {
  startServer();  // default limit: 4 MiB
  const std::string session = openSession();
  const std::string blob(1'500'000, 'q');
  // Without an interim "100 Continue" curl would stall a second before sending the body.
  const Reply reply = post(request(3, "echo", {{"blob", blob}}),
                           {"Mcp-Session-Id: " + session, "Expect: 100-continue"});
  EXPECT_EQ(reply.status_lines,
            (std::vector<std::string>{"HTTP/1.1 100 Continue", "HTTP/1.1 200 OK"}));
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.bodyJson()["result"]["blob"], blob);
}

TEST_F(Http, NotificationsAndResponsesGet202) {
  startServer();
  const std::string session = openSession();
  const Reply reply = post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                           {"Mcp-Session-Id: " + session});
  EXPECT_EQ(reply.status, 202);
  EXPECT_TRUE(reply.body.empty());
  const auto events = factory_->last()->events();
  EXPECT_NE(std::find(events.begin(), events.end(), "notification:notifications/initialized"),
            events.end());
  const Reply batch = post(json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/a"}},
                                        {{"jsonrpc", "2.0"}, {"method", "notifications/b"}}}),
                           {"Mcp-Session-Id: " + session});
  EXPECT_EQ(batch.status, 202);
}

TEST_F(Http, BatchWithRequestsGetsArray) {
  startServer();
  const std::string session = openSession();
  const Reply reply = post(json::array({request(5, "ping"), request(6, "echo", {{"k", 1}})}),
                           {"Mcp-Session-Id: " + session});
  EXPECT_EQ(reply.status, 200);
  const json body = reply.bodyJson();
  ASSERT_TRUE(body.is_array());
  EXPECT_EQ(body.size(), 2u);
}

TEST_F(Http, HeaderValidation) {
  startServer();
  Call form;
  form.headers = {"Content-Type: text/plain"};
  form.body = initializeRequest().dump();
  EXPECT_EQ(call(form).status, 415);
  Call html;
  html.headers = {"Content-Type: application/json", "Accept: text/html"};
  html.body = initializeRequest().dump();
  EXPECT_EQ(call(html).status, 406);
  Call no_accept;
  no_accept.headers = {"Content-Type: application/json", "Accept:"};  // curl: drop the header
  no_accept.body = initializeRequest().dump();
  EXPECT_EQ(call(no_accept).status, 200);
  EXPECT_EQ(post(initializeRequest(), {"MCP-Protocol-Version: 1999-01-01"}).status, 400);
  Call other_path;
  other_path.path = "/other";
  other_path.body = initializeRequest().dump();
  EXPECT_EQ(call(other_path).status, 404);
}

TEST_F(Http, MalformedJsonIs400ParseError) {
  startServer();
  Call c;
  c.body = "{\"jsonrpc\": ";
  const Reply reply = call(c);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(reply.bodyJson()["error"]["code"], -32700);
}

TEST_F(Http, GetIs405WithAllow) {
  startServer();
  Call get;
  get.method = "GET";
  get.headers = {"Accept: text/event-stream"};
  const Reply reply = call(get);
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(reply.header("allow"), "POST, DELETE");
  Call put;
  put.method = "PUT";
  EXPECT_EQ(call(put).status, 405);
}

TEST_F(Http, NotifyingHandlerStreamsSseBeforeTheResponse) {
  startServer();
  const std::string session = openSession();
  auto endpoint = factory_->last();
  Call c;
  c.body = request(7, "notify", {{"wait", true}}).dump();
  c.headers.push_back("Mcp-Session-Id: " + session);
  // The handler blocks until the client has *received* the notification: proof that events are
  // streamed as they happen, not buffered until the end.
  c.on_data = [&](const std::string& so_far) {
    if (so_far.find("notifications/progress") != std::string::npos) endpoint->gate.open();
  };
  const Reply reply = call(c);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "text/event-stream");
  const std::size_t note = reply.body.find("notifications/progress");
  const std::size_t result = reply.body.find("\"released\":true");
  ASSERT_NE(note, std::string::npos) << reply.body;
  ASSERT_NE(result, std::string::npos) << reply.body;
  EXPECT_LT(note, result);
  // Two events, each "id:", "event: message" and a single data line of JSON.
  EXPECT_NE(reply.body.find("event: message\ndata: {"), std::string::npos) << reply.body;
  std::size_t events = 0;
  for (std::size_t at = 0; (at = reply.body.find("\n\n", at)) != std::string::npos; at += 2)
    ++events;
  EXPECT_EQ(events, 2u) << reply.body;
  const std::size_t data = reply.body.find("data: ", note > 200 ? note - 200 : 0);
  const json notification =
      json::parse(reply.body.substr(data + 6, reply.body.find('\n', data) - data - 6));
  EXPECT_EQ(notification["params"]["message"], "line1\nline2");

  // The connection stays usable afterwards: a plain JSON answer follows.
  const Reply ping = post(request(8, "ping"), {"Mcp-Session-Id: " + session});
  EXPECT_EQ(ping.header("content-type"), "application/json");
}

TEST_F(Http, SlowRequestDoesNotBlockPingOrCancellation) {
  transport::HttpTransportOptions options;
  options.worker_threads = 1;  // the slow request occupies the only request worker
  startServer(options);
  const std::string session = openSession();
  auto endpoint = factory_->last();
  auto slow = std::async(std::launch::async,
                         [&] { return post(request(9, "slow"), {"Mcp-Session-Id: " + session}); });
  std::this_thread::sleep_for(100ms);
  const auto started = std::chrono::steady_clock::now();
  const Reply ping = post(request(10, "ping"), {"Mcp-Session-Id: " + session});
  EXPECT_EQ(ping.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  const Reply cancel = post(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 9}}}},
      {"Mcp-Session-Id: " + session});
  EXPECT_EQ(cancel.status, 202);
  const Reply done = slow.get();
  EXPECT_EQ(done.bodyJson()["result"]["released"], true);
}

}  // namespace

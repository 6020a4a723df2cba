#include "transport/http_transport.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fake_endpoint.h"

namespace {

using transport_test::FakeEndpoint;
using transport_test::FakeFactory;
using transport_test::json;
using namespace std::chrono_literals;

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

class CurlGlobal {
 public:
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};
const CurlGlobal curl_global;

struct CurlState {
  Reply reply;
  const Call* call;
};

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  state->reply.body.append(data, size * count);
  if (state->call->on_data) state->call->on_data(state->reply.body);
  return size * count;
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    state->reply.status_lines.push_back(line.substr(0, line.find_last_not_of("\r\n") + 1));
    return size * count;
  }
  const std::size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of("\r\n ") + 1);
    state->reply.headers[name] = value;
  }
  return size * count;
}

Reply perform(std::uint16_t port, const Call& call) {
  CurlState state{{}, &call};
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + call.path;
  curl_slist* list = nullptr;
  for (const auto& h : call.headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");  // tests talk to loopback only
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 15L);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &onBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &state);
  if (call.method == "POST") {
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(call.body.size()));
  } else {
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl.get());
  curl_slist_free_all(list);
  if (rc != CURLE_OK) throw std::runtime_error(std::string("curl: ") + curl_easy_strerror(rc));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &state.reply.status);
  return state.reply;
}

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json initializeRequest(bool fail = false) {
  return request(1, "initialize",
                 {{"protocolVersion", "2025-11-25"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}},
                  {"fail", fail}});
}

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

using Http = HttpFixture;

TEST_F(Http, InitializeOpensSessionWithRandomId) {
  startServer();
  const Reply reply = post(initializeRequest());
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const std::string session = reply.header("mcp-session-id");
  ASSERT_EQ(session.size(), 32u);
  EXPECT_EQ(session.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(reply.bodyJson()["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(factory_->owners(), std::vector<std::string>{session});
  EXPECT_EQ(server_->sessionCount(), 1u);

  const Reply ping =
      post(request(2, "ping"), {"Mcp-Session-Id: " + session, "MCP-Protocol-Version: 2025-11-25"});
  EXPECT_EQ(ping.status, 200);
  EXPECT_EQ(ping.bodyJson()["id"], 2);
  EXPECT_TRUE(ping.header("mcp-session-id").empty());
  const Reply second = post(initializeRequest());
  EXPECT_NE(second.header("mcp-session-id"), session);  // every initialize: a new session
}

TEST_F(Http, FailedInitializeOpensNoSession) {
  startServer();
  const Reply reply = post(initializeRequest(true));
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(reply.header("mcp-session-id").empty());
  EXPECT_EQ(reply.bodyJson()["error"]["code"], -32602);
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(factory_->last()->closeCount(), 1);
}

TEST_F(Http, MissingSessionHeaderIs400) {
  startServer();
  const Reply reply = post(request(2, "ping"));
  EXPECT_EQ(reply.status, 400);
  const std::string message = reply.bodyJson()["error"]["message"];
  EXPECT_NE(message.find("Mcp-Session-Id"), std::string::npos) << message;
}

TEST_F(Http, UnknownSessionIs404) {
  startServer();
  const Reply reply =
      post(request(2, "ping"), {"Mcp-Session-Id: 0123456789abcdef0123456789abcdef"});
  EXPECT_EQ(reply.status, 404);
  EXPECT_TRUE(reply.bodyJson().contains("error"));
}

TEST_F(Http, OriginIsChecked) {
  startServer();
  const Reply evil = post(initializeRequest(), {"Origin: http://evil.example"});
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(server_->sessionCount(), 0u);
  const Reply local = post(initializeRequest(), {"Origin: http://localhost:6274"});
  EXPECT_EQ(local.status, 200);
}

TEST_F(Http, DnsRebindingHostIsRefused) {
  startServer();
  const Reply reply = post(initializeRequest(), {"Host: attacker.example:8080"});
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(server_->sessionCount(), 0u);
}

TEST_F(Http, BearerTokenIsRequiredWhenConfigured) {
  transport::HttpTransportOptions options;
  options.token = "t0ken-abc";
  startServer(options);
  const Reply missing = post(initializeRequest());
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.header("www-authenticate"), "Bearer");
  const Reply wrong = post(initializeRequest(), {"Authorization: Bearer t0ken-abd"});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(server_->sessionCount(), 0u);
  const Reply right = post(initializeRequest(), {"Authorization: Bearer t0ken-abc"});
  EXPECT_EQ(right.status, 200);
  EXPECT_EQ(server_->sessionCount(), 1u);
}

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

TEST_F(Http, DeleteEndsSession) {
  startServer();
  const std::string session = openSession();
  auto endpoint = factory_->last();
  Call del;
  del.method = "DELETE";
  del.headers = {"Mcp-Session-Id: " + session};
  EXPECT_EQ(call(del).status, 204);
  EXPECT_EQ(endpoint->closeCount(), 1);
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(call(del).status, 404);
  EXPECT_EQ(post(request(2, "ping"), {"Mcp-Session-Id: " + session}).status, 404);
  Call no_id;
  no_id.method = "DELETE";
  EXPECT_EQ(call(no_id).status, 400);
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

TEST_F(Http, IdleSessionsExpire) {
  transport::HttpTransportOptions options;
  options.session_idle_timeout = 200ms;
  startServer(options);
  const std::string session = openSession();
  auto endpoint = factory_->last();
  EXPECT_TRUE(endpoint->waitClosed(3s));
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(post(request(2, "ping"), {"Mcp-Session-Id: " + session}).status, 404);
}

TEST_F(Http, StopClosesEndpoints) {
  startServer();
  openSession();
  openSession();
  server_->stop();
  EXPECT_EQ(factory_->endpoint(0)->closeCount(), 1);
  EXPECT_EQ(factory_->endpoint(1)->closeCount(), 1);
  server_->stop();  // idempotent
}

TEST_F(Http, StopAnswersRunningRequestsThenCloses) {
  startServer();
  const std::string session = openSession();
  auto slow = std::async(std::launch::async,
                         [&] { return post(request(9, "slow"), {"Mcp-Session-Id: " + session}); });
  std::this_thread::sleep_for(100ms);  // the request is running
  const auto started = std::chrono::steady_clock::now();
  server_->stop();  // closes the endpoint, which cancels the request
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  const Reply done = slow.get();
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.bodyJson()["id"], 9);
  EXPECT_EQ(factory_->last()->closeCount(), 1);
  EXPECT_THROW(post(request(10, "ping"), {"Mcp-Session-Id: " + session}), std::runtime_error);
}

TEST(Unit, HttpRefusesNonLoopbackBindWithoutToken) {
  transport::HttpTransportOptions options;
  options.address = "0.0.0.0";
  options.port = 0;
  transport::HttpTransport server(std::make_shared<FakeFactory>(), options);
  try {
    server.start();
    FAIL() << "start() must refuse a public bind without a token";
  } catch (const std::invalid_argument& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("--token-file"), std::string::npos) << text;
    EXPECT_NE(text.find("SANDBOX_MCP_TOKEN"), std::string::npos) << text;
  }
}

TEST(Unit, HttpRejectsUnparsableAddress) {
  transport::HttpTransportOptions options;
  options.address = "not an address";
  transport::HttpTransport server(std::make_shared<FakeFactory>(), options);
  EXPECT_THROW(server.start(), std::invalid_argument);
}

}  // namespace

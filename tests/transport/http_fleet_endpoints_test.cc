// The HTTP transport's plain GET endpoints beside /mcp (what /healthz, /readyz and /metrics ride
// on) and its drain: answers, HEAD, methods, the bearer token, and new sessions refused with
// 503 + Retry-After while open ones keep working.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "http_test_support.h"
#include "transport/http_transport.h"

namespace {

using http_test::Call;
using http_test::initializeRequest;
using http_test::Reply;
using http_test::request;

using HttpFleet = http_test::HttpFixture;

transport::HttpTransportOptions withEndpoints(std::atomic<int>* calls = nullptr) {
  transport::HttpTransportOptions options;
  options.get_endpoints["/healthz"] = [] {
    return transport::PlainResponse{200, "text/plain; charset=utf-8", "ok\n", {}};
  };
  options.get_endpoints["/readyz"] = [calls] {
    if (calls != nullptr) ++*calls;
    return transport::PlainResponse{
        503, "application/json", "{\"ready\":false}\n", {{"Retry-After", "5"}}};
  };
  options.get_endpoints["/boom"] = []() -> transport::PlainResponse {
    throw std::runtime_error("the engine went away");
  };
  return options;
}

Reply get(std::uint16_t port, const std::string& path, const std::string& method = "GET",
          std::vector<std::string> headers = {}) {
  Call c;
  c.method = method;
  c.path = path;
  c.headers = std::move(headers);
  return http_test::perform(port, c);
}

TEST_F(HttpFleet, GetEndpointsAnswerWithTheirOwnStatusTypeAndHeaders) {
  std::atomic<int> readiness_calls{0};
  startServer(withEndpoints(&readiness_calls));
  const Reply health = get(server_->port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(health.header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(health.header("cache-control"), "no-store");

  const Reply ready = get(server_->port(), "/readyz?verbose=1");  // a query is ignored
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.bodyJson()["ready"], false);
  EXPECT_EQ(ready.header("retry-after"), "5");
  EXPECT_EQ(readiness_calls.load(), 1);

  const Reply head = get(server_->port(), "/healthz", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.header("content-length"), "3");
}

TEST_F(HttpFleet, AHandlerThatThrowsIsA500AndTheServerKeepsServing) {
  startServer(withEndpoints());
  const Reply boom = get(server_->port(), "/boom");
  EXPECT_EQ(boom.status, 500);
  EXPECT_NE(boom.body.find("the engine went away"), std::string::npos) << boom.body;
  EXPECT_EQ(get(server_->port(), "/healthz").status, 200);
}

TEST_F(HttpFleet, OnlyGetAndHeadReachThemAndUnknownPathsAre404) {
  startServer(withEndpoints());
  Call c;
  c.method = "POST";
  c.path = "/healthz";
  c.body = "{}";
  const Reply post_health = call(c);
  EXPECT_EQ(post_health.status, 405);
  EXPECT_EQ(post_health.header("allow"), "GET, HEAD");
  EXPECT_EQ(get(server_->port(), "/metricz").status, 404);
  EXPECT_EQ(get(server_->port(), "/mcp").status, 405);  // still no standalone SSE stream
}

TEST_F(HttpFleet, TheBearerTokenGuardsThemLikeMcp) {
  auto options = withEndpoints();
  options.token = "s3cret-token-of-enough-length";
  startServer(options);
  EXPECT_EQ(get(server_->port(), "/healthz").status, 401);
  EXPECT_EQ(get(server_->port(), "/healthz", "GET", {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(get(server_->port(), "/healthz", "GET",
                {"Authorization: Bearer s3cret-token-of-enough-length"})
                .status,
            200);
}

TEST_F(HttpFleet, DrainingRefusesNewSessionsButServesOpenOnes) {
  startServer();
  const std::string session = openSession();
  ASSERT_FALSE(session.empty());
  EXPECT_FALSE(server_->draining());
  server_->beginDrain();
  EXPECT_TRUE(server_->draining());

  const Reply refused = post(initializeRequest());
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.header("retry-after"), "5");
  EXPECT_TRUE(refused.header("mcp-session-id").empty());
  EXPECT_NE(refused.bodyJson()["error"]["message"].get<std::string>().find("shutting down"),
            std::string::npos)
      << refused.body;

  const Reply served = post(request(2, "ping"), {"Mcp-Session-Id: " + session});
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(served.bodyJson()["id"], 2);
}

}  // namespace

// The sidecar relay's streams and connections end to end on the host (server on a Unix socket,
// upstream on 127.0.0.1, libcurl as the sandboxed client): SSE passed through as it arrives,
// upstream down or hanging, a client hanging up, the concurrency limit, stop(), keep-alive.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sidecar_relay_support.h"

namespace {

using relay_test::Call;
using relay_test::Reply;
using relay_test::SidecarRelay;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST_F(SidecarRelay, SseEventsArriveAsTheUpstreamSendsThem) {
  Call call;
  call.url = origin() + "/ok/sse";
  bool first_before_second = false;
  bool released = false;
  call.on_data = [&](const std::string& so_far) {
    if (!released && so_far.find("data: one") != std::string::npos) {
      first_before_second = !upstream_.secondSseEventSent();
      released = true;
      upstream_.releaseSse();  // the upstream holds "two" back until the client saw "one"
    }
    return true;
  };
  const auto started = Clock::now();
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "text/event-stream");
  EXPECT_EQ(reply.body, "data: one\n\ndata: two\n\n");
  EXPECT_TRUE(first_before_second);
  EXPECT_LT(Clock::now() - started, 5s);  // not the upstream's 10 s fallback
}

TEST_F(SidecarRelay, UpstreamDownIs502WithTheReason) {
  Call call;
  call.url = "http://127.0.0.1:" + std::to_string(dead_port_) + "/down/mcp";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 502);
  EXPECT_NE(reply.bodyJson()["error"].get<std::string>().find("upstream request failed"),
            std::string::npos);
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "error");
  EXPECT_EQ(lines[0]["status"], 502);
}

TEST_F(SidecarRelay, HangingUpstreamIs504WithinTheIdleTimeout) {
  Call call;
  call.url = origin() + "/ok/slow";
  const auto started = Clock::now();
  const auto reply = perform(call);
  const auto elapsed = Clock::now() - started;
  EXPECT_EQ(reply.status, 504);
  EXPECT_NE(reply.bodyJson()["error"].get<std::string>().find("idle timeout"), std::string::npos);
  EXPECT_GE(elapsed, 900ms);
  EXPECT_LT(elapsed, 4s);
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["status"], 504);
}

TEST_F(SidecarRelay, ClientHangingUpMidStreamCancelsTheUpstreamRequest) {
  Call call;
  call.url = origin() + "/ok/forever";
  call.on_data = [](const std::string& so_far) {
    return so_far.find("data: tick") == std::string::npos;  // hang up after the first event
  };
  const auto reply = perform(call);
  EXPECT_EQ(reply.code, CURLE_WRITE_ERROR);
  EXPECT_TRUE(upstream_.waitForeverClosed(5000));
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "allow");
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("client closed the connection"),
            std::string::npos);
}

TEST_F(SidecarRelay, RequestsPastTheConcurrencyLimitAre503) {
  Call slow;
  slow.url = origin() + "/ok/slow";
  std::vector<std::future<Reply>> held;
  for (std::size_t i = 0; i < config_.max_concurrent_requests; ++i) {
    held.push_back(std::async(std::launch::async, [this, &slow] { return perform(slow); }));
  }
  const auto deadline = Clock::now() + 5s;
  while (upstream_.targetsSeen().size() < config_.max_concurrent_requests &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(upstream_.targetsSeen().size(), config_.max_concurrent_requests);
  Call extra;
  extra.url = origin() + "/ok/echo";
  const auto refused = perform(extra);
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.bodyJson()["error"].get<std::string>().find("--max-concurrent-requests"),
            std::string::npos);
  for (auto& reply : held) EXPECT_EQ(reply.get().status, 504);
}

TEST_F(SidecarRelay, StopRemovesTheSocketFile) {
  ASSERT_EQ(access(config_.listen_path.c_str(), F_OK), 0);
  server_->stop();
  EXPECT_NE(access(config_.listen_path.c_str(), F_OK), 0);
}

// Keep-alive: a client may send its next request on the same connection once it has the whole
// answer (in a sandbox a Unix-socket connect costs a gVisor round trip). Allowed and denied
// answers both keep the connection; curl reports whether it reused it.
TEST_F(SidecarRelay, OneConnectionCarriesManyRequests) {
  CURL* curl = curl_easy_init();
  std::string body;
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, config_.listen_path.c_str());
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION,
      +[](char* data, std::size_t size, std::size_t count, void* user) {
        static_cast<std::string*>(user)->append(data, size * count);
        return size * count;
      });
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const std::vector<std::pair<std::string, long>> calls = {{origin() + "/ok/echo", 200},
                                                           {origin() + "/not-listed", 403},
                                                           {origin() + "/ok/echo", 200},
                                                           {origin() + "/ok/redirect", 302},
                                                           {origin() + "/ok/echo", 200}};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    body.clear();
    curl_easy_setopt(curl, CURLOPT_URL, calls[i].first.c_str());
    ASSERT_EQ(curl_easy_perform(curl), CURLE_OK) << calls[i].first;
    long status = 0;
    long new_connections = -1;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &new_connections);
    EXPECT_EQ(status, calls[i].second) << calls[i].first << ": " << body;
    EXPECT_EQ(new_connections, i == 0 ? 1 : 0) << "request " << i << " opened a new connection";
  }
  curl_easy_cleanup(curl);
  EXPECT_EQ(auditLines(calls.size()).size(), calls.size());
}

// A client that asks for Connection: close gets it (and a close), as before.
TEST_F(SidecarRelay, ConnectionCloseIsHonoured) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.headers = {"Connection: close"};
  const auto reply = perform(call);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.header("connection"), "close");
}

}  // namespace

// End to end on the host: the sidecar server in-process on a temporary Unix socket, a test
// upstream on 127.0.0.1, and libcurl as the sandboxed client (CURLOPT_UNIX_SOCKET_PATH).
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/audit_log.h"
#include "sidecar/sidecar_server.h"
#include "test_upstream.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class CurlGlobal {
 public:
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};
const CurlGlobal curl_global;

struct Reply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  [[nodiscard]] json bodyJson() const { return json::parse(body); }
  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Call {
  std::string url;             // the URL curl uses; the request goes over the Unix socket
  std::string request_target;  // set: send this target instead (absolute-form)
  std::string method = "GET";
  std::vector<std::string> headers;
  std::string body;
  // Called with everything received so far; return false to hang up.
  std::function<bool(const std::string&)> on_data;
};

struct CurlState {
  Reply reply;
  const Call* call = nullptr;
};

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  state->reply.body.append(data, size * count);
  if (state->call->on_data && !state->call->on_data(state->reply.body)) return 0;
  return size * count;
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  const std::string line(data, size * count);
  const auto colon = line.find(':');
  if (colon != std::string::npos && line.rfind("HTTP/", 0) != 0) {
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

class SidecarRelay : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/sidecar-relay-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    dead_port_ = sidecar_test::unusedPort();
    const std::string origin = "http://127.0.0.1:" + std::to_string(upstream_.port());
    const json entries = json::array({origin + "/ok",
                                      json{{"url", origin + "/restricted"},
                                           {"id", "restricted"},
                                           {"methods", {"initialize", "tools/list", "tools/call"}},
                                           {"tools", {"echo"}}},
                                      "http://127.0.0.1:" + std::to_string(dead_port_) + "/down"});
    config_.listen_path = dir_ + "/mcp.sock";
    config_.policy_file = "(inline)";
    config_.audit_log_path = dir_ + "/audit.log";
    config_.session_id = "test-session";
    config_.max_body_bytes = 4096;
    config_.upstream_connect_timeout_ms = 2000;
    config_.upstream_idle_timeout_ms = 1000;
    config_.idle_timeout_ms = 5000;
    config_.max_concurrent_requests = 4;
    server_ = std::make_unique<sidecar::SidecarServer>(
        config_, policy::loadPolicy(entries), sidecar::AuditLog::open(config_.audit_log_path));
    server_->start();
  }

  void TearDown() override {
    server_.reset();
    std::remove(config_.audit_log_path.c_str());
    rmdir(dir_.c_str());
  }

  [[nodiscard]] std::string origin() const {
    return "http://127.0.0.1:" + std::to_string(upstream_.port());
  }

  Reply perform(const Call& call) {
    CurlState state;
    state.call = &call;
    CURL* curl = curl_easy_init();
    curl_slist* headers = nullptr;
    for (const auto& header : call.headers) headers = curl_slist_append(headers, header.c_str());
    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, config_.listen_path.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, call.url.c_str());
    if (!call.request_target.empty()) {
      curl_easy_setopt(curl, CURLOPT_REQUEST_TARGET, call.request_target.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    if (!call.body.empty()) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(call.body.size()));
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 15'000L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &onBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &onHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &state);
    state.reply.code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &state.reply.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return state.reply;
  }

  // Audit lines so far; waits briefly for `count` of them (the worker writes after answering).
  std::vector<json> auditLines(std::size_t count) {
    std::vector<json> lines;
    const auto deadline = Clock::now() + 5s;
    do {
      lines.clear();
      std::ifstream in(config_.audit_log_path);
      std::string line;
      while (std::getline(in, line)) lines.push_back(json::parse(line));
      if (lines.size() >= count) break;
      std::this_thread::sleep_for(20ms);
    } while (Clock::now() < deadline);
    return lines;
  }

  sidecar_test::TestUpstream upstream_;
  std::uint16_t dead_port_ = 0;
  std::string dir_;
  sidecar::SidecarConfig config_;
  std::unique_ptr<sidecar::SidecarServer> server_;
};

TEST_F(SidecarRelay, AllowedRequestIsRelayedWithoutHopByHopOrProxyHeaders) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "POST";
  call.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  call.headers = {"Content-Type: application/json", "Proxy-Authorization: Basic c2VjcmV0",
                  "Connection: X-Drop-Me", "X-Drop-Me: 1", "Mcp-Session-Id: abc"};
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto echo = reply.bodyJson();
  EXPECT_EQ(echo["method"], "POST");
  EXPECT_EQ(echo["body"], call.body);
  EXPECT_EQ(echo["headers"]["mcp-session-id"], "abc");
  EXPECT_EQ(echo["headers"]["content-type"], "application/json");
  EXPECT_EQ(echo["headers"]["host"], "127.0.0.1:" + std::to_string(upstream_.port()));
  EXPECT_FALSE(echo["headers"].contains("proxy-authorization"));
  EXPECT_FALSE(echo["headers"].contains("x-drop-me"));

  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "allow");
  EXPECT_EQ(lines[0]["session"], "test-session");
  EXPECT_EQ(lines[0]["method"], "POST");
  EXPECT_EQ(lines[0]["url"], origin() + "/ok/echo");
  EXPECT_EQ(lines[0]["status"], 200);
  EXPECT_EQ(lines[0]["bytes"], reply.body.size());
  EXPECT_EQ(lines[0]["rule"], "allowlist[0]");
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("connected to 127.0.0.1"),
            std::string::npos);
}

TEST_F(SidecarRelay, AbsoluteFormTargetIsAccepted) {
  Call call;
  call.url = "http://ignored.invalid/x";
  call.request_target = origin() + "/ok/echo";
  const auto reply = perform(call);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.bodyJson()["target"], "/ok/echo");
}

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

TEST_F(SidecarRelay, UnlistedUrlIsDenied403WithTheReason) {
  Call call;
  call.url = origin() + "/secret";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const auto body = reply.bodyJson();
  EXPECT_NE(body["error"].get<std::string>().find("outside the allowed prefixes"),
            std::string::npos);
  EXPECT_TRUE(upstream_.targetsSeen().empty());
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0]["status"], 403);
  EXPECT_EQ(lines[0]["reason"], body["error"]);
}

TEST_F(SidecarRelay, ToolOutsideTheListIsA403JsonRpcError) {
  Call call;
  call.url = origin() + "/restricted/mcp";
  call.method = "POST";
  call.headers = {"Content-Type: application/json"};
  call.body = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell"}})";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 403);
  const auto body = reply.bodyJson();
  EXPECT_EQ(body["jsonrpc"], "2.0");
  EXPECT_EQ(body["id"], 7);
  EXPECT_EQ(body["error"]["code"], -32602);
  EXPECT_TRUE(upstream_.targetsSeen().empty());

  call.body = R"({"jsonrpc":"2.0","id":8,"method":"resources/list"})";
  const auto method_reply = perform(call);
  EXPECT_EQ(method_reply.status, 403);
  EXPECT_EQ(method_reply.bodyJson()["error"]["code"], -32601);

  call.body = R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}})";
  const auto allowed = perform(call);
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.bodyJson()["id"], 9);

  const auto lines = auditLines(3);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0]["rule"], "restricted");
  EXPECT_EQ(lines[1]["decision"], "deny");
  EXPECT_EQ(lines[2]["decision"], "allow");
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

TEST_F(SidecarRelay, RedirectIsPassedBackNotFollowed) {
  Call call;
  call.url = origin() + "/ok/redirect";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 302);
  EXPECT_EQ(reply.header("location"), origin() + "/secret");
  EXPECT_EQ(reply.body, "moved");
  EXPECT_EQ(upstream_.targetsSeen(), std::vector<std::string>{"/ok/redirect"});
  // Following it by hand goes through the policy again.
  Call follow;
  follow.url = reply.header("location");
  EXPECT_EQ(perform(follow).status, 403);
}

TEST_F(SidecarRelay, OversizedBodyIs413) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "POST";
  call.body = std::string(8192, 'x');
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 413);
  EXPECT_TRUE(upstream_.targetsSeen().empty());
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

}  // namespace

namespace {

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

// notifications/cancelled for a tools/call still waiting behind an earlier call to the same
// session, driven through the real StdioTransport on pipes, the way a client sends it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "fake_backend.h"
#include "mcp/mcp_server.h"
#include "tools/builtin_tools.h"
#include "transport/stdio_transport.h"

namespace {

using jsonrpc::json;
using namespace std::chrono_literals;

constexpr const char* kCancelledWhileWaiting =
    "The call was cancelled while it waited for an earlier call to the same session.";

// An McpServer with a FakeBackend behind a StdioTransport that runs on pipes in its own thread.
class QueuedCancelTest : public ::testing::Test {
 protected:
  QueuedCancelTest() {
    cfg.pool.size = 0;
    tools::registerBuiltinTools(registry, cfg);
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    int to_server[2];
    int from_server[2];
    if (::pipe2(to_server, O_CLOEXEC) != 0 || ::pipe2(from_server, O_CLOEXEC) != 0) std::abort();
    server_in_ = to_server[0];
    client_out_ = to_server[1];
    client_in_ = from_server[0];
    server_out_ = from_server[1];
    transport::StdioTransportOptions options;
    options.drain_timeout = 200ms;  // EOF with a call blocked: close the endpoint soon
    transport_ = std::make_unique<transport::StdioTransport>(
        server_in_, server_out_, std::make_shared<mcp::McpServer>(cfg, *sessions, registry),
        options);
    thread_ = std::thread([this] { transport_->run(); });
  }

  ~QueuedCancelTest() override {
    closeInput();
    thread_.join();
    transport_.reset();
    for (int fd : {server_in_, client_in_, server_out_}) ::close(fd);
  }

  void closeInput() {
    if (client_out_ >= 0) ::close(client_out_);
    client_out_ = -1;
  }

  void send(const json& message) {
    const std::string line = message.dump() + "\n";
    ASSERT_EQ(::write(client_out_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  void callTool(int id, const std::string& tool, json arguments) {
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", tool}, {"arguments", std::move(arguments)}}}});
  }
  void cancel(int id) {
    send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", id}, {"reason", "test"}}}});
  }

  // The next message the server writes, or nullopt after `timeout`.
  std::optional<json> read(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        json message = json::parse(buffer_.substr(0, newline));
        buffer_.erase(0, newline + 1);
        return message;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{client_in_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
        return std::nullopt;
      }
      char chunk[65536];
      const ssize_t got = ::read(client_in_, chunk, sizeof chunk);
      if (got <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }
  // The result of the next message, which must answer `id`; an empty object when there is none,
  // so that the caller's expectations fail readably.
  json readResponse(int id) {
    auto message = read();
    EXPECT_TRUE(message.has_value()) << "no answer to request " << id;
    if (!message) return json::object();
    EXPECT_EQ(message->value("id", json()), id) << message->dump();
    return message->value("result", json::object());
  }

  void initialize() {
    send({{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}}});
    readResponse(1);
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  // A new sandbox session (request id 90): its id.
  std::string newSession() {
    callTool(90, "run_code", {{"code", "1"}});
    return readResponse(90)["structuredContent"].value("session_id", "");
  }
  // Returns once a "wait-for-cancel" execution really blocks in the sandbox.
  bool waitUntilBlockedInSandbox() {
    for (int i = 0; i < 500; ++i) {
      if (backend.waiting_for_cancel->load() == 1) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;

 private:
  int server_in_ = -1, client_out_ = -1, client_in_ = -1, server_out_ = -1;
  std::unique_ptr<transport::StdioTransport> transport_;
  std::thread thread_;
  std::string buffer_;
};

TEST_F(QueuedCancelTest, CancelledCallAnswersAtOnceWhileTheEarlierCallStillRuns) {
  initialize();
  const std::string s1 = newSession();
  callTool(2, "run_code", {{"code", "wait-for-cancel"}, {"session_id", s1}});  // A
  ASSERT_TRUE(waitUntilBlockedInSandbox());
  callTool(3, "run_code", {{"code", "b"}, {"session_id", s1}});  // B, waits behind A
  callTool(4, "run_code", {{"code", "c"}, {"session_id", s1}});  // C, waits behind B
  cancel(3);

  json b = readResponse(3);  // not const: a missing field reads as null
  EXPECT_EQ(b["isError"], true);
  EXPECT_EQ(b["content"][0]["text"], kCancelledWhileWaiting);
  EXPECT_EQ(backend.waiting_for_cancel->load(), 1) << "A is still running";
  EXPECT_FALSE(read(300ms).has_value()) << "C keeps its place behind A";

  cancel(2);
  json a = readResponse(2);
  EXPECT_EQ(a["structuredContent"]["status"], "cancelled") << a.dump();
  json c = readResponse(4);
  EXPECT_EQ(c["isError"], false) << c.dump();
  EXPECT_EQ(c["structuredContent"]["stdout"], "ran: c");

  callTool(5, "get_session_stats", {{"session_id", s1}});
  EXPECT_EQ(readResponse(5)["structuredContent"]["execution_count"], 3)
      << "the sandbox ran the first call, A and C, never B";
}

TEST_F(QueuedCancelTest, ClosingTheConnectionCancelsCallsStillWaitingTheirTurn) {
  initialize();
  const std::string s1 = newSession();
  callTool(2, "run_code", {{"code", "wait-for-cancel"}, {"session_id", s1}});
  ASSERT_TRUE(waitUntilBlockedInSandbox());
  callTool(3, "run_code", {{"code", "b"}, {"session_id", s1}});
  closeInput();  // EOF: after the drain timeout the endpoint is closed

  json answers = json::object();
  for (int i = 0; i < 2; ++i) {
    const auto message = read();
    ASSERT_TRUE(message.has_value());
    answers[(*message)["id"].dump()] = *message;
  }
  EXPECT_EQ(answers["2"]["result"]["structuredContent"]["status"], "cancelled");
  EXPECT_EQ(answers["3"]["result"]["content"][0]["text"], kCancelledWhileWaiting)
      << answers["3"].dump();
}

}  // namespace

#include "transport/stdio_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "fake_endpoint.h"

namespace {

using transport_test::FakeEndpoint;
using transport_test::FakeFactory;
using transport_test::json;
using namespace std::chrono_literals;

class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// A StdioTransport running on pipes in a background thread, with line-level helpers.
class StdioHarness {
 public:
  explicit StdioHarness(transport::StdioTransportOptions options = {})
      : factory_(std::make_shared<FakeFactory>()) {
    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) std::abort();
    server_in_ = std::make_unique<Fd>(in[0]);
    client_out_ = std::make_unique<Fd>(in[1]);
    client_in_ = std::make_unique<Fd>(out[0]);
    server_out_ = std::make_unique<Fd>(out[1]);
    transport_ = std::make_unique<transport::StdioTransport>(server_in_->get(), server_out_->get(),
                                                             factory_, options);
    thread_ = std::thread([this] { transport_->run(); });
  }

  ~StdioHarness() {
    closeInput();
    if (thread_.joinable()) thread_.join();
  }

  void send(const std::string& text) {
    std::string_view rest = text;
    while (!rest.empty()) {
      const ssize_t n = ::write(client_out_->get(), rest.data(), rest.size());
      ASSERT_GT(n, 0);
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void sendLine(const json& message) { send(message.dump() + "\n"); }

  // Next line written by the server, or nullopt after `timeout`.
  std::optional<std::string> readLine(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd pfd{client_in_->get(), POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[65536];
      const ssize_t n = ::read(client_in_->get(), chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  json readJson(std::chrono::milliseconds timeout = 5s) {
    auto line = readLine(timeout);
    if (!line) return json();  // null: the caller's expectations fail readably
    return json::parse(*line);
  }

  void closeInput() { client_out_->reset(); }
  bool joinWithin(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (finished()) {
        thread_.join();
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::shared_ptr<FakeEndpoint> endpoint() {
    for (int i = 0; i < 500 && !factory_->last(); ++i) std::this_thread::sleep_for(2ms);
    return factory_->last();
  }
  FakeFactory& factory() { return *factory_; }

 private:
  bool finished() {
    // run() returns only after closing the endpoint.
    auto ep = factory_->last();
    return ep && ep->closeCount() > 0;
  }

  std::shared_ptr<FakeFactory> factory_;
  std::unique_ptr<Fd> server_in_, client_out_, client_in_, server_out_;
  std::unique_ptr<transport::StdioTransport> transport_;
  std::thread thread_;
  std::string buffer_;
};

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

TEST(Unit, StdioRequestGetsOneResponseLine) {
  StdioHarness harness;
  harness.sendLine(request(1, "echo", {{"text", "multi\nline"}}));
  const auto line = harness.readLine();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->find('\n'), std::string::npos);
  const json response = json::parse(*line);
  EXPECT_EQ(response["id"], 1);
  EXPECT_EQ(response["result"]["text"], "multi\nline");
  EXPECT_EQ(harness.factory().owners(), std::vector<std::string>{"stdio"});
  EXPECT_EQ(harness.endpoint()->lastPeer(), "stdio");
}

TEST(Unit, StdioNotificationWritesNothing) {
  StdioHarness harness;
  harness.sendLine({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  harness.sendLine(request(2, "ping"));
  const json response = harness.readJson();
  EXPECT_EQ(response["id"], 2);  // the first line written answers the ping
  EXPECT_FALSE(harness.readLine(200ms).has_value());
  EXPECT_EQ(harness.endpoint()->events().front(), "notification:notifications/initialized");
}

TEST(Unit, StdioParseErrorIsReportedAndServingContinues) {
  StdioHarness harness;
  harness.send("{not json\n");
  const json error = harness.readJson();
  EXPECT_EQ(error["error"]["code"], -32700);
  EXPECT_TRUE(error["id"].is_null());
  harness.send("\n   \n");  // blank lines are ignored, not errors
  harness.sendLine(request(3, "ping"));
  EXPECT_EQ(harness.readJson()["id"], 3);
}

TEST(Unit, StdioOversizeLineIsRejectedAndServingContinues) {
  transport::StdioTransportOptions options;
  options.max_message_bytes = 1024;
  StdioHarness harness(options);
  harness.sendLine(request(4, "echo", {{"blob", std::string(5000, 'x')}}));
  const json error = harness.readJson();
  EXPECT_EQ(error["error"]["code"], -32600);
  const std::string text = error["error"]["message"];
  EXPECT_NE(text.find("1024"), std::string::npos) << text;
  EXPECT_NE(text.find("stdio.max_message_bytes"), std::string::npos) << text;
  harness.sendLine(request(5, "echo", {{"blob", std::string(500, 'y')}}));
  const json ok = harness.readJson();
  EXPECT_EQ(ok["id"], 5);
  EXPECT_EQ(ok["result"]["blob"].get<std::string>().size(), 500u);
}

TEST(Unit, StdioAcceptsLongLinesUpToTheDefaultLimit) {
  StdioHarness harness;
  const std::string blob(3 * 1024 * 1024, 'z');
  std::thread writer([&] { harness.sendLine(request(6, "echo", {{"blob", blob}})); });
  const json response = harness.readJson(20s);
  writer.join();
  EXPECT_EQ(response["id"], 6);
  EXPECT_EQ(response["result"]["blob"], blob);
}

TEST(Unit, StdioSlowRequestDoesNotBlockPingOrCancel) {
  transport::StdioTransportOptions options;
  options.worker_threads = 1;  // the slow request occupies the only worker
  StdioHarness harness(options);
  harness.sendLine(request(10, "slow"));
  harness.sendLine(request(11, "ping"));
  const json first = harness.readJson(2s);
  EXPECT_EQ(first["id"], 11);  // answered while "slow" still waits
  // A cancellation reaches the endpoint while the slow request runs (here it opens the gate).
  harness.sendLine(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 10}}}});
  const json second = harness.readJson(3s);
  EXPECT_EQ(second["id"], 10);
  EXPECT_EQ(second["result"]["released"], true);
}

TEST(Unit, StdioNotifyWritesNotificationBeforeResponse) {
  StdioHarness harness;
  harness.sendLine(request(12, "notify"));
  const json note = harness.readJson();
  EXPECT_EQ(note["method"], "notifications/progress");
  EXPECT_FALSE(note.contains("id"));
  const json response = harness.readJson();
  EXPECT_EQ(response["id"], 12);
}

TEST(Unit, StdioEofDrainsInFlightThenClosesEndpoint) {
  StdioHarness harness;
  harness.sendLine(request(20, "slow"));
  auto endpoint = harness.endpoint();
  ASSERT_NE(endpoint, nullptr);
  std::this_thread::sleep_for(50ms);  // let the request start
  harness.closeInput();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(endpoint->closeCount(), 0);  // still draining: the request runs
  endpoint->gate.open();
  const json response = harness.readJson();
  EXPECT_EQ(response["id"], 20);
  EXPECT_EQ(response["result"]["released"], true);
  ASSERT_TRUE(harness.joinWithin(5s));
  EXPECT_EQ(endpoint->closeCount(), 1);
  const auto events = endpoint->events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2], "response:slow");
  EXPECT_EQ(events.back(), "close");
}

TEST(Unit, StdioLastLineWithoutNewlineIsHandledAtEof) {
  StdioHarness harness;
  harness.send(request(30, "ping").dump());
  harness.closeInput();
  EXPECT_EQ(harness.readJson()["id"], 30);
  EXPECT_TRUE(harness.joinWithin(5s));
}

}  // namespace

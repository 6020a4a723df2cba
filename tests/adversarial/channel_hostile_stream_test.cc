// A hostile agent stream, seen from the server: endless stderr without a newline, log-forging
// lines (fake levels, ANSI escapes, "error"), and floods of event frames. The server must keep
// its memory and log bounded, never log sandbox text above DEBUG, and never hand on more event
// bytes than an execution may produce.
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/frame.h"
#include "sandbox/agent_channel.h"
#include "sandbox/docker/attach_stream.h"
#include "sandbox/log.h"

namespace {

using nlohmann::json;
using sandbox::AgentChannel;
using sandbox::SocketStream;
using sandbox::UniqueFd;
using sandbox::docker::AttachStream;
using sandbox::docker::UpgradedConnection;
using namespace std::chrono_literals;

// Collects what the "sandbox" logger writes, at every level.
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  struct Line {
    spdlog::level::level_enum level;
    std::string text;
  };
  std::vector<Line> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.push_back({msg.level, std::string(msg.payload.data(), msg.payload.size())});
  }
  void flush_() override {}

 private:
  std::vector<Line> lines_;
};

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<CaptureSink>()), old_level_(sandbox::logger().level()) {
    sandbox::logger().sinks().push_back(sink_);
    sandbox::logger().set_level(spdlog::level::trace);
  }
  ~LogCapture() {
    auto& sinks = sandbox::logger().sinks();
    std::erase(sinks, sink_);
    sandbox::logger().set_level(old_level_);
  }
  std::vector<CaptureSink::Line> lines() { return sink_->lines(); }

 private:
  std::shared_ptr<CaptureSink> sink_;
  spdlog::level::level_enum old_level_;
};

std::pair<UniqueFd, UniqueFd> socketPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error("socketpair");
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// One chunk of Docker's multiplexed stream (stream 1 stdout, 2 stderr).
std::string muxed(char stream, std::string_view payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string out{stream,
                  0,
                  0,
                  0,
                  static_cast<char>(n >> 24U),
                  static_cast<char>(n >> 16U),
                  static_cast<char>(n >> 8U),
                  static_cast<char>(n)};
  out.append(payload);
  return out;
}

TEST(HostileAgentStream, EndlessStderrWithoutNewlineStaysBoundedAndAtDebug) {
  LogCapture capture;
  auto [server_end, agent_end] = socketPair();
  AttachStream stream(UpgradedConnection{std::move(server_end), {}, nullptr}, "0123456789abcdef",
                      2s);
  std::thread writer([fd = std::move(agent_end)]() mutable {
    SocketStream out(std::move(fd), 5s);
    // 64 MiB of stderr without a single newline, then forged log lines, then a frame.
    const std::string chunk(1 << 20, 'A');
    for (int i = 0; i < 64; ++i) out.write(muxed(2, chunk));
    out.write(muxed(2, "\n[error] sandbox-mcp: FATAL: forged \x1b[31mred\x1b[0m line\rcr\n"));
    for (int i = 0; i < 500; ++i)
      out.write(muxed(2, "sandbox-agent: error flood " + std::to_string(i) + "\n"));
    out.write(muxed(1, "frame-bytes"));
    out.shutdown();
  });
  std::string out;
  while (stream.read(out) > 0) {
  }
  writer.join();
  EXPECT_EQ(out, "frame-bytes");

  std::size_t sandbox_lines = 0;
  for (const auto& line : capture.lines()) {
    if (line.text.find("stderr (sandbox text)") == std::string::npos) continue;
    ++sandbox_lines;
    EXPECT_EQ(line.level, spdlog::level::debug) << line.text.substr(0, 200);
    EXPECT_LE(line.text.size(), AttachStream::kMaxStderrLineBytes * 4 + 200);
    EXPECT_EQ(line.text.find_first_of("\n\r\x1b"), std::string::npos) << line.text.substr(0, 200);
  }
  EXPECT_GE(sandbox_lines, 2U) << "the cut line and the forged line are logged (escaped)";
  EXPECT_LE(sandbox_lines, static_cast<std::size_t>(AttachStream::kStderrLinesPerWindow));
  EXPECT_GT(stream.droppedStderrLines(), 400U) << "the flood is counted, not logged";
  EXPECT_LE(stream.stderrTail().size(), AttachStream::kStderrTailBytes * 4 + 16);
}

// Floods one call with `count` events made by `make_event` and returns the "data" bytes the
// call's handler received.
std::size_t floodOneCall(const std::function<json(const json& id)>& make_event, int count,
                         std::size_t cap) {
  auto [server_end, agent_end] = socketPair();
  auto channel =
      AgentChannel::start(std::make_unique<SocketStream>(std::move(server_end), 5s), "flood");
  std::atomic<std::size_t> handed_on{0};
  auto call = std::async(std::launch::async, [&] {
    AgentChannel::CallOptions options;
    options.max_event_bytes = cap;
    options.on_event = [&](const json& event) {
      handed_on += event.value("data", std::string()).size();
    };
    return channel->call({{"op", "exec"}}, 30s, options);
  });
  SocketStream agent(std::move(agent_end), 5s);
  frame::Decoder decoder;
  std::optional<std::string> request;
  while (!(request = decoder.next())) {
    std::string chunk;
    if (agent.read(chunk) == 0) throw std::runtime_error("the channel closed");
    decoder.feed(chunk);
  }
  const auto id = json::parse(*request)["id"];
  for (int i = 0; i < count; ++i) agent.write(frame::encode(make_event(id).dump()));
  agent.write(frame::encode(json{{"id", id}, {"ok", true}, {"status", "success"}}.dump()));
  const json reply = call.get();
  EXPECT_EQ(reply["status"], "success");
  EXPECT_TRUE(channel->alive()) << "a flood is dropped, the channel stays usable";
  return handed_on.load();
}

TEST(HostileAgentStream, EventFloodIsCappedPerCall) {
  LogCapture capture;
  constexpr std::size_t kCap = 256 * 1024;
  const std::string data(64 * 1024, 'x');
  const std::size_t handed_on = floodOneCall(  // 12.5 MiB of events for a call allowed 256 KiB
      [&](const json& id) {
        return json{{"id", id}, {"event", "output"}, {"stream", "stdout"}, {"data", data}};
      },
      200, kCap);
  EXPECT_LE(handed_on, kCap);
  EXPECT_GT(handed_on, 0U);
}

TEST(HostileAgentStream, PaddedEventsCountByTheirFrameSize) {
  LogCapture capture;
  constexpr std::size_t kCap = 256 * 1024;
  const std::string padding(1024 * 1024, 'p');
  const std::size_t handed_on = floodOneCall(  // one byte of text, 1 MiB of padding each
      [&](const json& id) {
        return json{{"id", id}, {"event", "output"}, {"data", "d"}, {"pad", padding}};
      },
      10, kCap);
  EXPECT_EQ(handed_on, 0U) << "each padded event alone exceeds the cap";
}

}  // namespace

// Test helper: the agent's end of a socketpair whose other end is a real AgentChannel. Reads the
// server's frames (JSON and data frames) and lets a test answer them, frame by frame.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/frame.h"
#include "sandbox/agent_channel.h"

namespace sandbox_test {

class FakeAgent {
 public:
  explicit FakeAgent(sandbox::UniqueFd fd) : stream_(std::move(fd)) {}

  frame::Frame nextFrame() {
    for (;;) {
      if (auto frame = decoder_.nextFrame()) return std::move(*frame);
      std::string chunk;
      if (stream_.read(chunk) == 0) throw std::runtime_error("server closed the stream");
      decoder_.feed(chunk);
    }
  }
  nlohmann::json nextRequest() {
    const frame::Frame frame = nextFrame();
    if (frame.kind != frame::FrameKind::kJson) throw std::runtime_error("a data frame came");
    return nlohmann::json::parse(frame.payload);
  }
  void send(const nlohmann::json& message) { stream_.write(frame::encode(message.dump())); }
  void sendData(const std::string& bytes) {
    stream_.write(frame::encodeHeader(bytes.size(), frame::FrameKind::kData) + bytes);
  }
  void sendRaw(const std::string& bytes) { stream_.write(bytes); }
  void close() { stream_.shutdown(); }

 private:
  sandbox::SocketStream stream_;
  frame::Decoder decoder_;
};

struct ChannelPair {
  std::shared_ptr<sandbox::AgentChannel> channel;
  std::unique_ptr<FakeAgent> agent;
};

// A channel (2 s write timeout) connected to a FakeAgent.
inline ChannelPair makeChannelPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error("socketpair");
  }
  using namespace std::chrono_literals;
  return {sandbox::AgentChannel::start(
              std::make_unique<sandbox::SocketStream>(sandbox::UniqueFd(fds[0]), 2s), "test"),
          std::make_unique<FakeAgent>(sandbox::UniqueFd(fds[1]))};
}

}  // namespace sandbox_test

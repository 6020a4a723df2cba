// The "channel" op against the real sandbox-agent binary: asked on stdin, the agent connects to a
// Unix socket, presents the token, and from then on reads requests from and writes frames to that
// socket only; the socket's end stops it like stdin's end does.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "agent_client.h"
#include "common/unique_fd.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::TempDir;
using common::UniqueFd;
using namespace std::chrono_literals;

// The server's side: a listening socket and the one connection the agent makes to it.
class FakeServerSocket {
 public:
  explicit FakeServerSocket(const std::filesystem::path& path) : path_(path.string()) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_.get(), 4) != 0) {
      throw std::runtime_error("cannot listen on " + path_);
    }
  }
  [[nodiscard]] const std::string& path() const { return path_; }

  // Accepts the agent's connection (false when none comes in time).
  bool accept(std::chrono::milliseconds timeout = 5s) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    connection_.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    return connection_.valid();
  }
  void send(const json& message) {
    const std::string bytes = frame::encode(message.dump());
    ASSERT_EQ(::send(connection_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void sendRaw(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::send(connection_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      done += static_cast<std::size_t>(n);
    }
  }
  // The next frame of either kind, or nullopt on timeout or end of stream.
  std::optional<frame::Frame> readFrame(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto next = decoder_.nextFrame()) return next;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{connection_.get(), POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) {
        return std::nullopt;
      }
      char buffer[65536];
      const ssize_t n = ::recv(connection_.get(), buffer, sizeof buffer, 0);
      if (n <= 0) return std::nullopt;
      decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }
  json readJson() {
    auto next = readFrame();
    if (!next || next->kind != frame::FrameKind::kJson) return nullptr;
    return json::parse(next->payload);
  }
  void closeConnection() { connection_.reset(); }

 private:
  std::string path_;
  UniqueFd listener_;
  UniqueFd connection_;
  frame::Decoder decoder_;
};

// Asks the agent to switch and checks that it did: ok on stdout, the token first on the socket.
void switchToSocket(AgentClient& agent, FakeServerSocket& server) {
  const json reply =
      agent.request({{"id", 1}, {"op", "channel"}, {"path", server.path()}, {"token", "t0k3n"}});
  ASSERT_EQ(reply["ok"], true) << reply;
  ASSERT_TRUE(server.accept());
  EXPECT_EQ(server.readJson(), json({{"channel_token", "t0k3n"}}));
}

TEST(AgentChannelSocket, FramesMoveToTheSocketAndLeaveStdio) {
  TempDir dir;
  AgentClient agent(dir.path());
  FakeServerSocket server(dir.path() / "agent.sock");
  switchToSocket(agent, server);

  server.send({{"id", 2}, {"op", "exec"}, {"kind", "python"}, {"code", "6 * 7"}});
  const json result = server.readJson();
  EXPECT_EQ(result["id"], 2);
  EXPECT_EQ(result["result"], "42") << result;
  // Nothing more comes on stdout, and a request there is not served any longer.
  agent.send({{"id", 3}, {"op", "hello"}});
  EXPECT_EQ(agent.readFrame(300ms), std::nullopt);
}

TEST(AgentChannelSocket, FilesTravelAsDataFramesOverTheSocket) {
  TempDir dir;
  AgentClient agent(dir.path());
  FakeServerSocket server(dir.path() / "agent.sock");
  switchToSocket(agent, server);

  std::string bytes(3 * 1024 * 1024 + 7, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
  server.send({{"id", 2}, {"op", "write_file"}, {"path", "big.bin"}, {"data_frame", true}});
  server.sendRaw(frame::encodeHeader(bytes.size(), frame::FrameKind::kData) + bytes);
  const json written = server.readJson();
  ASSERT_EQ(written["ok"], true) << written;
  EXPECT_EQ(written["bytes"], bytes.size());

  server.send({{"id", 3},
               {"op", "read_file"},
               {"path", "big.bin"},
               {"max_bytes", bytes.size()},
               {"data_frame", true}});
  const json read = server.readJson();
  ASSERT_EQ(read["ok"], true) << read;
  const auto data = server.readFrame();
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->kind, frame::FrameKind::kData);
  EXPECT_TRUE(data->payload == bytes);
}

// Before a checkpoint: the agent answers "suspend" on the socket, closes it without stopping,
// serves requests on stdio again, and a later "channel" moves them to a new socket.
TEST(AgentChannelSocket, SuspendReturnsToStdioAndALaterChannelMovesOnAgain) {
  TempDir dir;
  AgentClient agent(dir.path());
  {
    FakeServerSocket server(dir.path() / "agent.sock");
    switchToSocket(agent, server);
    server.send({{"id", 2}, {"op", "exec"}, {"kind", "python"}, {"code", "kept = 7"}});
    ASSERT_EQ(server.readJson()["ok"], true);
    server.send({{"id", 3}, {"op", "suspend"}});
    const json suspended = server.readJson();
    EXPECT_EQ(suspended["id"], 3);
    EXPECT_EQ(suspended["ok"], true) << suspended;
    EXPECT_EQ(server.readFrame(2s), std::nullopt) << "the agent closes the socket";
  }
  EXPECT_EQ(agent.waitExit(300ms), std::nullopt) << "a suspended agent keeps running";
  const json hello = agent.request({{"id", 4}, {"op", "hello"}});
  EXPECT_EQ(hello["ok"], true) << "requests are served on stdio again: " << hello;

  FakeServerSocket next(dir.path() / "agent2.sock");
  const json reply =
      agent.request({{"id", 5}, {"op", "channel"}, {"path", next.path()}, {"token", "n3w"}});
  ASSERT_EQ(reply["ok"], true) << reply;
  ASSERT_TRUE(next.accept());
  EXPECT_EQ(next.readJson(), json({{"channel_token", "n3w"}}));
  next.send({{"id", 6}, {"op", "exec"}, {"kind", "python"}, {"code", "kept * 6"}});
  const json result = next.readJson();
  EXPECT_EQ(result["result"], "42") << "the interpreter's state went on: " << result;
}

TEST(AgentChannelSocket, SuspendIsRefusedOnStdioAndDuringAnExecution) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json on_stdio = agent.request({{"id", 1}, {"op", "suspend"}});
  EXPECT_EQ(on_stdio["ok"], false);
  FakeServerSocket server(dir.path() / "agent.sock");
  const json reply =
      agent.request({{"id", 2}, {"op", "channel"}, {"path", server.path()}, {"token", "t"}});
  ASSERT_EQ(reply["ok"], true) << reply;
  ASSERT_TRUE(server.accept());
  (void)server.readJson();  // the token
  server.send({{"id", 3},
               {"op", "exec"},
               {"kind", "python"},
               {"code", "import time\ntime.sleep(1)"},
               {"timeout_ms", 10000}});
  server.send({{"id", 4}, {"op", "suspend"}});
  const json refused = server.readJson();
  EXPECT_EQ(refused["id"], 4);
  EXPECT_EQ(refused["ok"], false);
  EXPECT_NE(refused["error"].get<std::string>().find("execution is running"), std::string::npos);
  EXPECT_EQ(server.readJson()["id"], 3) << "the execution finishes on the socket";
}

TEST(AgentChannelSocket, TheSocketsEndStopsTheAgent) {
  TempDir dir;
  AgentClient agent(dir.path());
  FakeServerSocket server(dir.path() / "agent.sock");
  switchToSocket(agent, server);
  server.closeConnection();  // stdin stays open: the socket alone must be enough
  const auto status = agent.waitExit(5s);
  ASSERT_TRUE(status.has_value()) << "the agent kept running after its channel socket closed";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
}

TEST(AgentChannelSocket, StdinsEndStillStopsTheAgent) {
  TempDir dir;
  AgentClient agent(dir.path());
  FakeServerSocket server(dir.path() / "agent.sock");
  switchToSocket(agent, server);
  agent.closeInput();
  EXPECT_TRUE(agent.waitExit(5s).has_value());
}

TEST(AgentChannelSocket, AnUnreachableSocketIsRefusedAndStdioServesOn) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json refused = agent.request({{"id", 1},
                                      {"op", "channel"},
                                      {"path", (dir.path() / "missing.sock").string()},
                                      {"token", "x"}});
  EXPECT_EQ(refused["ok"], false);
  EXPECT_NE(refused["error"].get<std::string>().find("connect"), std::string::npos) << refused;
  EXPECT_EQ(agent.exec("shell", "echo still here")["stdout"], "still here\n");
}

TEST(AgentChannelSocket, MalformedAndRepeatedRequestsAreRefused) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json no_token = agent.request({{"id", 1}, {"op", "channel"}, {"path", "/x"}});
  EXPECT_EQ(no_token["ok"], false);
  EXPECT_NE(no_token["error"].get<std::string>().find("token"), std::string::npos) << no_token;
  const json long_path =
      agent.request({{"id", 2}, {"op", "channel"}, {"path", std::string(200, 'a')}, {"token", ""}});
  EXPECT_EQ(long_path["ok"], false) << long_path;

  FakeServerSocket server(dir.path() / "agent.sock");
  switchToSocket(agent, server);
  server.send({{"id", 3}, {"op", "channel"}, {"path", server.path()}, {"token", "again"}});
  const json again = server.readJson();
  EXPECT_EQ(again["ok"], false);
  EXPECT_NE(again["error"].get<std::string>().find("already"), std::string::npos) << again;
}

}  // namespace

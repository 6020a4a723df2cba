// ChannelListener: the server's end of an agent's socket channel accepts one connection, only with
// the right token, and leaves nothing to connect to afterwards.
#include "sandbox/docker/channel_listener.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "common/frame.h"
#include "common/random_id.h"
#include "sandbox/backend.h"

namespace {

using common::UniqueFd;
using sandbox::SandboxError;
using sandbox::docker::ChannelListener;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ChannelListenerTest : public ::testing::Test {
 protected:
  void TearDown() override { fs::remove_all(root_); }

  [[nodiscard]] std::string socketPath(const ChannelListener& listener) const {
    return listener.hostDir() + "/" + ChannelListener::kSocketName;
  }

  const std::string root_ = (fs::temp_directory_path() / ("cl-" + common::randomHex(6))).string();
};

// Connects to `path`; an invalid fd when refused.
UniqueFd connectTo(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return UniqueFd();
  }
  return fd;
}

void sendAll(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

std::string tokenFrame(const std::string& token) {
  return frame::encode(R"({"channel_token":")" + token + R"("})");
}

TEST_F(ChannelListenerTest, AcceptsTheConnectionThatPresentsItsTokenAndNoOtherAfterIt) {
  ChannelListener listener(root_, "s1");
  EXPECT_EQ(ChannelListener::containerSocketPath(), "/.sandbox/channel/agent.sock");
  EXPECT_EQ(listener.token().size(), 32U);
  EXPECT_EQ(fs::status(socketPath(listener)).permissions() & fs::perms::others_write,
            fs::perms::others_write);  // the agent connects as the code user

  const UniqueFd agent = connectTo(socketPath(listener));
  ASSERT_TRUE(agent.valid());
  sendAll(agent.get(), tokenFrame(listener.token()) + "after");
  const UniqueFd server = listener.accept(2s);
  ASSERT_TRUE(server.valid());
  // Bytes after the token frame are the channel's, not eaten by the handshake.
  char buffer[16] = {};
  ASSERT_EQ(::recv(server.get(), buffer, sizeof buffer, 0), 5);
  EXPECT_EQ(std::string(buffer, 5), "after");

  EXPECT_FALSE(fs::exists(socketPath(listener)));
  EXPECT_FALSE(connectTo(socketPath(listener)).valid());
  EXPECT_TRUE(fs::exists(listener.hostDir()));
}

TEST_F(ChannelListenerTest, DropsPeersWithoutTheTokenAndAcceptsTheAgentAfterThem) {
  ChannelListener listener(root_, "crowded");
  // Sandbox code may connect first (after a restore it runs while the agent reconnects).
  const UniqueFd wrong = connectTo(socketPath(listener));
  sendAll(wrong.get(), tokenFrame(std::string(listener.token().size(), '0')));
  const UniqueFd garbage = connectTo(socketPath(listener));
  sendAll(garbage.get(), "\x7f\xff\xff\xff" + std::string(64, 'x'));  // announces 2 GiB
  const UniqueFd silent = connectTo(socketPath(listener));            // says nothing
  const UniqueFd agent = connectTo(socketPath(listener));
  sendAll(agent.get(), tokenFrame(listener.token()));
  const UniqueFd server = listener.accept(10s);
  ASSERT_TRUE(server.valid());
  sendAll(server.get(), "hi");
  char buffer[4] = {};
  ASSERT_EQ(::recv(agent.get(), buffer, sizeof buffer, 0), 2) << "not the agent's connection";
  EXPECT_FALSE(connectTo(socketPath(listener)).valid()) << "nothing connects after the agent";
}

TEST_F(ChannelListenerTest, GivesUpWhenOnlyPeersWithoutTheTokenCome) {
  ChannelListener listener(root_, "wrong");
  const UniqueFd peer = connectTo(socketPath(listener));
  sendAll(peer.get(), tokenFrame(std::string(listener.token().size(), '0')));
  try {
    (void)listener.accept(500ms);
    FAIL() << "a wrong token was accepted";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("with its token"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(connectTo(socketPath(listener)).valid()) << "a second try must not be possible";
}

TEST_F(ChannelListenerTest, RearmListensAgainWithANewToken) {
  ChannelListener listener(root_, "again");
  const std::string first_token = listener.token();
  {
    const UniqueFd agent = connectTo(socketPath(listener));
    sendAll(agent.get(), tokenFrame(first_token));
    ASSERT_TRUE(listener.accept(2s).valid());
  }
  EXPECT_FALSE(fs::exists(socketPath(listener)));
  listener.rearm();
  EXPECT_NE(listener.token(), first_token);
  const UniqueFd stale = connectTo(socketPath(listener));
  sendAll(stale.get(), tokenFrame(first_token));  // the old token opens nothing
  const UniqueFd agent = connectTo(socketPath(listener));
  sendAll(agent.get(), tokenFrame(listener.token()));
  const UniqueFd server = listener.accept(5s);
  ASSERT_TRUE(server.valid());
  sendAll(server.get(), "ok");
  char buffer[4] = {};
  EXPECT_EQ(::recv(agent.get(), buffer, sizeof buffer, 0), 2);
}

TEST_F(ChannelListenerTest, GivesUpWhenNobodyConnects) {
  ChannelListener listener(root_, "alone");
  try {
    (void)listener.accept(200ms);
    FAIL() << "accept returned without a connection";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("did not connect"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(socketPath(listener)));
}

TEST_F(ChannelListenerTest, RemovesItsDirectoryAndRefusesADuplicateName) {
  std::string dir;
  {
    ChannelListener listener(root_, "gone");
    dir = listener.hostDir();
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_THROW(ChannelListener(root_, "gone"), SandboxError);
  }
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(ChannelListenerTest, RefusesAPathTooLongForAUnixSocket) {
  EXPECT_THROW(ChannelListener(root_, std::string(120, 'n')), SandboxError);
}

}  // namespace

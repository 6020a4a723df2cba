// The agent's socket channel against the real dockerd and runsc: frames move to a host Unix socket
// bind-mounted into the sandbox, sandbox code cannot reach it, nothing of it outlives the sandbox,
// and a runtime without host sockets keeps the attached stdio.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/random_id.h"
#include "docker_test_support.h"

namespace {

using namespace docker_test;
namespace fs = std::filesystem;

class SocketChannel : public ::testing::Test {
 protected:
  SocketChannel() { backend_.useChannelSockets(root_); }
  ~SocketChannel() override { fs::remove_all(root_); }

  // The sandbox as it runs in production: the agent splits from the code user.
  std::unique_ptr<Sandbox> create(const std::string& runtime = "runsc") {
    SandboxSpec production = spec(runtime);
    production.user = "65534:65534";
    return backend_.create(production);
  }

  const std::string root_ = "/tmp/sandbox-mcp-channel-" + common::randomHex(6);
  DockerBackend backend_{options()};
};

std::string patterned(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 7919) % 251);
  return bytes;
}

TEST_F(SocketChannel, CarriesExecutionsAndLargeFiles) {
  auto sandbox = create();
  ASSERT_TRUE(dynamic_cast<DockerSandbox&>(*sandbox).usesChannelSocket());
  EXPECT_EQ(python(*sandbox, "x = 20\nx + 22").result, "42");

  const std::string bytes = patterned(10 * 1024 * 1024 + 3);
  auto start = Clock::now();
  EXPECT_EQ(sandbox->writeFile("big.bin", bytes, 0644), bytes.size());
  const double write_ms = msSince(start);
  start = Clock::now();
  const std::string back = sandbox->readFile("big.bin", bytes.size());
  const double read_ms = msSince(start);
  EXPECT_TRUE(back == bytes) << "10 MiB did not come back byte for byte";
  std::printf("[ metric ] 10 MiB over the channel socket: write %.1f ms, read %.1f ms\n", write_ms,
              read_ms);
  EXPECT_EQ(python(*sandbox, "len(open('big.bin','rb').read())").result,
            std::to_string(bytes.size()));
}

TEST_F(SocketChannel, SandboxCodeCannotReachTheChannel) {
  auto sandbox = create();
  // The socket is gone once the agent's connection was accepted; the mount is read-only.
  const auto probe = python(*sandbox, R"py(
import os, socket
print(sorted(os.listdir('/.sandbox/channel')))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('/.sandbox/channel/agent.sock')
    print('connected')
except OSError as e:
    print('refused', e.errno)
try:
    socket.socket(socket.AF_UNIX).bind('/.sandbox/channel/agent.sock')
    print('bound')
except OSError as e:
    print('bind refused', e.errno)
try:
    open('/.sandbox/channel/x', 'w')
    print('written')
except OSError as e:
    print('write refused', e.errno)
)py");
  ASSERT_EQ(probe.status, ExecStatus::kSuccess) << probe.stderr_text;
  EXPECT_EQ(probe.stdout_text.substr(0, 3), "[]\n") << probe.stdout_text;
  EXPECT_NE(probe.stdout_text.find("refused"), std::string::npos) << probe.stdout_text;
  EXPECT_EQ(probe.stdout_text.find("connected"), std::string::npos) << probe.stdout_text;
  EXPECT_EQ(probe.stdout_text.find("bound"), std::string::npos) << probe.stdout_text;
  EXPECT_EQ(probe.stdout_text.find("written"), std::string::npos) << probe.stdout_text;
  // Whatever code tried, the agent still answers on its channel.
  EXPECT_EQ(run(*sandbox, ExecKind::kShell, "echo ok").stdout_text, "ok\n");
}

TEST_F(SocketChannel, NothingOutlivesTheSandbox) {
  auto sandbox = create();
  const std::string id = sandbox->id();
  ASSERT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 1);
  sandbox.reset();
  EXPECT_FALSE(inspect(backend_.engine(), id));
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 0);

  // As if the server crashed: both connections close and nobody calls DELETE.
  auto orphan = create();
  const std::string orphan_id = orphan->id();
  dynamic_cast<DockerSandbox&>(*orphan).dropChannelForTesting();
  EXPECT_TRUE(goneWithin(backend_.engine(), orphan_id, 10s))
      << "the agent must exit when its channel closes";
}

TEST_F(SocketChannel, ARuntimeWithoutHostSocketsKeepsTheAttachedStdio) {
  // runsc-build is gVisor without --host-uds: the agent cannot connect, and says so.
  auto sandbox = create("runsc-build");
  EXPECT_FALSE(dynamic_cast<DockerSandbox&>(*sandbox).usesChannelSocket());
  EXPECT_EQ(python(*sandbox, "6 * 7").result, "42");
  const std::string bytes = patterned(std::size_t{1024} * 1024);
  EXPECT_EQ(sandbox->writeFile("f.bin", bytes, 0644), bytes.size());
  EXPECT_TRUE(sandbox->readFile("f.bin", bytes.size()) == bytes);
}

}  // namespace

// sandbox-agent --egress-proxy, driven through the real binary: code in the sandbox reaches the
// gateway's Unix socket through 127.0.0.1:PORT, executions that are stopped leave the forwarder
// alone, the agent's exit takes it along, and a bad value is refused at start.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "agent_client.h"
#include "egress_test_support.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using namespace egress_test;

// The agent's child named egress-forward (its process name), or -1.
pid_t forwarderOf(pid_t agent) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (const dirent* entry = ::readdir(proc)) {
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (line.substr(open + 1, close - open - 1) == "egress-forward" &&
        std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == agent) {
      found = static_cast<pid_t>(std::stoi(entry->d_name));
    }
  }
  ::closedir(proc);
  return found;
}

TEST(AgentEgressProxy, CodeReachesTheGatewayThroughTheLoopbackPort) {
  agent_test::TempDir dir;
  const std::string socket = (dir.path() / "egress.sock").string();
  const UniqueFd gateway = unixListener(socket);
  const std::uint16_t port = freeLoopbackPort();
  AgentClient agent(dir.path(), {}, {"--egress-proxy", std::to_string(port) + "=" + socket});
  ASSERT_EQ(agent.request({{"id", 1}, {"op", "hello"}})["ok"], true);

  std::string request;
  std::thread gateway_side([&] {
    const UniqueFd upstream = acceptOne(gateway.get());
    request = readToEof(upstream.get());
    sendAll(upstream.get(), "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
  });
  const json reply = agent.exec("python",
                                "import socket\n"
                                "s = socket.create_connection(('127.0.0.1', " +
                                    std::to_string(port) +
                                    "))\n"
                                    "s.sendall(b'GET http://example.com/ HTTP/1.1\\r\\n\\r\\n')\n"
                                    "s.shutdown(socket.SHUT_WR)\n"
                                    "answer = b''\n"
                                    "while chunk := s.recv(4096): answer += chunk\n"
                                    "answer.decode()");
  gateway_side.join();
  EXPECT_EQ(request, "GET http://example.com/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(reply["status"], "success") << reply.dump();
  EXPECT_EQ(reply["result"], "'HTTP/1.1 200 OK\\r\\nContent-Length: 5\\r\\n\\r\\nhello'")
      << reply.dump();
}

TEST(AgentEgressProxy, StoppedExecutionsLeaveTheForwarderAndTheAgentsExitEndsIt) {
  agent_test::TempDir dir;
  const std::string socket = (dir.path() / "egress.sock").string();
  const std::uint16_t port = freeLoopbackPort();
  AgentClient agent(dir.path(), {}, {"--egress-proxy", std::to_string(port) + "=" + socket});
  ASSERT_EQ(agent.request({{"id", 1}, {"op", "hello"}})["ok"], true);
  const pid_t forwarder = forwarderOf(agent.pid());
  ASSERT_GT(forwarder, 0) << "no egress-forward child of the agent";

  EXPECT_EQ(agent.exec("shell", "sleep 30", /*timeout_ms=*/300)["status"], "timeout");
  EXPECT_EQ(forwarderOf(agent.pid()), forwarder) << "the forwarder was killed or restarted";
  // With no gateway listening it answers 502: it is alive and serving.
  const UniqueFd client = connectTcp(port);
  EXPECT_TRUE(readToEof(client.get()).starts_with("HTTP/1.1 502 Bad Gateway\r\n"));

  agent.closeInput();
  ASSERT_TRUE(agent.waitExit().has_value());
  EXPECT_TRUE(agent_test::waitUntilGone(forwarder));
}

TEST(AgentEgressProxy, ABadValueIsAUsageError) {
  agent_test::TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--egress-proxy", "3128"},
        std::vector<std::string>{"--egress-proxy", "70000=/run/mcp/egress.sock"},
        std::vector<std::string>{"--egress-proxy", "3128=run/mcp/egress.sock"},
        std::vector<std::string>{"--egress-proxy"}}) {
    AgentClient agent(dir.path(), {}, args);
    const auto status = agent.waitExit();
    ASSERT_TRUE(status.has_value()) << args.back();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << args.back();
  }
}

}  // namespace

// The agent's life through the real sandbox-agent binary over pipes: bad requests answered or
// skipped, an oversized frame, end of input and SIGTERM stopping the agent and every child.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

#include "agent_client.h"
#include "protocol_test_support.h"

namespace {

using agent_test::AgentClient;
using agent_test::contains;
using agent_test::json;
using agent_test::TempDir;
using namespace std::chrono_literals;

TEST(Unit, BadRequestsAreAnsweredOrSkipped) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json unknown = agent.request({{"id", 110}, {"op", "teleport"}});
  EXPECT_EQ(unknown["ok"], false);
  EXPECT_TRUE(contains(unknown["error"], "teleport")) << unknown;
  const json bad_exec =
      agent.request({{"id", 111}, {"op", "exec"}, {"kind", "ruby"}, {"code", ""}});
  EXPECT_EQ(bad_exec["ok"], false);
  EXPECT_TRUE(contains(bad_exec["error"], "kind")) << bad_exec;
  agent.sendRaw(frame::encode("{not json"));
  agent.send({{"op", "hello"}});  // no id: nothing to reply to
  EXPECT_EQ(agent.request({{"id", 112}, {"op", "hello"}})["ok"], true);
}

TEST(Unit, OversizedFrameMakesTheAgentExit) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.sendRaw(std::string("\x7F\xFF\xFF\xFF", 4));
  const auto status = agent.waitExit(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_NE(WEXITSTATUS(*status), 0);
}

TEST(Unit, EndOfInputStopsTheAgentAndEveryChild) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json shell = agent.exec("shell", "sleep 100 > /dev/null 2>&1 & echo $!");
  const pid_t background = std::stoi(shell["stdout"].get<std::string>());
  const json python =
      agent.exec("python", "import subprocess\nsubprocess.Popen(['sleep', '100']).pid");
  const pid_t python_child = std::stoi(python["result"].get<std::string>());
  const pid_t agent_pid = agent.pid();
  ASSERT_FALSE(agent_test::processGone(background));
  ASSERT_FALSE(agent_test::processGone(python_child));

  agent.closeInput();
  const auto status = agent.waitExit(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_TRUE(agent_test::waitUntilGone(background));
  EXPECT_TRUE(agent_test::waitUntilGone(python_child));
  EXPECT_TRUE(agent_test::processGone(agent_pid));
}

TEST(Unit, SigtermStopsTheAgentCleanly) {
  TempDir dir;
  AgentClient agent(dir.path());
  EXPECT_EQ(agent.request({{"id", 1}, {"op", "hello"}})["ok"], true);
  ::kill(agent.pid(), SIGTERM);
  const auto status = agent.waitExit(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

}  // namespace

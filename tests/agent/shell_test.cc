// Shell commands through the real sandbox-agent binary: a warm (prestarted) shell must behave as
// `sh -c COMMAND` does, and the agent must fall back to a cold one whenever the warm one cannot
// take the command.
#include <gtest/gtest.h>

#include <string>

#include "agent_client.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::TempDir;

std::string text(const json& reply, const char* field) { return reply[field].get<std::string>(); }

TEST(Shell, AWarmShellRunsTheCommandAsShDashC) {
  TempDir dir;
  AgentClient agent(dir.path());
  for (int round = 0; round < 3; ++round) {  // the first may be cold; later ones are warm
    const json reply =
        agent.exec("shell", "echo \"$0:$#\"; (true <&3) 2>/dev/null && echo open || echo closed");
    EXPECT_EQ(reply["status"], "success") << reply;
    // $0 and no arguments, as with sh -c; the command pipe (fd 3) is not left open.
    EXPECT_EQ(text(reply, "stdout"), "sh:0\nclosed\n") << "round " << round;
  }
  const json multi = agent.exec("shell", "x=1\nif [ $x = 1 ]; then\n  echo one\nfi\nexit 4");
  EXPECT_EQ(multi["exit_code"], 4) << multi;
  EXPECT_EQ(text(multi, "stdout"), "one\n");
  const json heredoc = agent.exec("shell", "cat <<EOF\nline 1\n$((2 + 3))\nEOF");
  EXPECT_EQ(text(heredoc, "stdout"), "line 1\n5\n") << heredoc;
  const json syntax = agent.exec("shell", "if true; then");
  EXPECT_EQ(syntax["exit_code"], 2) << syntax;
  EXPECT_NE(text(syntax, "stderr").find("Syntax error"), std::string::npos) << syntax;
  const json quotes = agent.exec("shell", "printf '%s|' 'a b' \"c'd\" 'e\"f'; echo");
  EXPECT_EQ(text(quotes, "stdout"), "a b|c'd|e\"f|\n") << quotes;
  // The command reads an empty stdin, not its own script.
  EXPECT_EQ(text(agent.exec("shell", "cat; echo after"), "stdout"), "after\n");
}

TEST(Shell, AKilledWarmShellIsReplacedByACold) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("shell", "true");  // the agent is idle afterwards: a warm shell waits
  // Code can kill the waiting shell (it runs as the same user); the next command still runs.
  const json killer = agent.exec("python",
                                 "import os, signal, subprocess\n"
                                 "out = subprocess.run(['ps', '-o', 'pid,args', '--ppid', "
                                 "str(os.getppid())], capture_output=True, text=True).stdout\n"
                                 "pids = [int(l.split()[0]) for l in out.splitlines() "
                                 "if '/proc/self/fd/3' in l]\n"
                                 "for p in pids: os.kill(p, signal.SIGKILL)\n"
                                 "import time\n"
                                 "for p in pids:\n"  // until the agent has reaped it
                                 "  while os.path.exists('/proc/%d' % p): time.sleep(0.01)\n"
                                 "len(pids)");
  ASSERT_EQ(killer["status"], "success") << killer;
  EXPECT_EQ(killer["result"], "1") << "exactly one warm shell waits while the agent is idle";
  const json after = agent.exec("shell", "echo still here");
  EXPECT_EQ(after["status"], "success") << after;
  EXPECT_EQ(text(after, "stdout"), "still here\n");
}

TEST(Shell, ALongCommandRunsInAColdShell) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("shell", "true");
  const std::string payload(20'000, 'x');  // past what one atomic pipe write carries
  const json reply = agent.exec("shell", "v=" + payload + "; echo ${#v}; echo $0");
  EXPECT_EQ(reply["status"], "success") << reply;
  EXPECT_EQ(text(reply, "stdout"), "20000\nsh\n");
}

TEST(Shell, TimeoutOfAWarmShellKillsItsGroup) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("shell", "true");
  const json reply = agent.exec("shell", "sleep 100 & echo $! > bg.pid; sleep 100", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  const pid_t background = std::stoi(text(agent.exec("shell", "cat bg.pid"), "stdout"));
  EXPECT_TRUE(agent_test::waitUntilGone(background));
}

}  // namespace

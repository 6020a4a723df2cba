// Exec requests through the real sandbox-agent binary over pipes: shell exit codes and streams,
// timeouts that kill the process group, output caps, cancellation, and streamed output events.
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "agent_client.h"
#include "protocol_test_support.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::lastLine;
using agent_test::outputInOrder;
using agent_test::sendAndReadFirst;
using agent_test::streamedExec;
using agent_test::TempDir;
using namespace std::chrono_literals;

TEST(Unit, ShellReportsExitCodesAndStreams) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("shell", "echo out; echo err >&2; exit 7");
  EXPECT_EQ(reply["status"], "error");
  EXPECT_EQ(reply["exit_code"], 7);
  EXPECT_EQ(reply["stdout"], "out\n");
  EXPECT_EQ(reply["stderr"], "err\n");
  EXPECT_TRUE(reply["result"].is_null());
  EXPECT_EQ(agent.exec("shell", "true")["status"], "success");
  EXPECT_EQ(agent.exec("shell", "kill -9 $$")["exit_code"], 137);
  EXPECT_EQ(agent.exec("shell", "read line; echo \"[$line]\"")["stdout"], "[]\n");  // stdin empty
  const json missing = agent.exec("shell", "no-such-command-here");
  EXPECT_EQ(missing["exit_code"], 127);
  EXPECT_NE(missing["stderr"].get<std::string>().find("not found"), std::string::npos);
}

TEST(Unit, ShellAndPythonShareTheFilesystem) {
  TempDir dir;
  AgentClient agent(dir.path());
  EXPECT_EQ(agent.exec("shell", "echo hello > shared.txt")["status"], "success");
  EXPECT_EQ(agent.exec("python", "open('shared.txt').read()")["result"], "'hello\\n'");
  (void)agent.exec("python", "open('from_py.txt', 'w').write('py')");
  EXPECT_EQ(agent.exec("shell", "cat from_py.txt")["stdout"], "py");
  // Output of Python's subprocesses is captured as well.
  EXPECT_EQ(agent.exec("python", "import subprocess\nsubprocess.run(['echo', 'child'])")["stdout"],
            "child\n");
}

TEST(Unit, ShellTimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  AgentClient agent(dir.path());
  // The timeout leaves a loaded machine (ASan, -j2) time to start the shell and write bg.pid;
  // the duration bound only shows the sleeps were killed, not left to run their 100 s.
  const json reply = agent.exec("shell", "sleep 100 & echo $! > bg.pid; sleep 100", 1500);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["exit_code"], 124);
  EXPECT_NE(lastLine(reply["stderr"]).find("process group was killed"), std::string::npos);
  EXPECT_LT(reply["duration_ms"].get<double>(), 20'000.0);
  pid_t background = 0;
  std::ifstream(dir.path() / "bg.pid") >> background;
  ASSERT_GT(background, 0);
  EXPECT_TRUE(agent_test::waitUntilGone(background)) << "background sleep survived";
}

TEST(Unit, ShellTimeoutEscalatesToSigkill) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("shell", "trap '' TERM; while :; do sleep 0.05; done", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_LT(reply["duration_ms"].get<double>(), 20'000.0);  // killed, not left looping
}

TEST(Unit, OutputFloodIsCappedWithCorrectTotals) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json py = agent.exec("python",
                             "import sys\nsys.stdout.write('x' * 1000000)\n"
                             "sys.stderr.write('e' * 5000)",
                             10'000, 1000);
  EXPECT_EQ(py["status"], "success") << py["stderr"];
  EXPECT_EQ(py["stdout"].get<std::string>(), std::string(1000, 'x'));
  EXPECT_EQ(py["stdout_bytes"], 1000000);
  EXPECT_EQ(py["truncated"]["stdout"], true);
  EXPECT_EQ(py["stderr_bytes"], 5000);
  EXPECT_EQ(py["truncated"]["stderr"], true);

  const json sh = agent.exec("shell", "head -c 3000000 /dev/zero | tr '\\0' y", 10'000, 100);
  EXPECT_EQ(sh["status"], "success");
  EXPECT_EQ(sh["stdout"].get<std::string>(), std::string(100, 'y'));
  EXPECT_EQ(sh["stdout_bytes"], 3000000);
  EXPECT_EQ(sh["truncated"]["stdout"], true);
  EXPECT_EQ(sh["truncated"]["stderr"], false);
}

TEST(Unit, InvalidUtf8OutputIsReplacedNotFatal) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("shell", "printf 'a\\377b'");
  EXPECT_EQ(reply["stdout"],
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(reply["stdout_bytes"], 3);
}

TEST(Unit, CancelStopsTheRunningExec) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "w = 'still here'");
  agent.send({{"id", 50},
              {"op", "exec"},
              {"kind", "python"},
              {"code", "import time\ntime.sleep(30)"},
              {"timeout_ms", 60000},
              {"max_output_bytes", 1000}});
  std::this_thread::sleep_for(100ms);
  const json cancel = agent.request({{"id", 51}, {"op", "cancel"}, {"target", 50}});
  EXPECT_EQ(cancel["ok"], true);
  EXPECT_EQ(cancel["cancelled"], true);
  const json reply = agent.waitFor(50, 5s).final;
  EXPECT_EQ(reply["status"], "cancelled") << reply;
  EXPECT_EQ(reply["state_lost"], false);
  EXPECT_LT(reply["duration_ms"].get<double>(), 5000.0);
  EXPECT_EQ(agent.exec("python", "w")["result"], "'still here'");
  EXPECT_EQ(agent.request({{"id", 52}, {"op", "cancel"}, {"target", 50}})["cancelled"], false);
}

TEST(Unit, CancelOfAQueuedExecAnswersIt) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send(
      {{"id", 60}, {"op", "exec"}, {"kind", "shell"}, {"code", "sleep 30"}, {"timeout_ms", 60000}});
  agent.send({{"id", 61},
              {"op", "exec"},
              {"kind", "shell"},
              {"code", "echo never"},
              {"timeout_ms", 60000}});
  EXPECT_EQ(agent.request({{"id", 62}, {"op", "cancel"}, {"target", 61}})["cancelled"], true);
  const json queued = agent.waitFor(61, 2s).final;
  EXPECT_EQ(queued["status"], "cancelled");
  EXPECT_EQ(queued["stdout"], "");
  EXPECT_EQ(agent.request({{"id", 63}, {"op", "cancel"}, {"target", 60}})["cancelled"], true);
  const json running = agent.waitFor(60, 5s).final;
  EXPECT_EQ(running["status"], "cancelled");
  EXPECT_EQ(running["exit_code"], 130);
}

TEST(Unit, StreamEventsArriveBeforeTheFinalReply) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send({{"id", 70},
              {"op", "exec"},
              {"kind", "python"},
              {"code",
               "import sys, time\nfor i in range(3):\n    print(i)\n    time.sleep(0.3)\n"
               "sys.stderr.write('done\\n')"},
              {"timeout_ms", 10000},
              {"max_output_bytes", 1000},
              {"stream", true}});
  const auto reply = agent.waitFor(70);
  EXPECT_EQ(reply.final["stdout"], "0\n1\n2\n");
  ASSERT_GE(reply.events.size(), 3U);  // one per print at least: they are further apart than 50 ms
  std::string out;
  std::string err;
  for (const json& event : reply.events) {
    EXPECT_EQ(event["event"], "output");
    EXPECT_FALSE(event.contains("ok"));
    (event["stream"] == "stdout" ? out : err) += event["data"].get<std::string>();
  }
  EXPECT_EQ(out, "0\n1\n2\n");
  EXPECT_EQ(err, "done\n");
}

TEST(Unit, StreamEventsRespectTheCap) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send({{"id", 71},
              {"op", "exec"},
              {"kind", "shell"},
              {"code", "seq 1 100000"},
              {"timeout_ms", 10000},
              {"max_output_bytes", 50},
              {"stream", true}});
  const auto reply = agent.waitFor(71);
  std::string streamed;
  for (const json& event : reply.events) streamed += event["data"].get<std::string>();
  EXPECT_EQ(streamed, reply.final["stdout"].get<std::string>());
  EXPECT_EQ(streamed.size(), 50U);
  EXPECT_EQ(reply.final["truncated"]["stdout"], true);
}

// stdout is block-buffered in the interpreter and events are batched in the agent, yet a line
// printed (without flush) before a sleep arrives while the code still sleeps.
TEST(Unit, ALinePrintedBeforeASleepArrivesBeforeTheCellEnds) {
  TempDir dir;
  AgentClient agent(dir.path());
  const auto first = sendAndReadFirst(
      agent, streamedExec(72, "python",
                          "import time\nprint('before the sleep')\ntime.sleep(2)\nprint('after')",
                          10000, 1000));
  ASSERT_TRUE(first.frame);
  EXPECT_EQ((*first.frame)["event"], "output");
  EXPECT_EQ((*first.frame)["data"], "before the sleep\n");
  const auto reply = agent.waitFor(72);
  // Timed from the line to the end, not from the send: a slow interpreter start delays both.
  EXPECT_GT(std::chrono::steady_clock::now() - first.at, 1000ms)
      << "the line waited for the sleep (which lasts 2 s)";
  EXPECT_EQ(reply.final["stdout"], "before the sleep\nafter\n");
}

// 20,000 printed lines are a few events, not 20,000. A write to stderr first flushes what stdout
// holds, so it comes after every line printed before it (two pipes: what is written after it may
// still overtake it, as in a notebook); a subprocess's output comes after what was printed before
// it started.
TEST(Unit, ManyLinesAreFewEventsInOrder) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send(streamedExec(73, "python",
                          "import subprocess, sys, time\nfor i in range(20000):\n    print(i)\n"
                          "print('err', file=sys.stderr)\ntime.sleep(0.2)\nprint('out')\n"
                          "subprocess.run(['echo', 'child'])\nprint('end')"));
  const auto reply = agent.waitFor(73, 30s);
  std::string expected;
  for (int i = 0; i < 20000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(reply.final["stdout"], expected + "out\nchild\nend\n");
  EXPECT_LE(reply.events.size(), 40U);
  const std::string in_order = outputInOrder(reply.events);
  EXPECT_EQ(in_order, expected + "[stderr]err\nout\nchild\nend\n");
}

}  // namespace

// Drives the real static sandbox-agent binary over pipes, frame by frame, as the server does.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agent_client.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::TempDir;
using namespace std::chrono_literals;

std::string lastLine(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const auto newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

bool contains(const json& value, const std::string& needle) {
  return value.get<std::string>().find(needle) != std::string::npos;
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = -6;
  for (const unsigned char c : bytes) {
    value = (value << 8U) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(kAlphabet[(value >> static_cast<unsigned>(bits)) & 0x3FU]);
      bits -= 6;
    }
  }
  if (bits > -6)
    out.push_back(kAlphabet[((value << 8U) >> static_cast<unsigned>(bits + 8)) & 0x3FU]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

TEST(Unit, AgentSaysHelloWithItsEnvironment) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.request({{"id", 1}, {"op", "hello"}});
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(reply["python"], true);
  EXPECT_TRUE(reply["python_version"].get<std::string>().starts_with("3.")) << reply;
  EXPECT_EQ(reply["pid"], agent.pid());
  EXPECT_EQ(reply["uid"], ::getuid());
  EXPECT_EQ(reply["cwd"], dir.path().string());
  EXPECT_FALSE(reply["agent_version"].get<std::string>().empty());
}

TEST(Unit, PythonStatePersistsBetweenExecs) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json set = agent.exec("python", "x = 42");
  EXPECT_EQ(set["status"], "success") << set;
  EXPECT_TRUE(set["result"].is_null());
  const json use = agent.exec("python", "print(x * 2)");
  EXPECT_EQ(use["status"], "success") << use;
  EXPECT_EQ(use["stdout"], "84\n");
  EXPECT_EQ(use["stdout_bytes"], 3);
  EXPECT_EQ(use["exit_code"], 0);
  EXPECT_EQ(use["state_lost"], false);
}

TEST(Unit, LastExpressionIsTheResultLikeANotebookCell) {
  TempDir dir;
  AgentClient agent(dir.path());
  EXPECT_EQ(agent.exec("python", "1+1")["result"], "2");
  EXPECT_EQ(agent.exec("python", "import math\nmath.pi > 3")["result"], "True");
  EXPECT_EQ(agent.exec("python", "'a' * 3")["result"], "'aaa'");
  EXPECT_TRUE(agent.exec("python", "None")["result"].is_null());
  EXPECT_TRUE(agent.exec("python", "print('hi')")["result"].is_null());
  // User classes live in a real __main__ module, so pickle works as in a script.
  EXPECT_EQ(
      agent.exec("python",
                 "import pickle\nclass P:\n    v = 7\npickle.loads(pickle.dumps(P())).v")["result"],
      "7");
}

TEST(Unit, UncaughtExceptionGivesUserTracebackAndErrorStatus) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("python", "def f():\n    raise ValueError('boom')\nf()");
  EXPECT_EQ(reply["status"], "error");
  EXPECT_EQ(reply["exit_code"], 1);
  const std::string err = reply["stderr"];
  EXPECT_TRUE(err.starts_with("Traceback (most recent call last):")) << err;
  EXPECT_NE(err.find("raise ValueError('boom')"), std::string::npos) << err;
  EXPECT_EQ(lastLine(err), "ValueError: boom");
  EXPECT_EQ(err.find("<string>"), std::string::npos) << "driver frames leaked:\n" << err;
  EXPECT_EQ(err.find("_run_cell"), std::string::npos) << err;

  const json syntax = agent.exec("python", "def (:");
  EXPECT_EQ(syntax["status"], "error");
  EXPECT_NE(syntax["stderr"].get<std::string>().find("SyntaxError"), std::string::npos) << syntax;
}

TEST(Unit, SystemExitIsReportedAndKeepsTheInterpreter) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "kept = 'yes'");
  const json three = agent.exec("python", "import sys\nsys.exit(3)");
  EXPECT_EQ(three["status"], "error") << three;
  EXPECT_EQ(three["exit_code"], 3);
  EXPECT_EQ(three["state_lost"], false);
  const json zero = agent.exec("python", "raise SystemExit(0)");
  EXPECT_EQ(zero["status"], "success") << zero;
  EXPECT_EQ(zero["exit_code"], 0);
  const json message = agent.exec("python", "import sys; sys.exit('bye')");
  EXPECT_EQ(message["exit_code"], 1);
  EXPECT_EQ(message["stderr"], "bye\n");
  EXPECT_EQ(agent.exec("python", "kept")["result"], "'yes'");
}

TEST(Unit, InterpreterCrashIsReportedAndRestarted) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "gone = 1");
  const json crash = agent.exec("python", "import os\nprint('bye', flush=True)\nos._exit(5)");
  EXPECT_EQ(crash["status"], "error") << crash;
  EXPECT_EQ(crash["exit_code"], 5);
  EXPECT_EQ(crash["state_lost"], true);
  EXPECT_EQ(crash["stdout"], "bye\n");
  EXPECT_NE(lastLine(crash["stderr"]).find("restarted"), std::string::npos) << crash;
  const json after = agent.exec("python", "gone");
  EXPECT_EQ(after["status"], "error");
  EXPECT_NE(after["stderr"].get<std::string>().find("NameError"), std::string::npos);
}

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

TEST(Unit, PythonTimeoutInterruptsAndKeepsState) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "y = 5");
  const json reply = agent.exec("python", "while True: pass", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["state_lost"], false);
  EXPECT_EQ(reply["exit_code"], 124);
  const std::string err = reply["stderr"];
  EXPECT_NE(err.find("KeyboardInterrupt"), std::string::npos) << err;
  EXPECT_EQ(lastLine(err).rfind("[sandbox] execution exceeded 0.3 s", 0), 0U) << err;
  EXPECT_GE(reply["duration_ms"].get<double>(), 300.0);
  EXPECT_LT(reply["duration_ms"].get<double>(), 300.0 + 500.0);
  EXPECT_EQ(agent.exec("python", "y")["result"], "5");
}

TEST(Unit, InterruptSwallowingCodeIsKilledAndStateIsLost) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "z = 1");
  // (CPython 3.11 does not route KeyboardInterrupt into `except` around a bare `while True: pass`,
  // so the swallowing loop sleeps instead.)
  const json reply = agent.exec("python",
                                "import time\n"
                                "while True:\n"
                                "    try:\n"
                                "        time.sleep(10)\n"
                                "    except KeyboardInterrupt:\n"
                                "        pass\n",
                                300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["state_lost"], true);
  EXPECT_EQ(lastLine(reply["stderr"]),
            "[sandbox] execution exceeded 0.3 s; the Python interpreter was restarted and its "
            "state (variables, imports) was lost");
  EXPECT_GE(reply["duration_ms"].get<double>(), 800.0);
  const json after = agent.exec("python", "z");
  EXPECT_EQ(after["status"], "error");
  EXPECT_NE(after["stderr"].get<std::string>().find("NameError"), std::string::npos) << after;
  EXPECT_EQ(agent.exec("python", "1+1")["result"], "2");
}

TEST(Unit, ShellTimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("shell", "sleep 100 & echo $! > bg.pid; sleep 100", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["exit_code"], 124);
  EXPECT_NE(lastLine(reply["stderr"]).find("process group was killed"), std::string::npos);
  EXPECT_LT(reply["duration_ms"].get<double>(), 2000.0);
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
  EXPECT_LT(reply["duration_ms"].get<double>(), 2000.0);
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
               "import sys, time\nfor i in range(3):\n    print(i)\n    time.sleep(0.05)\n"
               "sys.stderr.write('done\\n')"},
              {"timeout_ms", 10000},
              {"max_output_bytes", 1000},
              {"stream", true}});
  const auto reply = agent.waitFor(70);
  EXPECT_EQ(reply.final["stdout"], "0\n1\n2\n");
  ASSERT_GE(reply.events.size(), 3U);  // one per print at least, as they were spaced in time
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

TEST(Unit, FileOpsRoundTripBinaryData) {
  TempDir dir;
  AgentClient agent(dir.path());
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  bytes += bytes;
  const json written = agent.request({{"id", 80},
                                      {"op", "write_file"},
                                      {"path", "sub/dir/data.bin"},
                                      {"data_b64", base64(bytes)},
                                      {"mode", 0600}});
  ASSERT_EQ(written["ok"], true) << written;
  EXPECT_EQ(written["bytes"], 512);
  EXPECT_EQ(written["path"], (dir.path() / "sub/dir/data.bin").string());
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "sub/dir/data.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);

  const json read = agent.request(
      {{"id", 81}, {"op", "read_file"}, {"path", "sub/dir/data.bin"}, {"max_bytes", 1000}});
  ASSERT_EQ(read["ok"], true) << read;
  EXPECT_EQ(read["data_b64"], base64(bytes));
  EXPECT_EQ(read["size"], 512);

  const json listed = agent.request({{"id", 82}, {"op", "list_files"}, {"path", "sub/dir"}});
  ASSERT_EQ(listed["ok"], true) << listed;
  ASSERT_EQ(listed["entries"].size(), 1U);
  EXPECT_EQ(listed["entries"][0]["name"], "data.bin");
  EXPECT_EQ(listed["entries"][0]["type"], "file");
  EXPECT_EQ(listed["entries"][0]["size"], 512);

  // Python sees the same bytes.
  EXPECT_EQ(agent.exec("python", "open('sub/dir/data.bin','rb').read()[250:258]")["result"],
            "b'\\xfa\\xfb\\xfc\\xfd\\xfe\\xff\\x00\\x01'");
}

TEST(Unit, FileOpErrorsExplainWhatToDo) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json missing =
      agent.request({{"id", 90}, {"op", "read_file"}, {"path", "nope/x.txt"}, {"max_bytes", 10}});
  EXPECT_EQ(missing["ok"], false);
  EXPECT_TRUE(contains(missing["error"],
                       "No such file or directory: " + (dir.path() / "nope/x.txt").string()))
      << missing;
  const json directory =
      agent.request({{"id", 91}, {"op", "read_file"}, {"path", "."}, {"max_bytes", 10}});
  EXPECT_TRUE(contains(directory["error"], "Is a directory")) << directory;
  (void)agent.exec("shell", "head -c 2048 /dev/zero > big.bin");
  const json big =
      agent.request({{"id", 92}, {"op", "read_file"}, {"path", "big.bin"}, {"max_bytes", 1024}});
  EXPECT_TRUE(contains(big["error"], "2048 bytes")) << big;
}

TEST(Unit, FileOpsAreAnsweredWhileAnExecRuns) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send({{"id", 100},
              {"op", "exec"},
              {"kind", "python"},
              {"code", "import time; time.sleep(0.5)"},
              {"timeout_ms", 10000}});
  agent.send({{"id", 101},
              {"op", "exec"},
              {"kind", "shell"},
              {"code", "echo second"},
              {"timeout_ms", 10000}});
  agent.send({{"id", 102}, {"op", "list_files"}, {"path", "."}});
  agent.send({{"id", 103}, {"op", "hello"}});
  std::vector<std::int64_t> order;
  for (int i = 0; i < 4; ++i) {
    const auto frame = agent.readFrame(5s);
    ASSERT_TRUE(frame.has_value());
    order.push_back((*frame)["id"].get<std::int64_t>());
  }
  EXPECT_EQ(order, (std::vector<std::int64_t>{102, 103, 100, 101}));
}

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

TEST(Unit, WithoutPython3ShellStillWorks) {
  TempDir dir;
  TempDir empty_path;
  AgentClient agent(dir.path(), {{"PATH", empty_path.path().string()}});
  const json hello = agent.request({{"id", 1}, {"op", "hello"}});
  EXPECT_EQ(hello["python"], false);
  EXPECT_TRUE(hello["python_version"].is_null());
  const json py = agent.exec("python", "1+1");
  EXPECT_EQ(py["ok"], false);
  EXPECT_TRUE(contains(py["error"], "no python3")) << py;
  EXPECT_TRUE(contains(py["error"], "run_shell")) << py;
  EXPECT_EQ(agent.exec("shell", "echo ok")["stdout"], "ok\n");
}

TEST(Unit, PythonExecLatencyIsSmall) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("python", "0");
  std::vector<double> round_trips;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const json reply = agent.exec("python", "1+1");
    round_trips.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    ASSERT_EQ(reply["result"], "2");
  }
  std::sort(round_trips.begin(), round_trips.end());
  const double p50 = round_trips[round_trips.size() / 2];
  const double p99 = round_trips[round_trips.size() * 99 / 100];
  std::printf("python exec '1+1' round trip over pipes: p50 %.3f ms, p99 %.3f ms\n", p50, p99);
  RecordProperty("p50_ms", std::to_string(p50));
  EXPECT_LT(p50, 20.0);
}

}  // namespace

namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json execSaving(AgentClient& agent, std::int64_t id, const std::string& kind,
                const std::string& code, std::int64_t max_output, std::int64_t save_bytes) {
  return agent.request({{"id", id},
                        {"op", "exec"},
                        {"kind", kind},
                        {"code", code},
                        {"timeout_ms", 20'000},
                        {"max_output_bytes", max_output},
                        {"save_output_bytes", save_bytes}});
}

TEST(Unit, OutputPastTheCapIsSavedWholeToAFile) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json py = execSaving(agent, 500, "python",
                             "import sys\nfor i in range(100000):\n    print(i)\n"
                             "sys.stderr.write('short')",
                             1000, 1 << 24);
  EXPECT_EQ(py["status"], "success") << py.dump();
  EXPECT_EQ(py["stdout"].get<std::string>().size(), 1000U);
  std::string expected;
  for (int i = 0; i < 100000; ++i) expected += std::to_string(i) + "\n";
  const auto& saved = py["saved_output"]["stdout"];
  EXPECT_EQ(saved["path"], (outputs / "exec-500-stdout.txt").string());
  EXPECT_EQ(saved["bytes"], expected.size());
  EXPECT_EQ(saved["complete"], true);
  EXPECT_EQ(slurp(saved["path"].get<std::string>()), expected);
  EXPECT_FALSE(py["saved_output"].contains("stderr"));  // it fit under the cap

  // Under the cap nothing is saved; without save_output_bytes nothing is saved either.
  EXPECT_FALSE(execSaving(agent, 501, "shell", "echo hi", 1000, 1 << 24).contains("saved_output"));
  EXPECT_FALSE(agent.exec("shell", "head -c 5000 /dev/zero", 10'000, 100).contains("saved_output"));
}

TEST(Unit, SavedOutputStopsAtItsLimitAndOnlyTheNewestFilesAreKept) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json big =
      execSaving(agent, 600, "shell", "head -c 50000 /dev/zero | tr '\\0' z", 100, 20000);
  EXPECT_EQ(big["saved_output"]["stdout"]["bytes"], 20000);
  EXPECT_EQ(big["saved_output"]["stdout"]["complete"], false);
  EXPECT_EQ(slurp(outputs / "exec-600-stdout.txt"), std::string(20000, 'z'));
  for (int i = 601; i <= 610; ++i) {
    (void)execSaving(agent, i, "shell", "head -c 300 /dev/zero", 100, 1000);
  }
  std::vector<std::string> kept;
  for (const auto& entry : std::filesystem::directory_iterator(outputs)) {
    kept.push_back(entry.path().filename().string());
  }
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), 8U);
  EXPECT_EQ(kept.front(), "exec-603-stdout.txt");
  EXPECT_EQ(kept.back(), "exec-610-stdout.txt");
}

TEST(Unit, APlantedSymlinkDoesNotRedirectSavedOutput) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  std::filesystem::create_directories(dir.path() / "elsewhere");
  std::filesystem::create_directory_symlink(dir.path() / "elsewhere", outputs);
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json r = execSaving(agent, 700, "shell", "head -c 5000 /dev/zero", 100, 1 << 20);
  EXPECT_EQ(r["status"], "success");
  EXPECT_FALSE(r.contains("saved_output")) << r.dump();
  EXPECT_NE(r["stderr"].get<std::string>().find("[sandbox] the full stdout could not be saved"),
            std::string::npos)
      << r["stderr"];
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "elsewhere"));
}

}  // namespace

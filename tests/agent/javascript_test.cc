// JavaScript execution (`kind: "javascript"`) through the real static sandbox-agent binary and the
// host's Node.js, over pipes, as the server drives it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "agent_client.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::outputInOrder;
using agent_test::sendAndReadFirst;
using agent_test::streamedExec;
using agent_test::TempDir;
using namespace std::chrono_literals;

std::string lastLine(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const auto newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

bool has(const json& reply, const char* field, const std::string& needle) {
  return reply[field].get<std::string>().find(needle) != std::string::npos;
}

TEST(Javascript, HelloSaysNodeIsAvailableBeforeItStarts) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json hello = agent.request({{"id", 1}, {"op", "hello"}});
  EXPECT_EQ(hello["javascript"], true) << hello;
  EXPECT_TRUE(hello["node_version"].is_null()) << "Node.js must start lazily: " << hello;
  EXPECT_EQ(agent.exec("javascript", "1 + 1")["result"], "2");
  const json later = agent.request({{"id", 2}, {"op", "hello"}});
  EXPECT_FALSE(later["node_version"].get<std::string>().empty()) << later;
}

TEST(Javascript, StatePersistsAndTheLastExpressionIsTheResult) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json set = agent.exec("javascript", "const x = 42;\nfunction twice(v) { return 2 * v }");
  EXPECT_EQ(set["status"], "success") << set;
  EXPECT_TRUE(set["result"].is_null()) << set;
  EXPECT_EQ(agent.exec("javascript", "twice(x)")["result"], "84");
  EXPECT_EQ(agent.exec("javascript", "'a'.repeat(3)")["result"], "'aaa'");
  EXPECT_EQ(agent.exec("javascript", "({a: [1, 2], b: {c: null}})")["result"],
            "{ a: [ 1, 2 ], b: { c: null } }");
  EXPECT_TRUE(agent.exec("javascript", "undefined")["result"].is_null());
  // Declaring a name again works, as when a notebook cell is run twice.
  const json again = agent.exec("javascript", "const x = 7; class K { v() { return x } }");
  EXPECT_EQ(again["status"], "success") << again;
  EXPECT_EQ(agent.exec("javascript", "class K { v() { return -x } }\nnew K().v()")["result"], "-7");
  EXPECT_EQ(agent.exec("javascript", "let later = await Promise.resolve(x + 1); later")["result"],
            "8");
  EXPECT_EQ(agent.exec("javascript", "later * 2")["result"], "16");
  EXPECT_EQ(agent.exec("javascript", "typeof require('fs').readFileSync")["result"], "'function'");
}

TEST(Javascript, ConsoleGoesToStdoutAndStderr) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("javascript", "console.log('out', 1); console.error('err')");
  EXPECT_EQ(reply["status"], "success") << reply;
  EXPECT_EQ(reply["stdout"], "out 1\n");
  EXPECT_EQ(reply["stderr"], "err\n");
  EXPECT_EQ(reply["stdout_bytes"], 6);
}

TEST(Javascript, UncaughtExceptionGivesTheStackAndErrorStatus) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json reply = agent.exec("javascript", "function f() { throw new RangeError('boom') }\nf()");
  EXPECT_EQ(reply["status"], "error") << reply;
  EXPECT_EQ(reply["exit_code"], 1);
  const std::string err = reply["stderr"];
  EXPECT_TRUE(err.starts_with("RangeError: boom")) << err;
  EXPECT_NE(err.find("at f (<cell 1>:1:"), std::string::npos) << err;
  EXPECT_EQ(err.find("node:"), std::string::npos) << "driver frames leaked:\n" << err;
  EXPECT_EQ(err.find("[eval]"), std::string::npos) << err;

  const json rejected = agent.exec("javascript", "await Promise.reject(new TypeError('nope'))");
  EXPECT_EQ(rejected["status"], "error") << rejected;
  EXPECT_TRUE(has(rejected, "stderr", "TypeError: nope")) << rejected;

  const json thrown = agent.exec("javascript", "throw {code: 7}");
  EXPECT_TRUE(has(thrown, "stderr", "Uncaught { code: 7 }")) << thrown;

  const json syntax = agent.exec("javascript", "function (");
  EXPECT_EQ(syntax["status"], "error");
  EXPECT_TRUE(has(syntax, "stderr", "SyntaxError")) << syntax;
  EXPECT_EQ(agent.exec("javascript", "'alive'")["result"], "'alive'");
}

TEST(Javascript, ProcessExitEndsTheCellAndKeepsTheContext) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("javascript", "var kept = 'yes'");
  const json three = agent.exec("javascript", "console.log('before'); process.exit(3); 'never'");
  EXPECT_EQ(three["status"], "error") << three;
  EXPECT_EQ(three["exit_code"], 3);
  EXPECT_EQ(three["stdout"], "before\n");
  EXPECT_EQ(agent.exec("javascript", "process.exit()")["status"], "success");
  const json after = agent.exec("javascript", "kept");
  EXPECT_EQ(after["result"], "'yes'") << after;
  EXPECT_EQ(after["state_lost"], false);
}

TEST(Javascript, TimeoutInterruptsABusyLoopAndKeepsState) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("javascript", "var n = 0");
  const json reply = agent.exec("javascript", "while (true) { n++ }", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["exit_code"], 124);
  EXPECT_EQ(reply["state_lost"], false);
  EXPECT_TRUE(has(reply, "stderr", "interrupted")) << reply;
  EXPECT_EQ(lastLine(reply["stderr"]).rfind("[sandbox] execution exceeded 0.3 s", 0), 0U)
      << reply["stderr"];
  EXPECT_LT(reply["duration_ms"].get<double>(), 10'000.0);  // interrupted, not left looping
  EXPECT_EQ(agent.exec("javascript", "n > 0")["result"], "true");

  const json hung = agent.exec("javascript", "await new Promise(() => {})", 300);
  EXPECT_EQ(hung["status"], "timeout") << hung;
  EXPECT_EQ(hung["state_lost"], false);
  EXPECT_EQ(agent.exec("javascript", "n > 0")["result"], "true");
}

TEST(Javascript, CodeThatCannotBeInterruptedIsKilledAndStateIsLost) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("javascript", "var z = 1");
  // After an await the loop runs outside the interruptible script, and SIGINT's handler never
  // gets a turn: only killing Node.js stops it.
  const json reply =
      agent.exec("javascript", "await new Promise((r) => setTimeout(r, 10)); while (true) {}", 300);
  EXPECT_EQ(reply["status"], "timeout") << reply;
  EXPECT_EQ(reply["state_lost"], true);
  EXPECT_EQ(lastLine(reply["stderr"]),
            "[sandbox] execution exceeded 0.3 s and did not stop when interrupted; Node.js was "
            "stopped and its state (variables, functions) was lost");
  const json after = agent.exec("javascript", "typeof z");
  EXPECT_EQ(after["result"], "'undefined'") << after;
  EXPECT_EQ(after["state_lost"], false);
}

TEST(Javascript, NodeDyingBetweenCellsIsReportedOnTheNextOne) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("javascript", "var gone = 1");
  (void)agent.exec("javascript", "setTimeout(() => process.kill(process.pid, 'SIGKILL'), 20); 0");
  std::this_thread::sleep_for(300ms);
  const json next = agent.exec("javascript", "typeof gone");
  EXPECT_EQ(next["result"], "'undefined'") << next;
  EXPECT_EQ(next["state_lost"], true);
  EXPECT_TRUE(has(next, "stderr", "[sandbox] the Node.js process had exited")) << next;
  EXPECT_EQ(agent.exec("javascript", "1")["state_lost"], false);
}

TEST(Javascript, CancelStopsTheRunningCell) {
  TempDir dir;
  AgentClient agent(dir.path());
  (void)agent.exec("javascript", "var w = 'still here'");
  agent.send({{"id", 50},
              {"op", "exec"},
              {"kind", "javascript"},
              {"code", "for (;;) {}"},
              {"timeout_ms", 60000},
              {"max_output_bytes", 1000}});
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(agent.request({{"id", 51}, {"op", "cancel"}, {"target", 50}})["cancelled"], true);
  const json reply = agent.waitFor(50, 5s).final;
  EXPECT_EQ(reply["status"], "cancelled") << reply;
  EXPECT_EQ(reply["exit_code"], 130);
  EXPECT_EQ(reply["state_lost"], false);
  EXPECT_EQ(agent.exec("javascript", "w")["result"], "'still here'");
}

TEST(Javascript, SharesFilesWithPythonAndShell) {
  TempDir dir;
  AgentClient agent(dir.path());
  EXPECT_EQ(agent.exec("shell", "echo from-shell > s.txt")["status"], "success");
  EXPECT_EQ(agent.exec("python", "open('p.txt', 'w').write('from-python')")["status"], "success");
  const json js = agent.exec("javascript",
                             "const fs = require('fs');\n"
                             "fs.writeFileSync('j.txt', 'from-js');\n"
                             "[process.cwd(), fs.readFileSync('s.txt', 'utf8').trim(),"
                             " fs.readFileSync('p.txt', 'utf8')].join('|')");
  EXPECT_EQ(js["result"], "'" + dir.path().string() + "|from-shell|from-python'") << js;
  EXPECT_EQ(agent.exec("python", "open('j.txt').read()")["result"], "'from-js'");
  // JavaScript and Python keep separate variables.
  (void)agent.exec("python", "only_python = 1");
  EXPECT_EQ(agent.exec("javascript", "typeof only_python")["result"], "'undefined'");
}

TEST(Javascript, OutputAndResultAreCapped) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json flood = agent.exec(
      "javascript", "process.stdout.write('x'.repeat(1000000)); 'y'.repeat(5000)", 10'000, 1000);
  EXPECT_EQ(flood["status"], "success") << flood["stderr"];
  EXPECT_EQ(flood["stdout"].get<std::string>(), std::string(1000, 'x'));
  EXPECT_EQ(flood["stdout_bytes"], 1000000);
  EXPECT_EQ(flood["truncated"]["stdout"], true);
  EXPECT_LE(flood["result"].get<std::string>().size(), 1000U + 64U);
}

TEST(Javascript, ForgedRepliesFromUserCodeCannotBreakTheAgent) {
  TempDir dir;
  AgentClient agent(dir.path());
  // User code can write the driver's reply pipe (fd 4). A malformed line, and a reply that names
  // no cell or another cell, are skipped: the cell's own reply counts.
  const json ignored = agent.exec("javascript",
                                  "const fs = require('fs');\n"
                                  "fs.writeSync(4, 'not json\\n');\n"
                                  "fs.writeSync(4, JSON.stringify({status: 'error', exit_code: 3}) "
                                  "+ '\\n');\n"
                                  "fs.writeSync(4, JSON.stringify({cell: 7, status: 'error', "
                                  "exit_code: 3}) + '\\n');\n"
                                  "await new Promise((r) => setTimeout(r, 200));\n'real'");
  EXPECT_EQ(ignored["status"], "success") << ignored;
  EXPECT_EQ(ignored["exit_code"], 0);
  EXPECT_EQ(ignored["result"], "'real'");
  // A forged reply that names the running cell (the second) ends it, but none of its fields is
  // trusted as given: wrong types and ranges fall back or are clamped.
  const json forged = agent.exec("javascript",
                                 "fs.writeSync(4, JSON.stringify({cell: 2, status: 'pwned', "
                                 "exit_code: 1e6, result: {a: 1}}) + '\\n');\n"
                                 "await new Promise((r) => setTimeout(r, 200));");
  EXPECT_EQ(forged["status"], "error") << forged;
  EXPECT_EQ(forged["exit_code"], 255);
  EXPECT_TRUE(forged["result"].is_null());
  // The cell's real reply arrives with no execution running and is dropped; the next cell's
  // reply is its own.
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(agent.exec("shell", "echo ok")["stdout"], "ok\n");
  EXPECT_EQ(agent.exec("javascript", "6 * 7")["result"], "42");
}

TEST(Javascript, ALineLoggedBeforeATimerArrivesBeforeTheCellEnds) {
  TempDir dir;
  AgentClient agent(dir.path());
  const auto first = sendAndReadFirst(
      agent, streamedExec(80, "javascript",
                          "console.log('before the wait');\n"
                          "await new Promise((r) => setTimeout(r, 2000));\nconsole.log('after')",
                          20000, 1000));
  ASSERT_TRUE(first.frame);
  EXPECT_EQ((*first.frame)["event"], "output");
  EXPECT_EQ((*first.frame)["data"], "before the wait\n");
  const auto reply = agent.waitFor(80);
  // Timed from the line to the end, not from the send: a slow interpreter start delays both.
  EXPECT_GT(std::chrono::steady_clock::now() - first.at, 1000ms)
      << "the line waited for the timer (which lasts 2 s)";
  EXPECT_EQ(reply.final["stdout"], "before the wait\nafter\n");
}

// stdout is buffered: 20,000 lines are a few events, not 20,000. console.error first flushes
// what stdout holds, and a child process's output comes after what was logged before it started.
TEST(Javascript, ManyLinesAreFewEventsInOrder) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send(
      streamedExec(81, "javascript",
                   "for (let i = 0; i < 20000; i++) console.log(i);\n"
                   "console.error('err');\nawait new Promise((r) => setTimeout(r, 200));\n"
                   "console.log('out');\n"
                   "require('child_process').execFileSync('echo', ['child'], {stdio: 'inherit'});\n"
                   "process.stdout.write(new Uint8Array([101, 110, 100, 10]));"));
  const auto reply = agent.waitFor(81, 30s);
  ASSERT_EQ(reply.final["status"], "success") << reply.final["stderr"];
  std::string expected;
  for (int i = 0; i < 20000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_TRUE(reply.final["stdout"] == expected + "out\nchild\nend\n");
  EXPECT_LE(reply.events.size(), 40U);
  const std::string in_order = outputInOrder(reply.events);
  const std::size_t err_at = in_order.find("[stderr]");
  EXPECT_TRUE(in_order == expected + "[stderr]err\nout\nchild\nend\n")
      << "stderr at " << err_at << " of " << in_order.size() << ", after: "
      << in_order.substr(err_at == std::string::npos || err_at < 40 ? 0 : err_at - 40, 80);
}

TEST(Javascript, MissingNodeGivesAClearError) {
  TempDir dir;
  AgentClient agent(dir.path(), {{"PATH", dir.path().string()}});
  const json hello = agent.request({{"id", 1}, {"op", "hello"}});
  EXPECT_EQ(hello["javascript"], false) << hello;
  const json reply = agent.request(
      {{"id", 2}, {"op", "exec"}, {"kind", "javascript"}, {"code", "1"}, {"timeout_ms", 5000}});
  EXPECT_EQ(reply["ok"], false) << reply;
  EXPECT_TRUE(has(reply, "error", "no `node` on PATH")) << reply;
  EXPECT_TRUE(has(reply, "error", "sandbox-mcp/python:latest")) << reply;
  EXPECT_EQ(agent.exec("shell", "echo still")["stdout"], "still\n");
}

}  // namespace

// The host command runner (runsc checkpoint's): exit codes, captured output, the deadline, and
// nothing of the server's environment or descriptors reaching the program.
#include "sandbox/host_command.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>

namespace {

using namespace std::chrono_literals;
using sandbox::runHostCommand;

TEST(HostCommand, ReportsTheExitCodeAndBothStreams) {
  const auto result = runHostCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.output.find("out"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("err"), std::string::npos) << result.output;
}

TEST(HostCommand, KeepsTheTailOfLongOutput) {
  const auto result = runHostCommand({"/bin/sh", "-c", "seq 1 100000; echo last"}, 20s);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_LE(result.output.size(), sandbox::kMaxHostCommandOutputBytes);
  EXPECT_NE(result.output.find("last"), std::string::npos);
}

TEST(HostCommand, KillsAProgramPastItsDeadline) {
  const auto started = std::chrono::steady_clock::now();
  const auto result = runHostCommand({"/bin/sleep", "30"}, 300ms);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(HostCommand, PassesNoEnvironmentAndNeedsAnAbsolutePath) {
  ::setenv("SANDBOX_MCP_TOKEN", "secret-of-the-server", 1);
  const auto result = runHostCommand({"/usr/bin/env"}, 10s);
  ::unsetenv("SANDBOX_MCP_TOKEN");
  EXPECT_EQ(result.output.find("secret-of-the-server"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("PATH="), std::string::npos);
  EXPECT_THROW((void)runHostCommand({"env"}, 1s), std::system_error);
  EXPECT_THROW((void)runHostCommand({}, 1s), std::system_error);
}

}  // namespace

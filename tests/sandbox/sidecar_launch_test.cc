// The sidecar's container body and command line, the run-time directory, and the process
// launcher against the real sandbox-sidecar binary (no Docker needed).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sandbox/backend.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/docker_sidecar.h"
#include "sandbox/process_sidecar.h"
#include "sandbox/runtime_dir.h"

namespace {

using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;
namespace fs = std::filesystem;

SidecarSpec specIn(const std::string& dir) {
  SidecarSpec spec;
  spec.session_id = "s1";
  spec.directory = dir;
  spec.socket_dir = dir + "/sock";
  spec.policy_file = dir + "/policy.json";
  spec.audit_log_file = dir + "/audit.jsonl";
  spec.limit_flags = {"--upstream-idle-timeout-ms", "1500"};
  return spec;
}

std::string tempDir() {
  std::string pattern = (fs::temp_directory_path() / "sidecar-test-XXXXXX").string();
  return mkdtemp(pattern.data());
}

TEST(SidecarArguments, MapsHostPathsToWhereTheRelaySeesThem) {
  const auto args = sidecarArguments(specIn("/run/x/s-1"), "/session");
  EXPECT_EQ(args, (std::vector<std::string>{
                      "--listen", "/session/sock/mcp.sock", "--policy", "/session/policy.json",
                      "--audit-log", "/session/audit.jsonl", "--session", "s1",
                      "--exit-on-stdin-eof", "--upstream-idle-timeout-ms", "1500"}));
  EXPECT_EQ(sidecarArguments(specIn("/run/x/s-1"), "/run/x/s-1")[1], "/run/x/s-1/sock/mcp.sock");
}

TEST(SidecarContainerBody, IsLockedDownAndDiesWithTheServer) {
  DockerSidecarOptions options;
  options.binary_path = "/opt/bin/sandbox-sidecar";
  options.labels = {{kLabelManaged, "1"}, {kLabelInstance, "me"}};
  const json body = sidecarContainerBody(specIn("/run/x/s-1"), options);
  const json& host = body["HostConfig"];
  EXPECT_EQ(host["Runtime"], "runc");
  EXPECT_EQ(host["NetworkMode"], "host");
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  EXPECT_EQ(host["CapDrop"], json({"ALL"}));
  EXPECT_EQ(host["SecurityOpt"], json({"no-new-privileges"}));
  EXPECT_EQ(host["Memory"], 64 * 1024 * 1024);
  EXPECT_EQ(host["AutoRemove"], true);
  EXPECT_EQ(host["Binds"], json({"/run/x/s-1:/session:rw",
                                 "/opt/bin/sandbox-sidecar:/usr/local/bin/sandbox-sidecar:ro"}));
  EXPECT_EQ(body["User"], "65534:65534");
  EXPECT_EQ(body["OpenStdin"], true);
  EXPECT_EQ(body["StdinOnce"], true);  // the server's attach connection is its lifeline
  EXPECT_EQ(body["Labels"]["sandbox-mcp.role"], "sidecar");
  EXPECT_EQ(body["Labels"]["sandbox-mcp.session"], "s1");
  EXPECT_EQ(body["Labels"][kLabelInstance], "me");
  EXPECT_NE(std::find(body["Cmd"].begin(), body["Cmd"].end(), "--exit-on-stdin-eof"),
            body["Cmd"].end());
}

TEST(ContainerCreateBody, MountsThePythonHelperAndPutsItOnPythonPath) {
  SandboxSpec spec;
  spec.image = "img";
  spec.runtime = "runsc";
  spec.environment = {{"PYTHONPATH", "/work/lib"}};
  spec.python_helper_dir = "/run/x/python";
  const json body = containerCreateBody(spec, AgentMounts::fromHost("/opt/agent"), {});
  const json& binds = body["HostConfig"]["Binds"];
  EXPECT_NE(std::find(binds.begin(), binds.end(), "/run/x/python:/.sandbox/python:ro"),
            binds.end());
  const json& env = body["Env"];
  EXPECT_NE(std::find(env.begin(), env.end(), "PYTHONPATH=/.sandbox/python:/work/lib"), env.end());
}

TEST(ProcessSidecarLauncher, StartsTheRelayAndStopsItWithTheHandle) {
  const std::string dir = tempDir();
  fs::create_directories(dir + "/sock");
  std::ofstream(dir + "/policy.json") << R"(["http://127.0.0.1:9/mcp"])";
  ProcessSidecarLauncher launcher(SANDBOX_SIDECAR_PATH, 10000);
  const auto spec = specIn(dir);
  {
    auto relay = launcher.launch(spec);
    EXPECT_TRUE(relay->running());
    EXPECT_TRUE(socketAccepts(dir + "/sock/mcp.sock"));
    EXPECT_EQ(relay->describe().rfind("process ", 0), 0U);
  }
  EXPECT_FALSE(socketAccepts(dir + "/sock/mcp.sock"));
  fs::remove_all(dir);
}

TEST(ProcessSidecarLauncher, ABadPolicyFailsWithTheRelaysOwnWords) {
  const std::string dir = tempDir();
  fs::create_directories(dir + "/sock");
  std::ofstream(dir + "/policy.json") << R"(["ftp://nope"])";
  ProcessSidecarLauncher launcher(SANDBOX_SIDECAR_PATH, 10000);
  try {
    (void)launcher.launch(specIn(dir));
    FAIL() << "launch succeeded with an invalid policy";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("exited at start"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ftp"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// What keeps a crashed server from leaving relays behind: with --exit-on-stdin-eof the relay
// exits once the other end of its stdin closes (the server's pipe or attach connection).
TEST(SandboxSidecar, ExitsWhenItsStdinCloses) {
  const std::string dir = tempDir();
  fs::create_directories(dir + "/sock");
  std::ofstream(dir + "/policy.json") << R"(["http://127.0.0.1:9/mcp"])";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string socket = dir + "/sock/mcp.sock";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[0], STDIN_FILENO);
    close(fds[1]);
    execl(SANDBOX_SIDECAR_PATH, SANDBOX_SIDECAR_PATH, "--listen", socket.c_str(), "--policy",
          (dir + "/policy.json").c_str(), "--audit-log", (dir + "/audit.jsonl").c_str(),
          "--exit-on-stdin-eof", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[0]);
  ASSERT_TRUE(waitForSocket(socket, 10000, [] { return true; }));
  close(fds[1]);  // the "server" dies
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  pid_t reaped = 0;
  while ((reaped = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(reaped, pid) << "the relay outlived its server";
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(socket));  // it unlinks its socket on the way out
  fs::remove_all(dir);
}

TEST(ProcessSidecarLauncher, AMissingBinaryNamesTheFix) {
  ProcessSidecarLauncher launcher("/nonexistent/sandbox-sidecar", 1000);
  try {
    (void)launcher.launch(specIn("/tmp"));
    FAIL();
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("mcp.sidecar.binary_path"), std::string::npos);
  }
}

}  // namespace

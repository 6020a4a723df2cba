// The Docker backend against the real dockerd (runsc and runc) with the real sandbox-agent: a
// locked-down sandbox, Python state and the shell, files, no network, a memory hog, streaming,
// cancellation and timeouts. docker_backend_housekeeping_test.cc covers removal, images, health.
// A global sweep (docker_test_support.cc) fails the run if any container is left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "docker_test_support.h"

namespace {

using namespace docker_test;

TEST(DockerBackend, CreatesALockedDownRunscSandbox) {
  DockerBackend backend(options());
  const auto start = Clock::now();
  auto sandbox = backend.create(spec("runsc"));
  const double create_ms = msSince(start);
  auto& docker_sandbox = dynamic_cast<DockerSandbox&>(*sandbox);
  std::printf("[ metric ] create+attach+start+hello (runsc): %.1f ms\n", create_ms);

  EXPECT_TRUE(sandbox->alive());
  EXPECT_EQ(sandbox->status(), "running");
  EXPECT_EQ(sandbox->runtime(), "runsc");
  EXPECT_EQ(docker_sandbox.hello().value("python", false), true) << docker_sandbox.hello();
  EXPECT_EQ(docker_sandbox.hello().value("cwd", std::string()), "/workspace");

  const auto info = inspect(backend.engine(), sandbox->id());
  ASSERT_TRUE(info);
  const json& host = (*info)["HostConfig"];
  EXPECT_EQ(host["Runtime"], "runsc");
  EXPECT_EQ(host["NetworkMode"], "none");
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  EXPECT_EQ(host["CapDrop"], json({"ALL"}));
  EXPECT_EQ(host["Memory"], 512LL * 1024 * 1024);
  EXPECT_EQ(host["MemorySwap"], 512LL * 1024 * 1024);
  EXPECT_EQ(host["PidsLimit"], 256);
  EXPECT_EQ(host["AutoRemove"], true);
  EXPECT_EQ(host["SecurityOpt"], json({"no-new-privileges"}));
  EXPECT_EQ((*info)["Config"]["Labels"][kLabelInstance], backend.instanceId());
  EXPECT_EQ((*info)["Config"]["Cmd"], json({"/.sandbox/agent"}));
  EXPECT_EQ((*info)["Name"], "/" + docker_sandbox.name());

  // The root filesystem is read-only, the working directory and /tmp are writable.
  const auto root = run(*sandbox, ExecKind::kShell, "touch /x 2>&1; echo rc=$?");
  EXPECT_NE(root.stdout_text.find("Read-only file system"), std::string::npos) << root.stdout_text;
  EXPECT_EQ(run(*sandbox, ExecKind::kShell, "touch /workspace/w /tmp/t && echo ok").stdout_text,
            "ok\n");

  // Round trip of a trivial execution over the channel.
  std::vector<double> samples;
  for (int i = 0; i < 30; ++i) {
    const auto t = Clock::now();
    const auto result = python(*sandbox, "1+1");
    samples.push_back(msSince(t));
    ASSERT_EQ(result.result, "2");
  }
  std::sort(samples.begin(), samples.end());
  std::printf("[ metric ] exec python 1+1 round trip (runsc): p50 %.2f ms, p90 %.2f ms\n",
              samples[samples.size() / 2], samples[samples.size() * 9 / 10]);

  // The channel alone (a file op answered by the agent itself, no Python involved).
  samples.clear();
  for (int i = 0; i < 30; ++i) {
    const auto t = Clock::now();
    (void)sandbox->listFiles("/tmp");  // an empty tmpfs
    samples.push_back(msSince(t));
  }
  std::sort(samples.begin(), samples.end());
  std::printf("[ metric ] list_files /tmp round trip (runsc): p50 %.2f ms\n",
              samples[samples.size() / 2]);
}

TEST(DockerBackend, RunsUnderRuncToo) {
  DockerBackend backend(options());
  const auto start = Clock::now();
  auto sandbox = backend.create(spec("runc"));
  std::printf("[ metric ] create+attach+start+hello (runc): %.1f ms\n", msSince(start));
  EXPECT_EQ(inspect(backend.engine(), sandbox->id()).value()["HostConfig"]["Runtime"], "runc");
  std::vector<double> samples;
  for (int i = 0; i < 30; ++i) {
    const auto t = Clock::now();
    ASSERT_EQ(python(*sandbox, "1+1").result, "2");
    samples.push_back(msSince(t));
  }
  std::sort(samples.begin(), samples.end());
  std::printf("[ metric ] exec python 1+1 round trip (runc): p50 %.2f ms\n",
              samples[samples.size() / 2]);
}

TEST(DockerBackend, KeepsPythonStateAndSharesTmpWithTheShell) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  EXPECT_EQ(python(*sandbox, "x = 42").status, sandbox::ExecStatus::kSuccess);
  const auto doubled = python(*sandbox, "print(x*2)");
  EXPECT_EQ(doubled.status, sandbox::ExecStatus::kSuccess);
  EXPECT_EQ(doubled.stdout_text, "84\n");
  EXPECT_EQ(python(*sandbox, "x").result, "42");

  EXPECT_EQ(run(*sandbox, ExecKind::kShell, "echo from-shell > /tmp/shared.txt").status,
            sandbox::ExecStatus::kSuccess);
  EXPECT_EQ(python(*sandbox, "open('/tmp/shared.txt').read()").result, "'from-shell\\n'");

  const auto failed = run(*sandbox, ExecKind::kShell, "echo oops >&2; exit 3");
  EXPECT_EQ(failed.status, sandbox::ExecStatus::kError);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.stderr_text, "oops\n");
  const auto raised = python(*sandbox, "1/0");
  EXPECT_EQ(raised.status, sandbox::ExecStatus::kError);
  EXPECT_NE(raised.stderr_text.find("ZeroDivisionError"), std::string::npos);
}

TEST(DockerBackend, WritesReadsAndListsFiles) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  std::string bytes;
  for (int i = 0; i < 3000; ++i) bytes.push_back(static_cast<char>(i % 256));
  EXPECT_EQ(sandbox->writeFile("data/blob.bin", bytes, 0600), bytes.size());
  EXPECT_EQ(sandbox->readFile("data/blob.bin", 1 << 20), bytes);
  EXPECT_EQ(sandbox->readFile("/workspace/data/blob.bin", 1 << 20), bytes);
  EXPECT_EQ(python(*sandbox, "len(open('data/blob.bin','rb').read())").result, "3000");

  const auto entries = sandbox->listFiles("data").entries;
  ASSERT_EQ(entries.size(), 1U);
  EXPECT_EQ(entries[0].name, "blob.bin");
  EXPECT_EQ(entries[0].type, FileType::kFile);
  EXPECT_EQ(entries[0].size, 3000U);
  EXPECT_GT(entries[0].mtime, 0);

  try {
    (void)sandbox->readFile("missing.txt", 100);
    FAIL() << "expected SandboxError";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(sandbox->alive()) << "a failed file operation must not end the session";
}

TEST(DockerBackend, HasNoNetwork) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  // Neither loopback services of the host nor any other address are reachable: the sandbox has
  // no interface to send on.
  const auto result = python(*sandbox, R"py(
import socket
outcomes = []
for host in ("127.0.0.1", "10.255.255.1"):
    try:
        socket.create_connection((host, 80), timeout=2).close()
        outcomes.append(host + ":connected")
    except OSError as e:
        outcomes.append(host + ":" + type(e).__name__ + "(" + str(e.strerror) + ")")
print(";".join(outcomes))
print(sorted(name for _, name in socket.if_nameindex()), end=";")
)py");
  ASSERT_EQ(result.status, sandbox::ExecStatus::kSuccess) << result.stderr_text;
  std::printf("[ info   ] network probe: %s", result.stdout_text.c_str());
  EXPECT_EQ(result.stdout_text.find("connected"), std::string::npos) << result.stdout_text;
  EXPECT_NE(result.stdout_text.find("127.0.0.1:"), std::string::npos);
  EXPECT_NE(result.stdout_text.find("10.255.255.1:"), std::string::npos);
  EXPECT_EQ(result.stdout_text.find("eth"), std::string::npos) << result.stdout_text;
}

TEST(DockerBackend, ReportsAMemoryHogThatIsKilled) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  const std::string id = sandbox->id();
  // Under runsc the whole container is OOM-killed (not a Python MemoryError); either outcome
  // must be reported in words the user can act on.
  try {
    const auto result = python(*sandbox, "b = bytearray(2*1024**3)");
    std::printf("[ info   ] memory hog: exec returned status=%s\n",
                std::string(protocol::toString(result.status)).c_str());
    EXPECT_EQ(result.status, sandbox::ExecStatus::kError);
    EXPECT_NE(result.stderr_text.find("MemoryError"), std::string::npos) << result.stderr_text;
  } catch (const SandboxError& e) {
    std::printf("[ info   ] memory hog: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("exceeded its memory limit of 512 MiB"), std::string::npos)
        << e.what();
    EXPECT_FALSE(sandbox->alive());
    EXPECT_EQ(sandbox->stopReason().value_or(""), e.what());
    EXPECT_TRUE(goneWithin(backend.engine(), id, 10s)) << "AutoRemove should remove it";
    EXPECT_EQ(sandbox->status(), "gone");
    EXPECT_THROW((void)python(*sandbox, "1"), SandboxError);
  }
}

TEST(DockerBackend, StreamsCancelsAndTimesOut) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());

  std::mutex mutex;
  std::string streamed;
  ExecRequest streaming;
  streaming.kind = ExecKind::kShell;
  streaming.code = "for i in 1 2 3; do echo line$i; sleep 0.1; done";
  streaming.stream = true;
  CancelToken never;
  const auto result =
      sandbox->exec(streaming, never, [&](std::string_view stream, std::string_view data) {
        std::lock_guard lock(mutex);
        if (stream == "stdout") streamed.append(data);
      });
  EXPECT_EQ(result.status, sandbox::ExecStatus::kSuccess);
  EXPECT_EQ(streamed, "line1\nline2\nline3\n");

  CancelToken cancel;
  ExecRequest sleeper;
  sleeper.code = "import time\ntime.sleep(30)";
  sleeper.timeout = 60s;
  auto pending =
      std::async(std::launch::async, [&] { return sandbox->exec(sleeper, cancel, nullptr); });
  std::this_thread::sleep_for(500ms);
  const auto cancelled_at = Clock::now();
  cancel.cancel();
  const auto cancelled = pending.get();
  EXPECT_EQ(cancelled.status, sandbox::ExecStatus::kCancelled);
  EXPECT_LT(msSince(cancelled_at), 5000.0);

  const auto timed_out = run(*sandbox, ExecKind::kShell, "sleep 30", 500ms);
  EXPECT_EQ(timed_out.status, sandbox::ExecStatus::kTimeout);
  EXPECT_TRUE(sandbox->alive());
  EXPECT_EQ(python(*sandbox, "'still here'").result, "'still here'");
}

}  // namespace

#include "server/warm_pool.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "fake_backend.h"

namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return condition();
}

sandbox::SandboxSpec defaultSpec() {
  sandbox::SandboxSpec spec;
  spec.image = "sandbox-mcp/python:latest";
  spec.runtime = "runsc";
  return spec;
}

server::WarmPoolOptions fastOptions(std::size_t size) {
  server::WarmPoolOptions options;
  options.size = size;
  options.retry_delay = 5ms;
  options.max_retry_delay = 20ms;
  return options;
}

// Runs Python source with the host's python3 and returns what it printed.
std::string runPython(const std::string& code) {
  const std::string path = ::testing::TempDir() + "/preload_test.py";
  {
    std::FILE* file = std::fopen(path.c_str(), "w");
    EXPECT_NE(file, nullptr);
    std::fputs(code.c_str(), file);
    std::fclose(file);
  }
  std::FILE* pipe = ::popen(("python3 " + path).c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  EXPECT_EQ(::pclose(pipe), 0) << out;
  return out;
}

TEST(WarmPool, PreloadCodeImportsModulesWithoutBindingNames) {
  const std::string code = server::preloadCode({"json", "no_such_module_x", "xml.dom.minidom"});
  const std::string out =
      runPython(code +
                "\nimport sys\n"
                "print(sorted(k for k in globals() if not k.startswith('__')))\n"
                "print('json' in sys.modules, 'xml.dom.minidom' in sys.modules)\n");
  EXPECT_EQ(out, "['sys']\nTrue True\n") << code;
}

TEST(SameProfile, ComparesEverythingButLabels) {
  const auto base = defaultSpec();
  auto labelled = base;
  labelled.labels["sandbox-mcp.session"] = "s-1";
  EXPECT_TRUE(server::sameProfile(base, labelled));
  const std::vector<std::function<void(sandbox::SandboxSpec&)>> changes = {
      [](auto& s) { s.image = "other:1"; },
      [](auto& s) { s.runtime = "runc"; },
      [](auto& s) { s.environment["A"] = "1"; },
      [](auto& s) {
        s.volumes.push_back({"/srv/data", "/data", true});
      },
      [](auto& s) { s.limits.memory_mib = 1024; },
      [](auto& s) { s.limits.cpus = 2; },
      [](auto& s) { s.limits.pids = 10; },
      [](auto& s) { s.user = "0:0"; },
      [](auto& s) { s.workdir = "/tmp"; },
      [](auto& s) { s.read_only_root = false; },
      [](auto& s) { s.python_helper_dir = "/opt/py"; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    auto changed = base;
    changes[i](changed);
    EXPECT_FALSE(server::sameProfile(base, changed)) << "change #" << i;
  }
}

TEST(WarmPool, FillsHandsOutOnceAndRefills) {
  testing_support::FakeBackend backend;
  server::WarmPool pool(backend, defaultSpec, fastOptions(2));
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 2; }));
  EXPECT_EQ(backend.created, 2);

  auto first = pool.take(defaultSpec());
  ASSERT_NE(first, nullptr);
  auto second = pool.take(defaultSpec());
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first->id(), second->id()) << "a pooled sandbox goes to one session only";
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 2; })) << "the pool refills";
  EXPECT_EQ(backend.created, 4);
  EXPECT_EQ(pool.stats().claimed, 2U);
  first.reset();
  EXPECT_EQ(backend.live, 3) << "a released sandbox is destroyed, never returned to the pool";
}

TEST(WarmPool, OtherProfilesAreNotServed) {
  testing_support::FakeBackend backend;
  server::WarmPool pool(backend, defaultSpec, fastOptions(1));
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 1; }));
  auto other = defaultSpec();
  other.image = "python:3.12";
  EXPECT_EQ(pool.take(other), nullptr);
  EXPECT_EQ(pool.stats().misses, 1U);
  EXPECT_EQ(pool.stats().ready, 1U);
}

TEST(WarmPool, DeadSandboxesAreNeverHandedOut) {
  testing_support::FakeBackend backend;
  server::WarmPool pool(backend, defaultSpec, fastOptions(2));
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 2; }));
  backend.sandboxes_alive->store(false);  // e.g. the engine restarted and took them down
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);  // new ones live
  // take() discards both dead ones; the filler replaces them.
  EXPECT_EQ(pool.take(defaultSpec()), nullptr);
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 2; }));
  auto taken = pool.take(defaultSpec());
  ASSERT_NE(taken, nullptr);
  EXPECT_TRUE(taken->alive());
}

TEST(WarmPool, FailedCreationsBackOffAndRecover) {
  testing_support::FakeBackend backend;
  backend.fail_creates = true;
  server::WarmPool pool(backend, defaultSpec, fastOptions(1));
  ASSERT_TRUE(eventually([&] { return pool.stats().failures >= 2; }));
  EXPECT_NE(pool.stats().last_error.find("engine unavailable"), std::string::npos);
  backend.fail_creates = false;
  EXPECT_TRUE(eventually([&] { return pool.stats().ready == 1; }));
}

TEST(WarmPool, StopDestroysEveryReadySandbox) {
  testing_support::FakeBackend backend;
  server::WarmPool pool(backend, defaultSpec, fastOptions(3));
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 3; }));
  pool.stop();
  EXPECT_EQ(backend.live, 0);
  EXPECT_EQ(pool.take(defaultSpec()), nullptr);
  pool.stop();  // idempotent
}

TEST(WarmPool, WaitsForAClientBeforeTheFirstFill) {
  testing_support::FakeBackend backend;
  auto options = fastOptions(2);
  options.start_delay = server::kUntilFillNow;  // only fillNow() (or take()) ends the wait
  server::WarmPool pool(backend, defaultSpec, options);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(backend.created, 0) << "no client yet: nothing is created";
  pool.fillNow();
  ASSERT_TRUE(eventually([&] { return pool.stats().ready == 2; }));
  pool.fillNow();  // later calls change nothing
  EXPECT_EQ(backend.created, 2);
}

TEST(WarmPool, TakeEndsTheWaitForAClient) {
  testing_support::FakeBackend backend;
  auto options = fastOptions(1);
  options.start_delay = 1h;
  server::WarmPool pool(backend, defaultSpec, options);
  EXPECT_EQ(pool.take(defaultSpec()), nullptr);  // the session starts cold, the pool fills now
  EXPECT_TRUE(eventually([&] { return pool.stats().ready == 1; }));
}

TEST(WarmPool, FillsWhenNoClientCameWithinTheDelay) {
  testing_support::FakeBackend backend;
  auto options = fastOptions(1);
  options.start_delay = 20ms;
  server::WarmPool pool(backend, defaultSpec, options);
  EXPECT_TRUE(eventually([&] { return pool.stats().ready == 1; }));
}

TEST(WarmPool, StopWhileWaitingForAClientCreatesNothing) {
  testing_support::FakeBackend backend;
  auto options = fastOptions(2);
  options.start_delay = server::kUntilFillNow;
  server::WarmPool pool(backend, defaultSpec, options);
  pool.stop();  // a discover probe stopped at once: no sandbox to remove
  EXPECT_EQ(backend.created, 0);
  EXPECT_EQ(backend.live, 0);
}

}  // namespace

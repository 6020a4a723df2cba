#include "server/session_factory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "fake_backend.h"
#include "server/mcp_gateway.h"

namespace {

using namespace std::chrono_literals;
using sandbox::SandboxError;
using server::SessionOptions;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return condition();
}

class SessionFactoryTest : public ::testing::Test {
 protected:
  // No sandboxes made ahead: what the backend counts is the sessions'.
  SessionFactoryTest() { cfg.pool.size = 0; }

  server::SessionFactory& factory() {
    if (!factory_) factory_ = std::make_unique<server::SessionFactory>(cfg, backend);
    return *factory_;
  }
  // The message of the SandboxError creating a session with `options` throws; empty: none.
  std::string refusal(const SessionOptions& options) {
    try {
      (void)factory().create("alice", "a", options);
    } catch (const SandboxError& e) {
      return e.what();
    }
    return {};
  }
  sandbox::SandboxSpec lastSpec() {
    std::lock_guard lock(backend.spec_mutex);
    return backend.last_spec;
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<server::SessionFactory> factory_;  // last: destroyed before the backend
};

TEST_F(SessionFactoryTest, TheSpecComesFromTheOperatorsConfigAndTheOptions) {
  cfg.sandbox.memory_mib = 768;
  cfg.sandbox.pids_limit = 300;
  cfg.sandbox.user = "1234:1234";
  SessionOptions options;
  options.environment = {{"A", "1"}};
  options.volumes = {{"/srv/data", "/mnt/data", true}};
  const auto session = factory().create("alice", "s1", options);
  EXPECT_EQ(session->id(), "s1");
  EXPECT_EQ(session->owner(), "alice");
  EXPECT_FALSE(session->warmStart());
  EXPECT_EQ(session->mcpGateway(), nullptr) << "no mcp_allowlist, no relay";

  const auto spec = lastSpec();
  EXPECT_EQ(spec.image, cfg.sandbox.image);
  EXPECT_EQ(spec.runtime, "runsc");
  EXPECT_EQ(spec.labels.at("sandbox-mcp.session"), "s1");
  EXPECT_EQ(spec.environment.at("A"), "1");
  ASSERT_EQ(spec.volumes.size(), 1U);
  EXPECT_EQ(spec.volumes[0].container_path, "/mnt/data");
  EXPECT_EQ(spec.limits.memory_mib, 768);
  EXPECT_EQ(spec.limits.pids, 300);
  EXPECT_EQ(spec.user, "1234:1234");
  EXPECT_EQ(spec.workdir, cfg.sandbox.workdir);
  EXPECT_EQ(spec.read_only_root, cfg.sandbox.read_only_root);
}

TEST_F(SessionFactoryTest, TheRuntimeIsGvisorUnlessTheOperatorAcceptsRunc) {
  backend.runtime_names = {"runc"};
  const auto refused = refusal({});
  EXPECT_NE(refused.find("gVisor (runsc) is not registered"), std::string::npos) << refused;
  EXPECT_EQ(backend.created, 0);

  cfg.sandbox.allow_runc_fallback = true;
  factory_.reset();
  EXPECT_EQ(factory().resolveRuntime(), "runc");
  (void)factory().create("alice", "a", {});
  EXPECT_EQ(lastSpec().runtime, "runc");
}

TEST_F(SessionFactoryTest, CustomImagesNeedTheOperatorsConsentAndThePolicy) {
  SessionOptions options;
  options.image = "tools:1";
  cfg.sandbox.allow_custom_images = false;
  EXPECT_NE(refusal(options).find("sandbox.allow_custom_images"), std::string::npos);

  cfg.sandbox.allow_custom_images = true;
  cfg.sandbox.allowed_images = {"tools:1", "missing:latest"};
  EXPECT_EQ(refusal(options), "");
  EXPECT_EQ(lastSpec().image, "tools:1");

  options.image = "other:2";
  EXPECT_NE(refusal(options).find("is not allowed on this server"), std::string::npos);
  options.image = "missing:latest";
  EXPECT_NE(refusal(options).find("never pulls"), std::string::npos);
  EXPECT_EQ(backend.created, 1);
}

TEST_F(SessionFactoryTest, ADockerfileIsBuiltOnlyWhenEnabledFromAnAllowedBase) {
  SessionOptions options;
  options.dockerfile = "FROM " + cfg.sandbox.image + "\nRUN true\n";
  const auto off = refusal(options);
  EXPECT_NE(off.find("sandbox.allow_dockerfile"), std::string::npos) << off;

  cfg.sandbox.allow_dockerfile = true;
  EXPECT_EQ(refusal(options), "");
  EXPECT_EQ(lastSpec().image, "built:1");
  {
    std::lock_guard lock(backend.spec_mutex);
    EXPECT_EQ(backend.last_build.base_id, "sha256:" + cfg.sandbox.image);
    EXPECT_EQ(backend.last_build.runtime, cfg.sandbox.build_runtime);
  }

  options.dockerfile = "FROM missing:latest\n";
  EXPECT_NE(refusal(options).find("dockerfile FROM image 'missing:latest'"), std::string::npos);
}

// A fake build that runs until its token fires (at most `limit`, so that code which never
// cancels fails the test instead of hanging it); `running` turns true once it began.
std::function<std::string(const CancelToken&)> buildUntilCancelled(std::atomic<bool>& running,
                                                                   std::chrono::seconds limit) {
  return [&running, limit](const CancelToken& cancel) -> std::string {
    running = true;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!cancel.cancelled() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    if (!cancel.cancelled()) return "built:1";
    throw SandboxError("the build was stopped at the RUN step at dockerfile line 2; no image kept");
  };
}

TEST_F(SessionFactoryTest, ACancelledCallStopsItsBuildAndStartsNoSandbox) {
  cfg.sandbox.allow_dockerfile = true;
  std::atomic<bool> running{false};
  backend.on_build = buildUntilCancelled(running, 10s);
  SessionOptions options;
  options.dockerfile = "FROM " + cfg.sandbox.image + "\nRUN sleep 90\n";
  CancelToken call;
  std::thread client([&] {
    eventually([&] { return running.load(); });
    call.cancel();  // notifications/cancelled, or tasks/cancel
  });
  std::string error;
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)factory().create("alice", "a", options, &call);
  } catch (const SandboxError& e) {
    error = e.what();
  }
  client.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "the build ignored the cancel";
  EXPECT_EQ(error.rfind("cancelled: ", 0), 0U) << error;
  EXPECT_NE(error.find("line 2"), std::string::npos) << "the builder's detail is kept: " << error;
  EXPECT_EQ(backend.created, 0) << "a sandbox was started for a cancelled call";
}

TEST_F(SessionFactoryTest, StoppingTheServerStopsBuildsAndStartsNothing) {
  cfg.sandbox.allow_dockerfile = true;
  std::atomic<bool> running{false};
  backend.on_build = buildUntilCancelled(running, 10s);
  SessionOptions options;
  options.dockerfile = "FROM " + cfg.sandbox.image + "\nRUN sleep 90\n";
  std::thread drain([&] {
    eventually([&] { return running.load(); });
    factory().cancelCreations();  // a drain past shutdown.grace_s
  });
  std::string error;
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)factory().create("alice", "a", options);
  } catch (const SandboxError& e) {
    error = e.what();
  }
  drain.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "the build ignored the drain";
  EXPECT_EQ(error.rfind("the server is shutting down: the build was stopped", 0), 0U) << error;
  EXPECT_EQ(backend.created, 0);

  const auto later = refusal(SessionOptions{});
  EXPECT_EQ(later.rfind("the server is shutting down", 0), 0U) << later;
  EXPECT_EQ(backend.created, 0) << "nothing starts once the server is stopping";
}

TEST_F(SessionFactoryTest, ABuildThatEndsAsTheServerStopsStartsNoSandbox) {
  cfg.sandbox.allow_dockerfile = true;
  backend.on_build = [this](const CancelToken&) {
    factory().cancelCreations();  // the drain's grace ran out while the last step committed
    return std::string("built:1");
  };
  SessionOptions options;
  options.dockerfile = "FROM " + cfg.sandbox.image + "\nRUN true\n";
  const auto refused = refusal(options);
  EXPECT_EQ(refused.rfind("the server is shutting down", 0), 0U) << refused;
  EXPECT_EQ(backend.created, 0) << "a sandbox was started from the new image during shutdown";
}

TEST_F(SessionFactoryTest, AnAllowlistWithoutAnMcpSidecarIsRefused) {
  SessionOptions options;
  options.mcp_allowlist = nlohmann::json::array({"https://tools.example.org/mcp"});
  options.mcp_policy = server::effectivePolicy(options.mcp_allowlist, cfg.mcp.allowlist);
  ASSERT_TRUE(options.mcp_policy);
  ASSERT_FALSE(options.mcp_policy->rules.empty());
  const auto refused = refusal(options);
  EXPECT_NE(refused.find("mcp_allowlist is not available on this server"), std::string::npos)
      << refused;
  EXPECT_EQ(backend.created, 0);
}

TEST_F(SessionFactoryTest, OnlyTheDefaultProfileStartsFromTheWarmPool) {
  cfg.pool.size = 1;
  ASSERT_TRUE(eventually([&] { return factory().poolStats().ready == 1; }));
  EXPECT_EQ(lastSpec().labels.at("sandbox-mcp.pool"), "1");

  const auto warm = factory().create("alice", "w", {});
  EXPECT_TRUE(warm->warmStart());
  EXPECT_EQ(factory().poolStats().claimed, 1U);

  ASSERT_TRUE(eventually([&] { return factory().poolStats().ready == 1; }));
  SessionOptions custom;
  custom.environment = {{"A", "1"}};
  const auto cold = factory().create("alice", "c", custom);
  EXPECT_FALSE(cold->warmStart()) << "a session with its own environment starts cold";
  EXPECT_EQ(factory().poolStats().ready, 1U) << "the pooled sandbox is still there";

  factory().stop();
  EXPECT_EQ(factory().poolStats().ready, 0U);
  EXPECT_EQ(backend.live, 2) << "stop() destroys the pool, not the sessions it made";
}

TEST(SessionFactory, WithoutAPoolStatsAreZero) {
  config::ServerConfig cfg;
  cfg.pool.size = 0;
  testing_support::FakeBackend backend;
  server::SessionFactory factory(cfg, backend);
  EXPECT_EQ(factory.poolStats().ready, 0U);
  EXPECT_EQ(factory.poolStats().claimed, 0U);
  EXPECT_EQ(backend.live, 0) << "pool.size 0 creates nothing ahead";
}

}  // namespace

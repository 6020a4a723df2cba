// The Docker backend's housekeeping against the real dockerd with the real sandbox-agent:
// containers removed on destroy, after the server vanished, as orphans of dead servers and after
// failed creations; images built once (our builder, RUN under gVisor) and reused, a cancelled
// build stopped mid-step; health checks.
// A global sweep (docker_test_support.cc) fails the run if any container is left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "docker_test_support.h"
#include "sandbox/docker/image_builder.h"

namespace {

using namespace docker_test;

TEST(DockerBackend, DestroyingASandboxRemovesItsContainer) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  const std::string id = sandbox->id();
  ASSERT_TRUE(inspect(backend.engine(), id));
  const auto start = Clock::now();
  sandbox.reset();
  std::printf("[ metric ] destroy (runsc): %.1f ms\n", msSince(start));
  EXPECT_FALSE(inspect(backend.engine(), id));
}

TEST(DockerBackend, AContainerWhoseServerVanishedRemovesItself) {
  DockerBackend backend(options());
  auto sandbox = backend.create(spec());
  const std::string id = sandbox->id();
  // As if the server crashed: the attach connection closes and nobody calls DELETE.
  dynamic_cast<DockerSandbox&>(*sandbox).dropChannelForTesting();
  EXPECT_FALSE(sandbox->alive());
  const auto start = Clock::now();
  EXPECT_TRUE(goneWithin(backend.engine(), id, 15s));
  std::printf("[ metric ] agent exit + auto-removal after the channel closed: %.1f ms\n",
              msSince(start));
}

TEST(DockerBackend, RemoveOrphansLeavesLiveServersAlone) {
  DockerBackend live_server(options("it-live-" + uniqueSuffix()));
  auto sandbox = live_server.create(spec());

  // A never-started container whose owner "exited": same pid as ours but another start time,
  // which is exactly what pid reuse after a crash looks like.
  const auto self = ProcessIdentity::current();
  auto labels = ownershipLabels("it-dead-" + uniqueSuffix(), self);
  labels[kLabelPidStart] = std::to_string(self.start_ticks + 1);
  const json body = {{"Image", kImage},
                     {"Cmd", {"true"}},
                     {"Labels", labels},
                     {"HostConfig", {{"NetworkMode", "none"}}}};
  const std::string orphan =
      live_server.engine().request(Method::kPost, "/containers/create", body).json().at("Id");
  struct Guard {
    EngineClient& engine;
    std::string id;
    ~Guard() { forceRemoveContainer(engine, id); }
  } guard{live_server.engine(), orphan};

  DockerBackend restarted_server(options("it-new-" + uniqueSuffix()));
  EXPECT_GE(restarted_server.removeOrphans(), 1);
  EXPECT_FALSE(inspect(live_server.engine(), orphan)) << "the orphan should be removed";
  EXPECT_TRUE(inspect(live_server.engine(), sandbox->id()))
      << "a live server's sandbox was removed";
  EXPECT_EQ(python(*sandbox, "6*7").result, "42");
}

BuildRequest buildRequest(DockerBackend& backend, const std::string& dockerfile) {
  BuildRequest request;
  request.plan = parseBuildFile(dockerfile, 32);
  request.base_id = backend.inspectImage(request.plan.from).value().id;
  request.runtime = "runsc-build";
  request.limits = spec().limits;
  request.timeout = std::chrono::seconds(120);
  return request;
}

// Our builder (never dockerd's /build): RUN under gVisor without its root overlay, committed.
TEST(DockerBackend, BuildsImagesOnceAndUsesThem) {
  DockerBackend backend(options());
  const auto request =
      buildRequest(backend, "FROM sandbox-mcp/python:latest\nENV NONCE=" + uniqueSuffix() +
                                "\nRUN echo hi > /x && echo $NONCE > /nonce\nUSER 65534\n");
  const CancelToken never;
  auto start = Clock::now();
  const std::string tag = backend.buildImage(request, never);
  std::printf("[ metric ] buildImage (runsc-build, one RUN): %.1f ms\n", msSince(start));
  struct ImageGuard {
    EngineClient& engine;
    std::string tag;
    ~ImageGuard() {
      try {
        engine.request(Method::kDelete, "/images/" + tag + "?force=1");
      } catch (const std::exception&) {
      }
    }
  } image_guard{backend.engine(), tag};
  EXPECT_EQ(tag, "sandbox-mcp-build:" + buildContentHash(request));
  const auto facts = backend.inspectImage(tag);
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->labels.at(std::string(kLabelBuilt)), "1");
  EXPECT_EQ(facts->labels.at(std::string(kLabelBuiltBase)), request.base_id);

  start = Clock::now();
  EXPECT_EQ(backend.buildImage(request, never), tag);
  const double cached_ms = msSince(start);
  std::printf("[ metric ] buildImage cache hit: %.1f ms\n", cached_ms);
  EXPECT_LT(cached_ms, 1000.0);

  {
    SandboxSpec custom = spec();
    custom.image = tag;
    auto sandbox = backend.create(custom);
    EXPECT_EQ(sandbox->readFile("/x", 100), "hi\n");
  }

  try {
    (void)backend.buildImage(
        buildRequest(backend, "FROM sandbox-mcp/python:latest\nRUN echo oops; exit 7\n"), never);
    FAIL() << "expected SandboxError";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("failed with exit code 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("oops"), std::string::npos) << e.what();
  }
}

// Running containers of our builder (named kBuildContainerPrefix...) whose command has `part`.
std::vector<std::string> runningBuildSteps(EngineClient& engine, const std::string& part) {
  const nlohmann::json filters = {{"name", {std::string(kBuildContainerPrefix)}}};
  std::vector<std::string> ids;
  for (const auto& item :
       engine.request(Method::kGet, "/containers/json?all=1&filters=" + urlEncode(filters.dump()))
           .json()) {
    if (item.value("State", "") == "running" &&
        item.value("Command", "").find(part) != std::string::npos) {
      ids.push_back(item.at("Id").get<std::string>());
    }
  }
  return ids;
}

// A cancelled build stops its running step at once (not at the step's end or the deadline):
// the step's container is removed and no image is kept, not even the earlier step's layer.
TEST(DockerBackend, ACancelledBuildStopsItsRunningStepAndKeepsNothing) {
  const std::string instance = "it-" + uniqueSuffix();
  DockerBackend backend(options(instance));
  const auto request = buildRequest(backend, "FROM sandbox-mcp/python:latest\nRUN echo " +
                                                 uniqueSuffix() + " > /a\nRUN sleep 90\n");
  CancelToken cancel;
  std::string step;
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    const auto deadline = Clock::now() + 60s;
    while (Clock::now() < deadline && runningBuildSteps(backend.engine(), "sleep 90").empty()) {
      std::this_thread::sleep_for(50ms);
    }
    const auto steps = runningBuildSteps(backend.engine(), "sleep 90");
    if (!steps.empty()) step = steps.front();
    cancelled_at = Clock::now();
    cancel.cancel();
  });
  std::string error;
  try {
    (void)backend.buildImage(request, cancel);
  } catch (const SandboxError& e) {
    error = e.what();
  }
  const auto returned = Clock::now();
  canceller.join();
  ASSERT_FALSE(step.empty()) << "the RUN step never ran: " << error;
  const double ms = std::chrono::duration<double, std::milli>(returned - cancelled_at).count();
  std::printf("[ metric ] cancelled build returned %.1f ms after the cancel\n", ms);
  EXPECT_LT(ms, 5000.0) << "the build went on after its cancel";
  EXPECT_NE(error.find("the build was stopped at the RUN step at dockerfile line 3"),
            std::string::npos)
      << error;
  EXPECT_FALSE(inspect(backend.engine(), step)) << "the step's container was left behind";
  // Step commits carry the build containers' labels, this backend's instance among them.
  const json filters = {{"label", {std::string(kLabelInstance) + "=" + instance}}};
  EXPECT_TRUE(backend.engine()
                  .request(Method::kGet, "/images/json?all=1&filters=" + urlEncode(filters.dump()))
                  .json()
                  .empty())
      << "the committed first step was kept";
}

TEST(DockerBackend, FailedCreationsLeaveNothingBehind) {
  {
    DockerBackend backend(options());
    SandboxSpec missing = spec();
    missing.image = "sandbox-mcp/does-not-exist:latest";
    try {
      (void)backend.create(missing);
      FAIL() << "expected SandboxError";
    } catch (const SandboxError& e) {
      EXPECT_NE(std::string(e.what()).find("docker/build-images.sh"), std::string::npos)
          << e.what();
    }
  }
  {
    // Not an agent: it exits at once, so hello fails and the container must be removed.
    DockerBackendOptions not_an_agent = options();
    not_an_agent.agent_path = "/bin/true";
    not_an_agent.hello_timeout = 10s;
    DockerBackend backend(not_an_agent);
    try {
      (void)backend.create(spec());
      FAIL() << "expected SandboxError";
    } catch (const SandboxError& e) {
      std::printf("[ info   ] bad agent: %s\n", e.what());
      EXPECT_NE(std::string(e.what()).find(
                    "the sandbox agent did not start: the container exited with code 0"),
                std::string::npos)
          << e.what();
    }
  }
  // A container that exited on its own may still be "removal in progress" for a moment.
  EngineClient engine;
  const auto deadline = Clock::now() + 10s;
  while (!containersOfThisProcess(engine).empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(containersOfThisProcess(engine).empty());
}

TEST(DockerBackend, ChecksItsOwnHealth) {
  DockerBackend backend(options());
  const auto checks = backend.healthChecks();
  ASSERT_EQ(checks.size(), 6U);
  for (const auto& check : checks) {
    EXPECT_TRUE(check.ok) << check.name << ": " << check.detail;
  }
  EXPECT_EQ(checks[5].name, "cgroup freezer");
  EXPECT_EQ(checks[5].detail.find("available: idle sessions are frozen"), 0U) << checks[5].detail;
  EXPECT_NE(checks[0].detail.find("API 1.41"), std::string::npos) << checks[0].detail;
  const auto runtimes = backend.runtimes();
  EXPECT_NE(std::find(runtimes.begin(), runtimes.end(), "runsc"), runtimes.end());
  EXPECT_NE(std::find(runtimes.begin(), runtimes.end(), "runc"), runtimes.end());

  DockerBackendOptions broken = options();
  broken.host = "unix:///nonexistent/docker.sock";
  broken.default_image = "nope:latest";
  DockerBackend unreachable(broken);
  const auto failing = unreachable.healthChecks();
  ASSERT_EQ(failing.size(), 1U);
  EXPECT_FALSE(failing[0].ok);
  EXPECT_NE(failing[0].detail.find("scripts/setup.sh"), std::string::npos) << failing[0].detail;
}

}  // namespace

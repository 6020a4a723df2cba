// Attack 2 of issue 9: a model-supplied Dockerfile ran its RUN steps under runc as root with the
// host kernel and Docker's default capabilities, made dockerd fetch ADD URLs from host loopback,
// had no limits or deadline, and left its images behind for ever. Now: `dockerfile` is off by
// default; when the operator turns it on, ADD/COPY and remote FROM are refused before any engine
// call, RUN steps run under gVisor with no network and the sandbox's limits, builds have a
// deadline, and built images are garbage-collected. Nothing may leak.
#include <sys/utsname.h>

#include <chrono>

#include "build_fixture.h"
#include "sandbox/docker/docker_sandbox.h"

namespace build_attacks {
namespace {

using namespace std::chrono_literals;

constexpr const char* kBase = "FROM sandbox-mcp/python:latest\n";

class HostileDockerfile : public ServerFixture {
 protected:
  HostileDockerfile() : images_before(builtImages(backend->engine())) {}
  ~HostileDockerfile() override {
    stop();  // sessions first: they hold built images
    removeNewImages();
    // Whatever the attack, no build container survives its call.
    EXPECT_TRUE(buildContainers(backend->engine()).empty()) << "a build container leaked";
  }
  // Built images that appeared during this test (removed again at the end of it).
  std::set<std::string> newImages() {
    std::set<std::string> now;
    for (const auto& id : builtImages(backend->engine())) {
      if (!images_before.count(id)) now.insert(id);
    }
    return now;
  }
  void removeNewImages() {
    for (const auto& id : newImages()) {
      try {
        backend->engine().request(Method::kDelete, "/images/" + id + "?force=1");
      } catch (const std::exception&) {
      }
    }
  }
  void enableBuilds() { cfg.sandbox.allow_dockerfile = true; }
  // The build was refused because the engine lacks the build runtime. The refusal itself is
  // safe, but then the RUN-step attack was never tried: under scripts/test.sh (which registers
  // the runtime) that counts as a failure, never as a pass.
  bool refusedForMissingRuntime(const json& result) {
    const bool missing = result.value("isError", false) &&
                         !runtimeRegistered(cfg.sandbox.build_runtime) &&
                         text(result).find("runsc-build") != std::string::npos;
    if (missing) {
      ADD_FAILURE() << "the build runtime " << cfg.sandbox.build_runtime
                    << " is not registered with dockerd, so this attack was not tried: run "
                       "scripts/setup.sh";
    }
    return missing;
  }

  std::set<std::string> images_before;
};

TEST_F(HostileDockerfile, DockerfileIsOffByDefaultAndFetchesNothing) {
  LoopbackCanary canary;
  const std::string dockerfile = std::string(kBase) +
                                 "ADD http://127.0.0.1:" + std::to_string(canary.port()) +
                                 "/secret /h\nRUN uname -r; id; grep CapEff /proc/self/status\n";
  const auto result = call("run_shell", {{"command", "cat /h"}, {"dockerfile", dockerfile}});
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  EXPECT_NE(text(result).find("sandbox.allow_dockerfile"), std::string::npos)
      << "the refusal must say how the operator enables it: " << text(result);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(canary.connections(), 0) << "dockerd fetched the ADD URL from host loopback";
  EXPECT_TRUE(newImages().empty()) << "an image was built although builds are off";
}

TEST_F(HostileDockerfile, AddAndCopyAreRefusedAndNothingIsFetched) {
  enableBuilds();
  LoopbackCanary canary;
  const std::string url = "http://127.0.0.1:" + std::to_string(canary.port()) + "/secret";
  const std::vector<std::string> lines = {"ADD " + url + " /h", "add " + url + " /h",
                                          "COPY --from=sandbox-mcp/sidecar:latest / /s",
                                          "ONBUILD ADD " + url + " /h"};
  for (const auto& line : lines) {
    const auto result =
        call("run_shell", {{"command", "true"}, {"dockerfile", std::string(kBase) + line + "\n"}});
    EXPECT_TRUE(result.value("isError", false)) << line;
    EXPECT_NE(text(result).find("dockerfile line 2"), std::string::npos) << text(result);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(canary.connections(), 0);
  EXPECT_TRUE(newImages().empty());
}

TEST_F(HostileDockerfile, RemoteOrUnallowedFromIsRefused) {
  enableBuilds();
  LoopbackCanary canary;
  const std::string fake_registry = "127.0.0.1:" + std::to_string(canary.port());
  struct Row {
    std::string from;
    std::string expected;
  };
  for (const auto& row : {Row{fake_registry + "/evil:latest", "never pulls"},
                          Row{"docker.io/library/alpine:3.19", "never pulls"},
                          Row{"sandbox-mcp/sidecar:latest", "sandbox.allowed_images"}}) {
    const auto result = call(
        "run_shell", {{"command", "true"}, {"dockerfile", "FROM " + row.from + "\nRUN true\n"}});
    EXPECT_TRUE(result.value("isError", false)) << row.from;
    EXPECT_NE(text(result).find(row.expected), std::string::npos)
        << row.from << ": " << text(result);
  }
  EXPECT_EQ(canary.connections(), 0) << "something contacted the 'registry' on host loopback";
  EXPECT_TRUE(newImages().empty());
}

TEST_F(HostileDockerfile, RunStepsSeeGvisorNotTheHost) {
  enableBuilds();
  const auto result =
      call("run_shell",
           {{"command", "cat /facts"},
            {"dockerfile", std::string(kBase) +
                               "RUN (uname -r; id -u; grep CapEff /proc/self/status | cut -f2; "
                               "ip -o link 2>/dev/null | wc -l) > /facts\n"}});
  if (refusedForMissingRuntime(result)) {
    GTEST_LOG_(INFO) << "build refused (no build runtime): " << text(result);
    return;
  }
  ASSERT_FALSE(result.value("isError", false)) << result.dump();
  const auto facts = result["structuredContent"]["stdout"].get<std::string>();
  utsname host{};
  ::uname(&host);
  EXPECT_EQ(facts.find(host.release), std::string::npos)
      << "RUN saw the host kernel " << host.release << ": " << facts;
  // Docker's default set (a80425fb) includes NET_RAW, MKNOD, SYS_CHROOT...; ours is 0xfb.
  EXPECT_EQ(facts.find("a80425fb"), std::string::npos) << facts;
  EXPECT_NE(facts.find("00000000000000fb"), std::string::npos) << facts;
}

TEST_F(HostileDockerfile, RunawayStepsAreBoundedByLimitsAndDeadline) {
  enableBuilds();
  cfg.sandbox.build_timeout_s = 8;
  cfg.sandbox.memory_mib = 256;
  cfg.sandbox.build_max_size_mib = 16;
  const auto started = std::chrono::steady_clock::now();
  struct Row {
    const char* name;
    const char* run;
  };
  for (const auto& row : {Row{"sleep", "RUN sleep 1000"},
                          Row{"memory hog", "RUN python3 -c 'b = bytearray(2 << 30)'"},
                          Row{"fork bomb", "RUN f() { f | f & }; f; sleep 1000"},
                          Row{"disk filler", "RUN head -c 64000000 /dev/zero > /fill"}}) {
    const auto one = std::chrono::steady_clock::now();
    const auto result = call("run_shell", {{"command", "echo escaped"},
                                           {"dockerfile", std::string(kBase) + row.run + "\n"}});
    EXPECT_TRUE(result.value("isError", false)) << row.name << ": " << result.dump();
    if (refusedForMissingRuntime(result)) continue;
    EXPECT_LT(std::chrono::steady_clock::now() - one, 60s) << row.name;
    const auto message = text(result);
    EXPECT_TRUE(message.find("ran out of time") != std::string::npos ||
                message.find("failed with exit code") != std::string::npos ||
                message.find("sandbox.build_max_size_mib") != std::string::npos)
        << row.name << ": " << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 150s);
  EXPECT_TRUE(newImages().empty()) << "a failed build left images behind";
}

TEST_F(HostileDockerfile, BuiltImagesAreGarbageCollected) {
  // Three images as our builder labels them, committed directly (no build runtime needed): the
  // collector keeps the newest `max_count` and removes the rest, also at server start.
  auto& engine = backend->engine();
  const auto container = engine
                             .request(Method::kPost, "/containers/create",
                                      json{{"Image", "sandbox-mcp/python:latest"},
                                           {"Cmd", {"true"}},
                                           {"Labels", backend->containerLabels()}})
                             .json()
                             .at("Id")
                             .get<std::string>();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    const json config = {
        {"Labels",
         {{std::string(sandbox::kLabelBuilt), "1"},
          {std::string(sandbox::kLabelBuiltHash), "gc-test-" + std::to_string(i)}}}};
    ids.push_back(engine
                      .request(Method::kPost,
                               "/commit?container=" + container +
                                   "&repo=sandbox-mcp-build&tag=gc-" + std::to_string(::getpid()) +
                                   "-" + std::to_string(i),
                               config)
                      .json()
                      .at("Id")
                      .get<std::string>());
    std::this_thread::sleep_for(1100ms);  // distinct tag times
  }
  sandbox::docker::forceRemoveContainer(engine, container);

  sandbox::docker::DockerBackendOptions options;
  options.agent_path = SANDBOX_AGENT_BIN;
  options.built_images.max_count = 1;
  sandbox::docker::DockerBackend restarted(options);
  (void)restarted.removeOrphans();  // what the server runs at start
  const auto left = builtImages(engine);
  EXPECT_FALSE(left.count(ids[0])) << "the oldest built image survived the collector";
  EXPECT_FALSE(left.count(ids[1]));
  EXPECT_TRUE(left.count(ids[2]) || left.size() <= 1) << "the newest should be kept";
  for (const auto& id : ids) {
    try {
      engine.request(Method::kDelete, "/images/" + id + "?force=1");
    } catch (const std::exception&) {
    }
  }
}

}  // namespace
}  // namespace build_attacks

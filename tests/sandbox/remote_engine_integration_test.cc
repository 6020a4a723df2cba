// Sandboxes on a remote engine: a second dockerd reached only over TCP with TLS
// (scripts/tls_dockerd.sh), through the real backend, agent and runsc. The agent comes from a
// volume on that engine, frames go over the attach stream through the TLS pump, nothing of this
// host is mounted, and nothing is left on the engine but the agent volume (the cache).
// remote_engine_tls_test.cc attacks the TLS side (wrong certificates, names, plain TCP).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "sandbox/docker/docker_sidecar.h"
#include "sandbox/docker/runtime_probe.h"
#include "tls_engine_support.h"

namespace {

using namespace tls_engine;

class RemoteEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = tlsEngine();
    if (!found) GTEST_SKIP() << kNoEngine;
    engine_ = *found;
  }

  TlsEngine engine_;
};

std::vector<json> agentVolumes(EngineClient& engine) {
  const json filters = {{"label", {kLabelAgentVolume}}};
  const auto list =
      engine.request(Method::kGet, "/volumes?filters=" + urlEncode(filters.dump())).json();
  return list.value("Volumes", json::array()).get<std::vector<json>>();
}

TEST_F(RemoteEngine, RunsCodeWithTheAgentFromAVolumeAndNoHostMount) {
  DockerBackend backend(remoteOptions(engine_));
  backend.useChannelSockets(::testing::TempDir() + "never-used");  // remote: attach, logged
  const auto start = Clock::now();
  auto sandbox = backend.create(remoteSpec(engine_));
  std::printf("[ metric ] create over TLS (first, may fill the agent volume): %.1f ms\n",
              msSince(start));
  EXPECT_EQ(python(*sandbox, "6*7").result, "42");
  EXPECT_EQ(python(*sandbox, "import sandbox_mcp; sandbox_mcp.ANSWER").result, "42")
      << "the Python helpers come from the volume's python/";
  // State persists; the shell shares the filesystem.
  (void)python(*sandbox, "x = 'kept'\nopen('/workspace/f', 'w').write('from python')");
  EXPECT_EQ(python(*sandbox, "x").result, "'kept'");
  EXPECT_EQ(run(*sandbox, ExecKind::kShell, "cat /workspace/f").stdout_text, "from python");
  // /.sandbox is the read-only volume: the agent and python/, no channel directory.
  const auto listing =
      run(*sandbox, ExecKind::kShell, "ls -A /.sandbox; touch /.sandbox/x 2>&1; echo rc=$?");
  EXPECT_EQ(listing.stdout_text.rfind(".complete\nagent\npython\n", 0), 0U) << listing.stdout_text;
  EXPECT_NE(listing.stdout_text.find("Read-only file system"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "never-used"));

  const auto info = inspect(backend.engine(), sandbox->id());
  ASSERT_TRUE(info);
  const json& host = (*info)["HostConfig"];
  EXPECT_TRUE(host["Binds"].is_null() || host["Binds"].empty()) << host["Binds"];
  ASSERT_EQ(host["Mounts"].size(), 1U) << host["Mounts"];
  EXPECT_EQ(host["Mounts"][0]["Type"], "volume");
  EXPECT_EQ(host["Mounts"][0]["Target"], "/.sandbox");
  EXPECT_EQ(host["Mounts"][0]["ReadOnly"], true);
  EXPECT_EQ(host["Runtime"], "runsc");
  EXPECT_EQ(host["NetworkMode"], "none");
}

TEST_F(RemoteEngine, FilesRoundTripThroughTheTlsStream) {
  DockerBackend backend(remoteOptions(engine_));
  auto sandbox = backend.create(remoteSpec(engine_));
  std::string data(std::size_t{4} * 1024 * 1024, '\0');
  std::mt19937 random(7);
  std::generate(data.begin(), data.end(), [&] { return static_cast<char>(random()); });
  const auto write_start = Clock::now();
  EXPECT_EQ(sandbox->writeFile("/workspace/blob", data, 0644), data.size());
  const double write_ms = msSince(write_start);
  const auto read_start = Clock::now();
  EXPECT_EQ(sandbox->readFile("/workspace/blob", data.size()), data);
  std::printf("[ metric ] 4 MiB over TLS attach: write %.1f ms, read %.1f ms\n", write_ms,
              msSince(read_start));
  const auto range = sandbox->readFileRange("/workspace/blob", 1000, 10);
  EXPECT_EQ(range.data, data.substr(1000, 10));
  EXPECT_EQ(python(*sandbox, "import hashlib; len(open('/workspace/blob','rb').read())").result,
            std::to_string(data.size()));
  EXPECT_EQ(sandbox->writeFile("/workspace/empty", "", 0600), 0U);
  EXPECT_EQ(sandbox->readFile("/workspace/empty", 10), "");
}

TEST_F(RemoteEngine, AgentVolumeIsFilledOnceAndRefilledWhenCutShort) {
  auto engine = client(engine_);
  DockerBackend first(remoteOptions(engine_));
  const auto checks = first.healthChecks();  // prepares the volume, as a server's start-up does
  const auto agent = std::find_if(checks.begin(), checks.end(),
                                  [](const auto& c) { return c.name == "sandbox agent"; });
  ASSERT_NE(agent, checks.end());
  ASSERT_TRUE(agent->ok) << agent->detail;
  const auto at = agent->detail.find("sandbox-mcp-agent-");
  ASSERT_NE(at, std::string::npos) << agent->detail;
  const std::string name = agent->detail.substr(at, 34);
  const auto created = engine.request(Method::kGet, "/volumes/" + name).json().at("CreatedAt");

  DockerBackend second(remoteOptions(engine_));  // another server: reuses it as it is
  { auto sandbox = second.create(remoteSpec(engine_)); }
  EXPECT_EQ(engine.request(Method::kGet, "/volumes/" + name).json().at("CreatedAt"), created);
  const auto volumes = agentVolumes(engine);
  EXPECT_EQ(std::count_if(volumes.begin(), volumes.end(),
                          [&](const json& v) { return v.at("Name") == name; }),
            1);

  // A fill cut short (the volume exists, labelled, but without its marker) is done again.
  engine.request(Method::kDelete, "/volumes/" + name);
  const std::string hash = name.substr(std::string(kAgentVolumePrefix).size());
  engine.request(Method::kPost, "/volumes/create",
                 json{{"Name", name}, {"Labels", {{kLabelAgentVolume, hash}}}});
  DockerBackend third(remoteOptions(engine_));
  auto sandbox = third.create(remoteSpec(engine_));
  EXPECT_EQ(python(*sandbox, "1+1").result, "2");

  // A volume of that name which sandbox-mcp did not make is never used.
  sandbox.reset();
  engine.request(Method::kDelete, "/volumes/" + name);
  engine.request(Method::kPost, "/volumes/create", json{{"Name", name}});
  DockerBackend fourth(remoteOptions(engine_));
  try {
    (void)fourth.create(remoteSpec(engine_));
    ADD_FAILURE() << "used a foreign volume";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("that sandbox-mcp did not make"), std::string::npos)
        << e.what();
  }
  engine.request(Method::kDelete, "/volumes/" + name);
}

TEST_F(RemoteEngine, HostMountsAndTheSidecarAreRefusedWithWhatToUseInstead) {
  DockerBackend backend(remoteOptions(engine_));
  SandboxSpec with_volume = remoteSpec(engine_);
  with_volume.volumes = {{"/run/sandbox-mcp/x/s1/sock", "/run/mcp", true}};
  try {
    (void)backend.create(with_volume);
    ADD_FAILURE() << "a host directory was mounted on a remote engine";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("mcp_allowlist and volumes are not available with "
                                         "this server: its Docker engine (docker.host tcp://) "
                                         "runs on another machine"),
              std::string::npos)
        << e.what();
  }
  DockerSidecarOptions sidecar_options;
  sidecar_options.binary_path = SANDBOX_AGENT_PATH;  // any executable: refused before it is used
  DockerSidecarLauncher sidecars(backend.sharedEngine(), sidecar_options);
  SidecarSpec sidecar_spec;
  sidecar_spec.session_id = "s1";
  sidecar_spec.directory = "/run/sandbox-mcp/x/s1";
  try {
    (void)sidecars.launch(sidecar_spec);
    ADD_FAILURE() << "a sidecar container was started on a remote engine";
  } catch (const SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mcp_allowlist is not available with the Docker engine at tcp://"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("docker.host is a local unix:// socket"), std::string::npos) << what;
  }
  EXPECT_TRUE(containersOfThisProcess(backend.engine()).empty());
}

TEST_F(RemoteEngine, DoctorChecksTheRemoteEngine) {
  DockerBackend backend(remoteOptions(engine_));
  const auto checks = backend.healthChecks();
  std::vector<std::string> names;
  for (const auto& check : checks) {
    names.push_back(check.name);
    EXPECT_TRUE(check.ok) << check.name << ": " << check.detail;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"docker engine", "runsc runtime", "runsc --host-uds=open",
                                      "default image", "sandbox agent", "remote engine"}));
  EXPECT_NE(checks[0].detail.find(engine_.host + " over TLS"), std::string::npos)
      << checks[0].detail;
  EXPECT_NE(checks[4].detail.find("copied to volume sandbox-mcp-agent-"), std::string::npos);
  const auto listing =
      probeFileListing(backend.engine(), engine_.image, "runsc", backend.containerLabels());
  EXPECT_TRUE(listing.ok) << listing.detail;

  DockerBackendOptions no_image = remoteOptions(engine_);
  no_image.default_image = "sandbox-mcp/not-loaded:latest";
  DockerBackend missing(no_image);
  const auto failing = missing.healthChecks();
  EXPECT_FALSE(failing[3].ok);
  EXPECT_NE(failing[3].detail.find("is missing"), std::string::npos) << failing[3].detail;
}

TEST_F(RemoteEngine, PumpThreadsEndWithTheirSandboxesWhicheverSideCloses) {
  const auto settle = [](int target) {
    const auto deadline = Clock::now() + 5s;
    while (threadCount() > target && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  };
  const int before = threadCount();
  {
    DockerBackend backend(remoteOptions(engine_));
    { auto warm = backend.create(remoteSpec(engine_)); }  // the volume, the connection pool
    settle(before);
    const int baseline = threadCount();
    {
      auto a = backend.create(remoteSpec(engine_));
      auto b = backend.create(remoteSpec(engine_));
      EXPECT_EQ(python(*a, "1").result, "1");
      EXPECT_GT(threadCount(), baseline);
      // The engine's side closes: the container is killed from outside.
      backend.engine().request(Method::kPost, "/containers/" + b->id() + "/kill");
      EXPECT_THROW((void)python(*b, "2"), SandboxError);
    }  // our side closes: both sandboxes are dropped
    settle(baseline);
    EXPECT_EQ(threadCount(), baseline) << "a pump or reader thread outlived its sandbox";
  }
  EXPECT_EQ(threadCount(), before) << "idle pooled TLS connections hold no thread";
}

}  // namespace

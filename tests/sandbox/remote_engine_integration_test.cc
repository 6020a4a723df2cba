// Sandboxes on a remote engine: a second dockerd reached only over TCP with TLS
// (scripts/tls_dockerd.sh), through the real backend, agent and runsc. The agent comes from a
// volume on that engine, frames go over the attach stream through the TLS pump, nothing of this
// host is mounted, and nothing is left on the engine but the agent volume (the cache).
// Servers sharing the engine fill the agent volume once, taking turns; connections to the engine
// keep TCP keepalive on, so a vanished engine ends a session's attach stream within a minute.
// remote_engine_tls_test.cc attacks the TLS side (wrong certificates, names, plain TCP).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <latch>
#include <random>
#include <thread>

#include "sandbox/docker/agent_volume.h"
#include "sandbox/docker/docker_sidecar.h"
#include "sandbox/docker/runtime_probe.h"
#include "tls_engine_support.h"

namespace {

using namespace tls_engine;

class RemoteEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = tlsEngine();
    if (!found) GTEST_FAIL() << kNoEngine;  // a missing engine fails: nothing may skip
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
  EXPECT_EQ(names, (std::vector<std::string>{"docker engine", "runsc runtime",
                                             "runsc --host-uds=open", "default image",
                                             "sandbox agent", "cgroup freezer", "remote engine"}));
  EXPECT_NE(checks[5].detail.find("unavailable (the engine is remote"), std::string::npos)
      << checks[5].detail;
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

// The TCP sockets of this process connected to `port` on loopback.
std::vector<int> socketsTo(int port) {
  std::vector<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    sockaddr_in peer{};
    socklen_t size = sizeof(peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) == 0 &&
        peer.sin_family == AF_INET && ntohs(peer.sin_port) == port) {
      out.push_back(fd);
    }
  }
  return out;
}

int socketOption(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, level, name, &value, &size), 0) << std::strerror(errno);
  return value;
}

TEST_F(RemoteEngine, ConnectionsKeepTcpKeepaliveSoAVanishedEngineEndsASessionWithinAMinute) {
  DockerBackend backend(remoteOptions(engine_));
  auto sandbox = backend.create(remoteSpec(engine_));
  EXPECT_EQ(python(*sandbox, "1+1").result, "2");
  // The sandbox's attach stream (relayed by the TLS pump, which has no timeout of its own) and
  // the pooled request connections.
  const auto sockets = socketsTo(common::parseEngineHost(engine_.host).port);
  ASSERT_GE(sockets.size(), 2U) << "the attach stream and a pooled connection";
  for (const int fd : sockets) {
    EXPECT_EQ(socketOption(fd, SOL_SOCKET, SO_KEEPALIVE), 1) << "fd " << fd;
    // A silent peer is dropped 30 + 3 * 10 = 60 s after the last byte (Linux's default: 2 h 11).
    EXPECT_EQ(socketOption(fd, IPPROTO_TCP, TCP_KEEPIDLE), 30) << "fd " << fd;
    EXPECT_EQ(socketOption(fd, IPPROTO_TCP, TCP_KEEPINTVL), 10) << "fd " << fd;
    EXPECT_EQ(socketOption(fd, IPPROTO_TCP, TCP_KEEPCNT), 3) << "fd " << fd;
  }
}

std::string readAgent() {
  std::ifstream in(SANDBOX_AGENT_PATH, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Agent volumes no other test uses: Python modules of their own, and a label on the fill
// containers to find their events by.
struct FreshVolume {
  std::string run = uniqueSuffix();
  std::map<std::string, std::string> modules = {{"sandbox_mcp.py", "RUN = '" + run + "'\n"}};
  std::map<std::string, std::string> labels = {{"sandbox-mcp.test-fill", run}};
  std::string name = std::string(kAgentVolumePrefix) + agentVolumeHash({readAgent(), modules});
  std::string fill_container = name + std::string(kAgentVolumeFillSuffix);
};

std::int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How many archives the engine extracted into fill containers of `volume` since `since_unix`.
int fillsSince(EngineClient& engine, const FreshVolume& volume, std::int64_t since_unix) {
  const json filters = {{"type", {"container"}},
                        {"event", {"extract-to-dir"}},
                        {"label", {"sandbox-mcp.test-fill=" + volume.run}}};
  const std::string body =
      engine
          .request(Method::kGet, "/events?since=" + std::to_string(since_unix - 1) +
                                     "&until=" + std::to_string(unixNow() + 1) +
                                     "&filters=" + urlEncode(filters.dump()))
          .body;
  return static_cast<int>(std::count(body.begin(), body.end(), '\n'));
}

TEST_F(RemoteEngine, ServersFillingOneAgentVolumeAtOnceTakeTurnsAndFillItOnce) {
  auto engine = client(engine_);
  const FreshVolume volume;
  const auto since = unixNow();
  // Two replicas, each with its own engine client, asking at the same moment.
  std::latch start(2);
  std::string names[2];
  std::string errors[2];
  std::vector<std::thread> replicas;
  replicas.reserve(2);
  for (int i = 0; i < 2; ++i) {
    replicas.emplace_back([&, i] {
      auto own = client(engine_);
      AgentVolume agent(own, SANDBOX_AGENT_PATH, volume.modules, engine_.image, volume.labels);
      start.arrive_and_wait();
      try {
        names[i] = agent.ensure();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& replica : replicas) replica.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(names[0], volume.name);
  EXPECT_EQ(names[1], volume.name);
  EXPECT_EQ(fillsSince(engine, volume, since), 1) << "the archive was extracted more than once";
  EXPECT_FALSE(inspect(engine, volume.fill_container)) << "the fill container was left behind";

  // A third server finds it filled.
  AgentVolume third(engine, SANDBOX_AGENT_PATH, volume.modules, engine_.image, volume.labels);
  EXPECT_EQ(third.ensure(), volume.name);
  EXPECT_EQ(fillsSince(engine, volume, since), 1);
  engine.request(Method::kDelete, "/volumes/" + volume.name);
}

TEST_F(RemoteEngine, AFillContainerLeftBehindIsWaitedForThenRemovedOnceStale) {
  auto engine = client(engine_);
  const FreshVolume volume;
  // What a server that died mid-fill leaves: <volume>-fill, never started.
  const auto left = engine
                        .request(Method::kPost, "/containers/create?name=" + volume.fill_container,
                                 json{{"Image", engine_.image}, {"Labels", volume.labels}})
                        .json()
                        .at("Id")
                        .get<std::string>();

  // While it is young it may be a fill in progress: waited for, within the bound.
  AgentVolume patient(engine, SANDBOX_AGENT_PATH, volume.modules, engine_.image, volume.labels,
                      {std::chrono::milliseconds(1500), std::chrono::seconds(180)});
  const auto start = Clock::now();
  try {
    (void)patient.ensure();
    ADD_FAILURE() << "used a volume another server was filling";
  } catch (const SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is still being filled by another sandbox-mcp server"), std::string::npos)
        << what;
    EXPECT_NE(what.find("docker rm -f " + volume.fill_container), std::string::npos) << what;
  }
  EXPECT_GE(msSince(start), 1500.0);
  EXPECT_LT(msSince(start), 10000.0);
  EXPECT_TRUE(inspect(engine, left)) << "a young fill container was removed";

  // Once older than stale_after it is a crashed fill's: removed, and the volume filled.
  AgentVolume taking_over(engine, SANDBOX_AGENT_PATH, volume.modules, engine_.image, volume.labels,
                          {std::chrono::milliseconds(60000), std::chrono::seconds(0)});
  EXPECT_EQ(taking_over.ensure(), volume.name);
  EXPECT_FALSE(inspect(engine, left)) << "the stale fill container is still there";
  EXPECT_FALSE(inspect(engine, volume.fill_container));
  forceRemoveContainer(engine, left);
  engine.request(Method::kDelete, "/volumes/" + volume.name);
}

}  // namespace

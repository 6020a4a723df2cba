// Pure pieces of the Docker backend: create body, ownership rule, fate wording, hashing, base64.
#include <gtest/gtest.h>

#include "sandbox/docker/container_config.h"
#include "sandbox/docker/container_fate.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/ownership.h"

namespace {

using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;

SandboxSpec pythonSpec() {
  SandboxSpec spec;
  spec.image = "sandbox-mcp/python:latest";
  spec.runtime = "runsc";
  spec.environment = {{"LANG", "C.UTF-8"}};
  spec.volumes = {{"/data/in", "/in", true}, {"/data/out", "/out", false}};
  spec.user = "65534:65534";
  spec.labels = {{"team", "a"}, {kLabelInstance, "spoofed"}};
  return spec;
}

TEST(ContainerCreateBody, LocksTheContainerDown) {
  const json body = containerCreateBody(pythonSpec(), AgentMounts::fromHost("/opt/agent"),
                                        {{kLabelInstance, "me"}});
  EXPECT_EQ(body["Cmd"], json({"/.sandbox/agent", "--code-user", "65534:65534"}));
  EXPECT_EQ(body["Entrypoint"], json::array());
  EXPECT_EQ(body["Tty"], false);
  EXPECT_EQ(body["OpenStdin"], true);
  EXPECT_EQ(body["StdinOnce"], true);
  EXPECT_EQ(body["NetworkDisabled"], true);
  EXPECT_EQ(body["User"], "0:0");  // the agent drops to 65534 for everything it runs
  EXPECT_EQ(body["WorkingDir"], "/workspace");
  EXPECT_EQ(body["Env"], json({"LANG=C.UTF-8"}));
  EXPECT_EQ(body["Labels"]["team"], "a");
  EXPECT_EQ(body["Labels"][kLabelInstance], "me") << "a spec must not claim another owner";
  const json& host = body["HostConfig"];
  EXPECT_EQ(host["NetworkMode"], "none");
  EXPECT_EQ(host["Runtime"], "runsc");
  EXPECT_EQ(host["Memory"], 512LL * 1024 * 1024);
  EXPECT_EQ(host["MemorySwap"], host["Memory"]);
  EXPECT_EQ(host["NanoCpus"], 1000000000LL);
  EXPECT_EQ(host["PidsLimit"], 256);
  EXPECT_EQ(host["CapDrop"], json({"ALL"}));
  EXPECT_EQ(host["CapAdd"], json({"SETUID", "SETGID"}));
  EXPECT_EQ(host["SecurityOpt"], json({"no-new-privileges"}));
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  EXPECT_EQ(host["AutoRemove"], true);
  EXPECT_EQ(host["Binds"],
            json({"/opt/agent:/.sandbox/agent:ro", "/data/in:/in:ro", "/data/out:/out:rw"}));
  EXPECT_EQ(host["Tmpfs"]["/tmp"], "rw,nosuid,nodev,exec,size=256m,mode=1777");
  EXPECT_EQ(host["Tmpfs"]["/workspace"], "rw,nosuid,nodev,exec,size=256m,mode=1777");
}

TEST(ContainerCreateBody, WithoutACodeUserTheAgentGetsNoCapability) {
  SandboxSpec spec;
  spec.image = "img";
  spec.runtime = "runsc";
  spec.user = "";
  const json body = containerCreateBody(spec, AgentMounts::fromHost("/host/agent"), {});
  EXPECT_EQ(body["Cmd"], json({"/.sandbox/agent"}));
  EXPECT_FALSE(body.contains("User"));
  EXPECT_EQ(body["HostConfig"]["CapAdd"], json::array());
}

TEST(ContainerCreateBody, PassesTheEgressProxyToTheAgent) {
  SandboxSpec spec = pythonSpec();
  spec.egress_proxy = "3128=/run/mcp/egress.sock";
  const json body = containerCreateBody(spec, AgentMounts::fromHost("/opt/agent"), {});
  EXPECT_EQ(body["Cmd"], json({"/.sandbox/agent", "--code-user", "65534:65534", "--egress-proxy",
                               "3128=/run/mcp/egress.sock"}));
  spec.user = "";
  EXPECT_EQ(containerCreateBody(spec, AgentMounts::fromHost("/opt/agent"), {})["Cmd"],
            json({"/.sandbox/agent", "--egress-proxy", "3128=/run/mcp/egress.sock"}));
}

TEST(ContainerCreateBody, RefusesAMalformedEgressProxy) {
  SandboxSpec spec = pythonSpec();
  for (const char* value : {"3128", "=/run/s", "3128=", "3128=run/s", "port=/run/s", "-1=/run/s"}) {
    spec.egress_proxy = value;
    EXPECT_THROW((void)containerCreateBody(spec, AgentMounts::fromHost("/opt/agent"), {}),
                 SandboxError)
        << value;
  }
}

TEST(ContainerCreateBody, RefusesANonNumericCodeUser) {
  SandboxSpec spec;
  spec.image = "img";
  spec.runtime = "runsc";
  for (const char* user : {"nobody", "65534", "65534:", ":1", "1:2:3", "-1:0"}) {
    spec.user = user;
    EXPECT_THROW((void)containerCreateBody(spec, AgentMounts::fromHost("/host/agent"), {}),
                 SandboxError)
        << user;
  }
}

TEST(ContainerCreateBody, RejectsSpecsItCannotHonour) {
  struct Row {
    const char* name;
    std::function<void(SandboxSpec&)> mutate;
    const char* expected;
  };
  const std::vector<Row> rows = {
      {"no image", [](SandboxSpec& s) { s.image.clear(); }, "spec.image"},
      {"relative workdir", [](SandboxSpec& s) { s.workdir = "work"; }, "spec.workdir"},
      {"colon in volume", [](SandboxSpec& s) { s.volumes[0].host_path = "/a:b"; }, "':'"},
      {"hides agent", [](SandboxSpec& s) { s.volumes[0].container_path = "/.sandbox"; }, "agent"},
      {"tiny pids", [](SandboxSpec& s) { s.limits.pids = 4; }, "limits.pids"},
      {"bad env", [](SandboxSpec& s) { s.environment["A=B"] = "c"; }, "environment"},
  };
  for (const auto& row : rows) {
    SandboxSpec spec = pythonSpec();
    row.mutate(spec);
    try {
      (void)containerCreateBody(spec, AgentMounts::fromHost("/opt/agent"), {});
      ADD_FAILURE() << row.name << ": accepted";
    } catch (const SandboxError& e) {
      EXPECT_NE(std::string(e.what()).find(row.expected), std::string::npos)
          << row.name << ": " << e.what();
    }
  }
}

ProcessIdentity self() { return {"boot-1", "pid:[1]", 100, 5000}; }

ContainerSummary container(std::map<std::string, std::string> labels, std::string state,
                           std::int64_t created) {
  return {"c1", std::move(labels), std::move(state), created};
}

TEST(DecideOrphan, RemovesOnlyWhatNoLiveServerOwns) {
  const auto owner = [](std::int64_t pid, std::uint64_t start) {
    return std::map<std::string, std::string>{{kLabelInstance, "other"},
                                              {kLabelBootId, "boot-1"},
                                              {kLabelPidNamespace, "pid:[1]"},
                                              {kLabelPid, std::to_string(pid)},
                                              {kLabelPidStart, std::to_string(start)}};
  };
  // Live processes on "this host": pid 200 started at 7000.
  const StartTicksLookup lookup = [](std::int64_t pid) -> std::optional<std::uint64_t> {
    if (pid == 200) return 7000;
    return std::nullopt;
  };
  struct Row {
    const char* name;
    ContainerSummary container;
    bool remove;
  };
  const std::int64_t now = 1'000'000;
  const auto mine = [&](std::int64_t pid, std::uint64_t start) {
    auto labels = owner(pid, start);
    labels[kLabelInstance] = "mine";
    return labels;
  };
  auto mine_elsewhere = mine(100, 5000);
  mine_elsewhere[kLabelPidNamespace] = "pid:[2]";
  auto foreign_boot = owner(200, 7000);
  foreign_boot[kLabelBootId] = "boot-0";
  const std::vector<Row> rows = {
      {"ours", container(mine(100, 5000), "running", now), false},
      {"our instance, earlier run exited", container(mine(300, 1), "running", now), true},
      {"our instance, a live duplicate", container(mine(200, 7000), "running", now), false},
      {"our instance, earlier boot", container(mine_elsewhere, "running", now), true},
      {"our instance, no owner", container({{kLabelInstance, "mine"}}, "running", now), true},
      {"live owner", container(owner(200, 7000), "running", now), false},
      {"owner exited", container(owner(300, 1), "running", now), true},
      {"pid reused", container(owner(200, 6999), "created", now), true},
      {"other boot, running", container(foreign_boot, "running", now - 9999), false},
      {"other boot, fresh", container(foreign_boot, "created", now - 5), false},
      {"other boot, stale", container(foreign_boot, "exited", now - 9999), true},
      {"no owner, stale", container({{kLabelManaged, "1"}}, "created", now - 9999), true},
  };
  for (const auto& row : rows) {
    const auto decision = decideOrphan(row.container, "mine", self(), now, lookup);
    EXPECT_EQ(decision.remove, row.remove) << row.name << ": " << decision.reason;
    EXPECT_EQ(decision.duplicate_instance,
              std::string(row.name) == "our instance, a live duplicate")
        << row.name;
    EXPECT_FALSE(decision.reason.empty()) << row.name;
  }
}

TEST(ProcessIdentity, ReadsThisProcessFromProc) {
  const auto me = ProcessIdentity::current();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_EQ(me.boot_id.size(), 36U);
  EXPECT_EQ(me.pid_namespace.rfind("pid:[", 0), 0U);
  EXPECT_GT(me.start_ticks, 0U);
  EXPECT_EQ(processStartTicks(me.pid), me.start_ticks);
  EXPECT_EQ(processStartTicks(999999999), std::nullopt);
  const auto labels = ownershipLabels("inst", me);
  EXPECT_EQ(labels.at(kLabelManaged), "1");
  EXPECT_EQ(labels.at(kLabelPid), std::to_string(me.pid));
}

TEST(DescribeFate, SaysWhyTheSandboxStopped) {
  EXPECT_NE(describeFate({137, true}, 512).find("exceeded its memory limit of 512 MiB"),
            std::string::npos);
  // A SIGKILL the engine did not report as OOM says so first, and names memory only as a guess.
  const auto killed = describeFate({137, false}, 512);
  EXPECT_EQ(killed.find("the sandbox was killed (SIGKILL, exit code 137) and the engine reported "
                        "no out-of-memory kill"),
            0U)
      << killed;
  EXPECT_EQ(killed.find("most likely"), std::string::npos) << killed;
  EXPECT_LT(killed.find("stopped from outside"), killed.find("512 MiB may still be the cause"))
      << killed;
  EXPECT_NE(describeFate({3, false}, 512).find("exited with code 3"), std::string::npos);
}

TEST(ShortContentHash, IsTheSha256Prefix) {
  // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
  EXPECT_EQ(shortContentHash("abc"), "ba7816bf8f01cfea");
  EXPECT_EQ(shortContentHash(""), "e3b0c44298fc1c14");
}

}  // namespace

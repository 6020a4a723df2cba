// The pure parts of remote (tcp://) engines: the tar writer, the agent volume's archive and
// hash, the container body without host mounts, and the engine client's TLS refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sandbox/docker/agent_volume.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/tar_writer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;

std::string tempDir(const char* name) {
  std::string dir = ::testing::TempDir() + "remote-" + name + "-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `command` with `input` on stdin; returns its exit status.
int pipeInto(const std::string& command, const std::string& input) {
  FILE* pipe = ::popen(command.c_str(), "w");
  if (pipe == nullptr) return -1;
  std::fwrite(input.data(), 1, input.size(), pipe);
  return ::pclose(pipe);
}

unsigned octal(const std::string& block, std::size_t offset, std::size_t size) {
  return static_cast<unsigned>(std::stoul(block.substr(offset, size), nullptr, 8));
}

TEST(TarWriter, WritesUstarHeadersWithValidChecksums) {
  const std::string archive =
      ustarArchive({{"dir", "", 0755, true}, {"dir/f", "hello", 0640, false}});
  ASSERT_EQ(archive.size(), 512U * 5);  // dir header, file header, one data block, two zeros
  const std::string dir = archive.substr(0, 512);
  const std::string file = archive.substr(512, 512);
  EXPECT_EQ(dir.substr(0, 5), std::string("dir/\0", 5));
  EXPECT_EQ(dir[156], '5');
  EXPECT_EQ(file.substr(0, 6), std::string("dir/f\0", 6));
  EXPECT_EQ(file[156], '0');
  EXPECT_EQ(file.substr(257, 8), std::string("ustar\0"
                                             "00",
                                             8));
  EXPECT_EQ(octal(file, 100, 7), 0640U);
  EXPECT_EQ(octal(file, 124, 11), 5U);
  for (const std::string& header : {dir, file}) {
    unsigned sum = 0;
    for (std::size_t i = 0; i < 512; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
    }
    EXPECT_EQ(octal(header, 148, 6), sum);
  }
  EXPECT_EQ(archive.substr(1024, 5), "hello");
  EXPECT_EQ(archive.substr(std::size_t{3} * 512), std::string(1024, '\0'));
  EXPECT_EQ(ustarArchive({}), std::string(1024, '\0'));
}

TEST(TarWriter, GnuTarExtractsWhatItWrites) {
  const std::string dir = tempDir("tar");
  const std::string deep = std::string(90, 'd') + "/" + std::string(60, 'e') + "/file.bin";
  std::string binary(70000, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 31);
  const std::string archive = ustarArchive({{"bin", "", 0755, true},
                                            {"bin/tool", "#!/bin/sh\necho hi\n", 0755, false},
                                            {"empty", "", 0600, false},
                                            {deep, binary, 0644, false}});
  ASSERT_EQ(pipeInto("tar -x --no-same-owner -f - -C " + dir, archive), 0);
  EXPECT_EQ(readFile(dir + "/bin/tool"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(fs::status(dir + "/bin/tool").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(fs::status(dir + "/empty").permissions() & fs::perms::all, fs::perms(0600));
  EXPECT_EQ(fs::file_size(dir + "/empty"), 0U);
  EXPECT_EQ(readFile(dir + "/" + deep), binary) << "a path over 100 bytes goes through prefix";
  fs::remove_all(dir);
}

TEST(TarWriter, RefusesPathsOutsideTheArchive) {
  const std::vector<std::string> paths = {"",
                                          "/etc/passwd",
                                          "..",
                                          "../x",
                                          "a/../../x",
                                          "a/..",
                                          std::string("a\0b", 3),
                                          std::string(300, 'x')};
  for (const auto& path : paths) {
    EXPECT_THROW((void)ustarArchive({{path, "x", 0644, false}}), SandboxError) << path;
  }
}

TEST(AgentVolume, ArchiveHoldsTheAgentAndModulesWithTheMarkerLast) {
  const AgentVolumeContents contents{"ELF...agent", {{"sandbox_mcp.py", "X = 1\n"}}};
  const std::string hash = agentVolumeHash(contents);
  EXPECT_EQ(hash.size(), 16U);
  const std::string dir = tempDir("volume");
  ASSERT_EQ(pipeInto("tar -x --no-same-owner -f - -C " + dir, agentVolumeArchive(contents, hash)),
            0);
  EXPECT_EQ(readFile(dir + "/agent"), "ELF...agent");
  EXPECT_EQ(fs::status(dir + "/agent").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(readFile(dir + "/python/sandbox_mcp.py"), "X = 1\n");
  EXPECT_EQ(readFile(dir + "/.complete"), hash + "\n");
  fs::remove_all(dir);
  // The marker is the archive's last entry: a fill cut short has none and is redone.
  const std::string archive = agentVolumeArchive(contents, hash);
  EXPECT_GT(archive.rfind(".complete"), archive.rfind("ELF...agent"));

  EXPECT_NE(agentVolumeHash({"ELF...agent2", contents.python_modules}), hash);
  EXPECT_NE(agentVolumeHash({"ELF...agent", {{"sandbox_mcp.py", "X = 2\n"}}}), hash);
  EXPECT_NE(agentVolumeHash({"ELF...agent", {}}), hash);
  EXPECT_EQ(agentVolumeHash(contents), hash);
  EXPECT_THROW((void)agentVolumeArchive({"a", {{"../evil.py", ""}}}, hash), SandboxError);
}

SandboxSpec remoteSpec() {
  SandboxSpec spec;
  spec.image = "img";
  spec.runtime = "runsc";
  spec.python_helper_dir = "/run/x/python";
  return spec;
}

TEST(ContainerCreateBody, ARemoteEngineMountsTheAgentVolumeAndNoHostPath) {
  const json body =
      containerCreateBody(remoteSpec(), AgentMounts::fromVolume("sandbox-mcp-agent-0123"), {});
  const json& host = body["HostConfig"];
  EXPECT_EQ(host["Binds"], json::array());
  EXPECT_EQ(host["Mounts"], json::parse(R"([{"Type": "volume", "Source": "sandbox-mcp-agent-0123",
      "Target": "/.sandbox", "ReadOnly": true, "VolumeOptions": {"NoCopy": true}}])"));
  EXPECT_EQ(body["Cmd"], json({"/.sandbox/agent"}));
  const json& env = body["Env"];
  EXPECT_NE(std::find(env.begin(), env.end(), "PYTHONPATH=/.sandbox/python"), env.end());
  // A local engine gets binds and no volume.
  const json local =
      containerCreateBody(remoteSpec(), AgentMounts::fromHost("/opt/agent", "/run/c/x"), {});
  EXPECT_EQ(local["HostConfig"]["Mounts"], json::array());
  EXPECT_EQ(local["HostConfig"]["Binds"],
            json({"/opt/agent:/.sandbox/agent:ro", "/run/c/x:/.sandbox/channel:ro",
                  "/run/x/python:/.sandbox/python:ro"}));
}

TEST(ContainerCreateBody, ARemoteEngineRefusesHostVolumesAndSaysWhatToUse) {
  SandboxSpec spec = remoteSpec();
  spec.volumes = {{"/run/sandbox-mcp/i/s/sock", "/run/mcp", true}};
  try {
    (void)containerCreateBody(spec, AgentMounts::fromVolume("v"), {});
    FAIL() << "a host path was mounted on a remote engine";
  } catch (const SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/run/sandbox-mcp/i/s/sock"), std::string::npos) << what;
    EXPECT_NE(what.find("another machine"), std::string::npos) << what;
    EXPECT_NE(what.find("mcp_allowlist"), std::string::npos) << what;
    EXPECT_NE(what.find("unix://"), std::string::npos) << what;
  }
}

std::string errorOf(const EngineClientOptions& options) {
  try {
    EngineClient client(options);
  } catch (const SandboxError& e) {
    return e.what();
  }
  return "";
}

TEST(EngineClient, NeverSpeaksToATcpEngineWithoutClientCertificates) {
  EngineClientOptions options;
  options.endpoint = common::parseEngineHost("tcp://127.0.0.1:2376");
  EXPECT_NE(errorOf(options).find("docker.tls.ca_file is required for a tcp:// engine"),
            std::string::npos)
      << errorOf(options);
  const std::string dir = tempDir("tls");
  std::ofstream(dir + "/ca.pem") << "not a certificate\n";
  options.tls = {dir + "/ca.pem", dir + "/missing-cert.pem", dir + "/key.pem"};
  EXPECT_NE(errorOf(options).find("cannot read docker.tls.cert_file " + dir + "/missing-cert.pem"),
            std::string::npos)
      << errorOf(options);
  std::ofstream(dir + "/missing-cert.pem") << "x\n";
  std::ofstream(dir + "/key.pem") << "x\n";
  EXPECT_NE(errorOf(options).find("cannot use docker.tls.ca_file " + dir + "/ca.pem"),
            std::string::npos)
      << errorOf(options);
  fs::remove_all(dir);

  EngineClientOptions local;
  local.tls.ca_file = "/etc/ssl/ca.pem";
  EXPECT_NE(errorOf(local).find("TLS files are for tcp:// engines"), std::string::npos);
}

}  // namespace

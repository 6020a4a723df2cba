// McpServer's sandbox checks through McpEndpoint over in-memory sandboxes (FakeBackend): missing
// images and refused volumes, no gVisor, Dockerfile builds off by default and checked before the
// backend sees them, allowed images, and the runc fallback only when the operator opts in.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "mcp_server_fixture.h"

namespace {

using mcp_test::McpServerTest;

TEST_F(McpServerTest, MissingImageAndVolumesAreRefused) {
  initialize(*endpoint);
  auto image = call(*endpoint, "run_code", {{"code", "x"}, {"image", "missing:latest"}});
  EXPECT_TRUE(image["isError"]);
  EXPECT_NE(image["content"][0]["text"].get<std::string>().find("never pulls"), std::string::npos);
  auto volumes =
      call(*endpoint, "run_code", {{"code", "x"}, {"volumes", {{"/etc", {{"bind", "/mnt/etc"}}}}}});
  EXPECT_TRUE(volumes["isError"]);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, MissingGvisorRefusesByDefault) {
  backend.runtime_names = {"runc"};
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code", {{"code", "x"}});
  EXPECT_TRUE(refused["isError"]);
  const auto text = refused["content"][0]["text"].get<std::string>();
  EXPECT_NE(text.find("scripts/setup.sh"), std::string::npos) << text;
  EXPECT_NE(text.find("allow_runc_fallback"), std::string::npos) << text;
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, DockerfileIsOffUnlessTheOperatorEnablesIt) {
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code",
                      {{"code", "x"}, {"dockerfile", "FROM sandbox-mcp/python:latest\n"}});
  EXPECT_TRUE(refused["isError"]);
  EXPECT_NE(refused["content"][0]["text"].get<std::string>().find("sandbox.allow_dockerfile"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, DockerfileBuildsAreCheckedBeforeTheBackendSeesThem) {
  cfg.sandbox.allow_dockerfile = true;
  initialize(*endpoint);
  const auto error = [&](const std::string& dockerfile) {
    auto r = call(*endpoint, "run_code", {{"code", "x"}, {"dockerfile", dockerfile}});
    EXPECT_TRUE(r["isError"]) << dockerfile;
    return r["content"][0]["text"].get<std::string>();
  };
  EXPECT_NE(
      error("FROM sandbox-mcp/python:latest\nADD http://127.0.0.1:1/x /x\n").find("ADD is refused"),
      std::string::npos);
  EXPECT_NE(error("FROM other:latest\nRUN true\n").find("sandbox.allowed_images"),
            std::string::npos);
  EXPECT_NE(error("FROM missing:latest\n").find("never pulls"), std::string::npos);
  EXPECT_TRUE(backend.last_build.plan.from.empty()) << "a refused build reached the backend";

  auto built = call(*endpoint, "run_code",
                    {{"code", "x"}, {"dockerfile", "FROM sandbox-mcp/python\nRUN true\n"}});
  EXPECT_FALSE(built["isError"]) << built.dump();
  EXPECT_EQ(backend.last_build.runtime, "runsc-build");
  EXPECT_EQ(backend.last_build.base_id, "sha256:sandbox-mcp/python");
  EXPECT_EQ(backend.last_build.limits.memory_mib, cfg.sandbox.memory_mib);
  EXPECT_EQ(backend.last_build.timeout, std::chrono::seconds(300));
  EXPECT_EQ(backend.last_spec.image, "built:1");
}

TEST_F(McpServerTest, OnlyAllowedImagesRun) {
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code", {{"code", "x"}, {"image", "other:latest"}});
  EXPECT_TRUE(refused["isError"]);
  EXPECT_NE(refused["content"][0]["text"].get<std::string>().find("sandbox.allowed_images"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
  cfg.sandbox.allowed_images = {"other:*"};
  EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}, {"image", "other:latest"}})["isError"]);
  EXPECT_EQ(backend.last_spec.image, "other:latest");
}

TEST_F(McpServerTest, FallsBackToRuncOnlyWhenTheOperatorOptsIn) {
  backend.runtime_names = {"runc"};
  cfg.sandbox.allow_runc_fallback = true;
  initialize(*endpoint);
  EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}})["isError"]);
  EXPECT_EQ(backend.last_spec.runtime, "runc");
}

}  // namespace

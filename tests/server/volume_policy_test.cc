#include "server/volume_policy.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class VolumePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("volume-policy-" + std::to_string(::getpid()));
    fs::create_directories(root / "data" / "sub");
    fs::create_directories(root / "rw");
    fs::create_directories(root / "secret");
    fs::create_symlink(root / "secret", root / "data" / "escape");
    allowed = {{(root / "data").string(), false}, {(root / "rw").string(), true}};
  }
  void TearDown() override { fs::remove_all(root); }

  std::string errorOf(const json& volumes) {
    try {
      (void)server::resolveVolumes(volumes, allowed, "/workspace");
    } catch (const sandbox::SandboxError& e) {
      return e.what();
    }
    return "";
  }

  fs::path root;
  std::vector<config::AllowedHostDir> allowed;
};

TEST_F(VolumePolicyTest, AllowsReadOnlyUnderAllowedDir) {
  const auto mounts = server::resolveVolumes(
      {{(root / "data" / "sub").string(), {{"bind", "/mnt/data"}}}}, allowed, "/workspace");
  ASSERT_EQ(mounts.size(), 1U);
  EXPECT_EQ(mounts[0].host_path, (root / "data" / "sub").string());
  EXPECT_EQ(mounts[0].container_path, "/mnt/data");
  EXPECT_TRUE(mounts[0].read_only);
}

TEST_F(VolumePolicyTest, RwOnlyWhereAllowed) {
  const auto mounts = server::resolveVolumes(
      {{(root / "rw").string(), {{"bind", "/mnt/out"}, {"mode", "rw"}}}}, allowed, "/workspace");
  EXPECT_FALSE(mounts.at(0).read_only);
  EXPECT_NE(errorOf({{(root / "data").string(), {{"bind", "/mnt/d"}, {"mode", "rw"}}}})
                .find("mode \"rw\" is not allowed"),
            std::string::npos);
}

TEST_F(VolumePolicyTest, RefusesEverythingElse) {
  const std::pair<json, const char*> rows[] = {
      {{{(root / "secret").string(), {{"bind", "/mnt/s"}}}}, "outside the host directories"},
      {{{(root / "data" / "escape").string(), {{"bind", "/mnt/s"}}}},
       "outside the host directories"},  // symlink out of an allowed dir
      {{{(root / "data" / ".." / "secret").string(), {{"bind", "/mnt/s"}}}},
       "outside the host directories"},
      {{{(root / "data" / "nope").string(), {{"bind", "/mnt/s"}}}},
       "must be an absolute path that exists"},
      {{{"relative/dir", {{"bind", "/mnt/s"}}}}, "must be an absolute path that exists"},
      {{{(root / "data").string(), {{"bind", "/proc/x"}}}}, "is not allowed"},
      {{{(root / "data").string(), {{"bind", "/.sandbox"}}}}, "is not allowed"},
      {{{(root / "data").string(), {{"bind", "relative"}}}}, "is not allowed"},
      {{{(root / "data").string(), {{"bind", "/workspace"}}}}, "working directory"},
      {{{(root / "data").string(), {{"mode", "ro"}}}}, "expected {\"bind\""},
  };
  for (const auto& [volumes, expected] : rows) {
    EXPECT_NE(errorOf(volumes).find(expected), std::string::npos)
        << volumes.dump() << " -> " << errorOf(volumes);
  }
}

TEST_F(VolumePolicyTest, DisabledWhenOperatorAllowedNothing) {
  allowed.clear();
  EXPECT_NE(
      errorOf({{(root / "data").string(), {{"bind", "/mnt/d"}}}}).find("volumes are disabled"),
      std::string::npos);
  EXPECT_TRUE(server::resolveVolumes(json::object(), allowed, "/workspace").empty());
}

}  // namespace

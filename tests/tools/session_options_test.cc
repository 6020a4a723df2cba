#include "tools/session_options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sandbox/backend.h"

namespace {

using nlohmann::json;
using tools::parseSessionOptions;

// The message of the SandboxError parsing `arguments` throws; empty: none.
std::string refusal(const json& arguments, const config::ServerConfig& cfg) {
  try {
    (void)parseSessionOptions(arguments, cfg);
  } catch (const sandbox::SandboxError& e) {
    return e.what();
  }
  return {};
}

TEST(SessionOptions, NoneGivenMeansTheDefaults) {
  const config::ServerConfig cfg;
  const auto parsed = parseSessionOptions({{"code", "1"}, {"session_id", "a"}}, cfg);
  EXPECT_FALSE(parsed.given) << "session_id and code are not session options";
  EXPECT_TRUE(parsed.options.image.empty());
  EXPECT_TRUE(parsed.options.environment.empty());
  EXPECT_TRUE(parsed.options.volumes.empty());
  EXPECT_EQ(parsed.options.mcp_policy, nullptr);
}

TEST(SessionOptions, TheDefaultImageSpelledOutIsTheDefault) {
  const config::ServerConfig cfg;
  const auto same = parseSessionOptions({{"image", cfg.sandbox.image}}, cfg);
  EXPECT_TRUE(same.given);
  EXPECT_TRUE(same.options.image.empty()) << "so it matches a session created without image";
  const auto other = parseSessionOptions({{"image", "tools:1"}}, cfg);
  EXPECT_EQ(other.options.image, "tools:1");
  const auto built = parseSessionOptions({{"dockerfile", "FROM x\n"}}, cfg);
  EXPECT_TRUE(built.given);
  EXPECT_EQ(built.options.dockerfile, "FROM x\n");
}

TEST(SessionOptions, EnvironmentNamesMustBeUsable) {
  const config::ServerConfig cfg;
  const auto parsed = parseSessionOptions({{"environment", {{"A", "1"}, {"B_2", ""}}}}, cfg);
  EXPECT_TRUE(parsed.given);
  EXPECT_EQ(parsed.options.environment.at("A"), "1");
  EXPECT_EQ(parsed.options.environment.at("B_2"), "");
  EXPECT_NE(refusal({{"environment", {{"A=B", "1"}}}}, cfg).find("invalid variable name \"A=B\""),
            std::string::npos);
  EXPECT_NE(refusal({{"environment", {{"", "1"}}}}, cfg).find("invalid variable name"),
            std::string::npos);
  EXPECT_NE(refusal({{"environment", {{"A", std::string("x\0y", 3)}}}}, cfg).find("invalid"),
            std::string::npos);
}

TEST(SessionOptions, VolumesGoThroughTheOperatorsPolicy) {
  config::ServerConfig cfg;
  const json volumes = {{std::filesystem::temp_directory_path().string(), {{"bind", "/mnt/data"}}}};
  EXPECT_NE(refusal({{"volumes", volumes}}, cfg).find("volumes are disabled on this server"),
            std::string::npos);

  cfg.volumes.allowed_host_dirs = {{std::filesystem::temp_directory_path().string(), false}};
  const auto parsed = parseSessionOptions({{"volumes", volumes}}, cfg);
  EXPECT_TRUE(parsed.given);
  ASSERT_EQ(parsed.options.volumes.size(), 1U);
  EXPECT_EQ(parsed.options.volumes[0].container_path, "/mnt/data");
  EXPECT_TRUE(parsed.options.volumes[0].read_only) << "read-only unless rw is asked and allowed";
  const json rw = {
      {std::filesystem::temp_directory_path().string(), {{"bind", "/mnt/data"}, {"mode", "rw"}}}};
  EXPECT_NE(refusal({{"volumes", rw}}, cfg).find("mode \"rw\" is not allowed"), std::string::npos);
}

TEST(SessionOptions, AnAllowlistBecomesThePolicyTheRelayEnforces) {
  const config::ServerConfig cfg;
  const auto empty = parseSessionOptions({{"mcp_allowlist", json::array()}}, cfg);
  EXPECT_TRUE(empty.given);
  EXPECT_EQ(empty.options.mcp_policy, nullptr) << "an empty list: no relay at all";

  const json list = json::array({"https://tools.example.org/mcp"});
  const auto parsed = parseSessionOptions({{"mcp_allowlist", list}}, cfg);
  EXPECT_EQ(parsed.options.mcp_allowlist, list) << "kept as the call gave it";
  ASSERT_NE(parsed.options.mcp_policy, nullptr);
  EXPECT_EQ(parsed.options.mcp_policy->rules.size(), 1U);
}

TEST(SessionOptions, SchemaPropertiesNameEveryOption) {
  const json properties = tools::sessionOptionProperties();
  for (const char* name :
       {"session_id", "image", "dockerfile", "environment", "volumes", "mcp_allowlist"}) {
    ASSERT_TRUE(properties.contains(name)) << name;
    EXPECT_TRUE(properties[name].contains("description")) << name;
  }
  EXPECT_EQ(properties["session_id"]["maxLength"], 128);
  EXPECT_EQ(properties["session_id"]["x-mcp-header"], "Session-Id");
}

}  // namespace

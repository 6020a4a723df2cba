// Every weakening of the secure defaults is said out loud at start (config::weakenings), and the
// defaults say nothing.
#include "config/weakenings.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using nlohmann::json;

TEST(Weakenings, DefaultsWeakenNothing) {
  EXPECT_TRUE(config::weakenings(config::fromJson(json::object())).empty());
}

TEST(Weakenings, EachOptInIsNamed) {
  struct Case {
    json document;
    const char* setting;
  };
  const Case cases[] = {
      {{{"sandbox", {{"runtime", "runc"}}}}, "sandbox.runtime is runc"},
      {{{"sandbox", {{"allow_runc_fallback", true}}}}, "sandbox.allow_runc_fallback"},
      {{{"sandbox", {{"user", ""}}}}, "sandbox.user is empty"},
      {{{"sandbox", {{"read_only_root", false}}}}, "sandbox.read_only_root is off"},
      {{{"sandbox", {{"allow_dockerfile", true}}}}, "sandbox.allow_dockerfile is on"},
      {{{"sandbox", {{"allow_dockerfile", true}, {"build_runtime", "runc"}}}},
       "sandbox.build_runtime is runc"},
      {{{"sandbox", {{"allowed_images", {"team/py:*"}}}}}, "models may run team/py:*"},
      {{{"sandbox", {{"allowed_image_label", "sandbox=ok"}}}}, "labelled sandbox=ok"},
      {{{"volumes", {{"allowed_host_dirs", {{{"path", "/data"}, {"allow_rw", true}}}}}}},
       "may mount /data read-write"},
      {{{"mcp", {{"allowlist", {"http://127.0.0.1:9000/mcp"}}}}}, "mcp.allowlist"},
      {{{"mcp", {{"sidecar", {{"mode", "process"}}}}}}, "mcp.sidecar.mode is process"},
      {{{"preview", {{"listen", "127.0.0.1:8766"}}}}, "preview.listen is 127.0.0.1:8766"},
  };
  for (const auto& c : cases) {
    const auto lines = config::weakenings(config::fromJson(c.document));
    ASSERT_FALSE(lines.empty()) << c.document;
    bool named = false;
    for (const auto& line : lines) {
      EXPECT_EQ(line.rfind("WEAKENED: ", 0), 0U) << line;
      named = named || line.find(c.setting) != std::string::npos;
    }
    EXPECT_TRUE(named) << c.setting << " not in: " << lines.front();
  }
}

// The preview line says where previews are reached and under which domain their links are.
TEST(Weakenings, PreviewListenNamesItsAddressAndDomain) {
  const auto lines = config::weakenings(config::fromJson(
      {{"preview", {{"listen", "0.0.0.0:8766"}, {"domain", "preview.example.com"}}}}));
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0].rfind("WEAKENED: preview.listen is 0.0.0.0:8766: ", 0), 0U) << lines[0];
  EXPECT_NE(lines[0].find("expose_port"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("<label>.preview.example.com"), std::string::npos) << lines[0];
}

}  // namespace

#include "tools/tool_registry.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "config/config.h"
#include "tool_test_support.h"
#include "tools/builtin_tools.h"

namespace {

using nlohmann::json;

tools::Tool echoTool(tools::TaskSupport tasks = tools::TaskSupport::kForbidden) {
  tools::ToolSpec spec{"echo",
                       "Echo",
                       "Returns its text.",
                       {{"type", "object"},
                        {"properties", {{"text", {{"type", "string"}}}}},
                        {"required", {"text"}}},
                       {{"type", "object"}}};
  spec.task_support = tasks;
  return tools::Tool{std::move(spec), [](const json& arguments, tools::ToolContext&) {
                       const std::string text = arguments.at("text");
                       if (text == "sandbox") throw sandbox::SandboxError("the sandbox is gone");
                       if (text == "bug") throw std::runtime_error("vector::at");
                       tools::ToolResult result;
                       result.text = text;
                       result.structured = {{"text", text}};
                       return result;
                     }};
}

TEST(ToolRegistry, FindsByNameAndRefusesATwin) {
  tools::ToolRegistry registry;
  registry.add(echoTool());
  ASSERT_NE(registry.find("echo"), nullptr);
  EXPECT_EQ(registry.find("echo")->spec.title, "Echo");
  EXPECT_EQ(registry.find("nope"), nullptr);
  EXPECT_THROW(registry.add(echoTool()), std::logic_error);
  EXPECT_EQ(registry.names(), "echo");
}

TEST(ToolRegistry, ListShowsWhatClientsNeed) {
  tools::ToolRegistry registry;
  registry.add(echoTool(tools::TaskSupport::kOptional));
  auto plain = echoTool();
  plain.spec.name = "plain";
  plain.spec.annotations = {{"readOnlyHint", true}};
  registry.add(std::move(plain));
  EXPECT_EQ(registry.names(), "echo, plain");

  const json list = registry.list();
  ASSERT_EQ(list["tools"].size(), 2U);
  const json& echo = list["tools"][0];
  EXPECT_EQ(echo["name"], "echo");
  EXPECT_EQ(echo["description"], "Returns its text.");
  EXPECT_EQ(echo["inputSchema"]["required"], json::array({"text"}));
  EXPECT_EQ(echo["outputSchema"]["type"], "object");
  EXPECT_EQ(echo["execution"]["taskSupport"], "optional");
  EXPECT_FALSE(echo.contains("annotations")) << "none given: none listed";
  const json& second = list["tools"][1];
  EXPECT_EQ(second["execution"]["taskSupport"], "forbidden");
  EXPECT_EQ(second["annotations"]["readOnlyHint"], true);
}

TEST(ToolRegistry, CallingChecksArgumentsAndTurnsFailuresIntoResults) {
  testing_support::ToolHarness harness;
  auto ctx = harness.context();
  const auto tool = echoTool();

  const auto ok = tools::callTool(tool, {{"text", "hi"}}, ctx);
  EXPECT_FALSE(ok.is_error);
  EXPECT_EQ(ok.structured["text"], "hi");

  const auto invalid = tools::callTool(tool, {{"text", 5}}, ctx);
  EXPECT_TRUE(invalid.is_error);
  EXPECT_EQ(invalid.text.rfind("Invalid arguments for echo: ", 0), 0U) << invalid.text;

  const auto sandbox_error = tools::callTool(tool, {{"text", "sandbox"}}, ctx);
  EXPECT_TRUE(sandbox_error.is_error);
  EXPECT_EQ(sandbox_error.text, "the sandbox is gone");

  const auto bug = tools::callTool(tool, {{"text", "bug"}}, ctx);
  EXPECT_TRUE(bug.is_error);
  EXPECT_NE(bug.text.find("Internal error in echo: vector::at"), std::string::npos) << bug.text;
  EXPECT_NE(bug.text.find("still running"), std::string::npos);
}

TEST(ToolRegistry, TheBuiltinToolsAreRegisteredOnceWithValidSpecs) {
  const config::ServerConfig cfg;
  tools::ToolRegistry registry;
  tools::registerBuiltinTools(registry, cfg);
  for (const char* name : {"run_code", "run_shell", "upload_file", "download_file", "list_files",
                           "list_sessions", "get_session_stats", "cleanup_session",
                           "snapshot_session", "fork_session", "restore_session"}) {
    const tools::Tool* tool = registry.find(name);
    ASSERT_NE(tool, nullptr) << name;
    EXPECT_EQ(tool->spec.input_schema["type"], "object") << name;
    EXPECT_EQ(tool->spec.output_schema["type"], "object") << name;
  }
  EXPECT_EQ(registry.find("run_code")->spec.task_support, tools::TaskSupport::kOptional);
  EXPECT_EQ(registry.find("list_files")->spec.task_support, tools::TaskSupport::kForbidden);
}

TEST(ToolRegistry, BuiltinToolsUseTheSessionServiceOfTheirOwner) {
  testing_support::ToolHarness harness;
  tools::ToolRegistry registry;
  tools::registerBuiltinTools(registry, harness.cfg);
  auto ctx = harness.context();
  const auto ran = tools::callTool(*registry.find("run_code"), {{"code", "x = 1"}}, ctx);
  ASSERT_FALSE(ran.is_error) << ran.text;
  const std::string id = ran.structured["session_id"];
  EXPECT_NO_THROW((void)harness.sessions().find("alice", id));
  EXPECT_THROW((void)harness.sessions().find("bob", id), sandbox::SandboxError);

  const auto listed = tools::callTool(*registry.find("list_sessions"), json::object(), ctx);
  ASSERT_EQ(listed.structured["sessions"].size(), 1U);
  const auto cleaned =
      tools::callTool(*registry.find("cleanup_session"), {{"session_id", id}}, ctx);
  EXPECT_FALSE(cleaned.is_error) << cleaned.text;
  EXPECT_EQ(harness.backend.live, 0);
}

}  // namespace

// McpServer sessions through McpEndpoint over in-memory sandboxes (FakeBackend): protocol version
// negotiation, initialize first, the tool list, call errors, sessions created, reused and owned,
// options fixed at creation, the session limit, and sandboxes that died between calls.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcp_server_fixture.h"

namespace {

using jsonrpc::json;
using mcp_test::McpServerTest;

TEST_F(McpServerTest, NegotiatesProtocolVersion) {
  auto reply = request(*endpoint, "initialize", {{"protocolVersion", "2025-03-26"}});
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "sandbox-mcp");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  auto other = server->open("owner-b");
  reply = request(*other, "initialize", {{"protocolVersion", "1999-01-01"}});
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
  reply = request(*other, "initialize", json::object());
  EXPECT_EQ(reply["error"]["code"], -32602);
}

TEST_F(McpServerTest, ToolsNeedInitialize) {
  EXPECT_EQ(request(*endpoint, "tools/list")["error"]["code"], -32600);
  EXPECT_TRUE(request(*endpoint, "ping")["result"].is_object());
}

TEST_F(McpServerTest, ListsToolsWithSchemas) {
  initialize(*endpoint);
  const auto tools = request(*endpoint, "tools/list")["result"]["tools"];
  std::vector<std::string> names;
  for (const auto& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object") << tool["name"];
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"run_code", "run_shell", "upload_file",
                                             "download_file", "list_files", "get_session_stats",
                                             "cleanup_session", "list_sessions", "snapshot_session",
                                             "fork_session", "restore_session"}));
}

// Every "type" in every schema is one name (anyOf for alternatives: some clients warn on type
// arrays), and session_id travels as a header too for 2026-07-28 clients (x-mcp-header).
TEST_F(McpServerTest, SchemasUseNoTypeArraysAndMarkSessionIdAsAHeader) {
  initialize(*endpoint);
  const auto tools = request(*endpoint, "tools/list")["result"]["tools"];
  // `schema` is a JSON Schema (a "properties" map's values are; its keys are names).
  std::function<void(const json&, const std::string&)> walk = [&](const json& schema,
                                                                  const std::string& where) {
    if (schema.is_array()) {
      for (const auto& item : schema) walk(item, where + "[]");
      return;
    }
    if (!schema.is_object()) return;
    if (const auto type = schema.find("type"); type != schema.end()) {
      EXPECT_TRUE(type->is_string()) << where << ": " << type->dump();
    }
    for (const auto& [key, value] : schema.items()) {
      if (key == "properties" && value.is_object()) {
        for (const auto& [name, property] : value.items()) walk(property, where + "/" + name);
      } else if (key == "items" || key == "anyOf") {
        walk(value, where + "/" + key);
      }
    }
  };
  std::size_t marked = 0;
  for (const auto& tool : tools) {
    walk(tool["inputSchema"], tool["name"].get<std::string>() + " input");
    walk(tool["outputSchema"], tool["name"].get<std::string>() + " output");
    const auto& session_id = tool["inputSchema"]["properties"].value("session_id", json());
    if (session_id.is_null()) continue;
    EXPECT_EQ(session_id.value("x-mcp-header", ""), "Session-Id") << tool["name"];
    EXPECT_EQ(session_id.value("type", ""), "string") << tool["name"];
    ++marked;
  }
  EXPECT_EQ(marked, 10U) << "every tool that takes a session_id but list_sessions";
}

TEST_F(McpServerTest, CallErrorsAreClear) {
  initialize(*endpoint);
  auto unknown = request(*endpoint, "tools/call", {{"name", "nope"}});
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("run_code"), std::string::npos);
  EXPECT_EQ(request(*endpoint, "tools/call", {{"arguments", json::object()}})["error"]["code"],
            -32602);
  auto invalid = call(*endpoint, "run_code", {{"code", 5}});
  EXPECT_TRUE(invalid["isError"]);
  EXPECT_EQ(invalid["content"][0]["text"],
            "Invalid arguments for run_code: arguments.code: must be a string (got integer)");
  auto missing =
      call(*endpoint, "upload_file", {{"path", "a"}, {"content", "b"}, {"session_id", "ghost"}});
  EXPECT_TRUE(missing["isError"]);
  EXPECT_NE(missing["content"][0]["text"].get<std::string>().find("Unknown session 'ghost'"),
            std::string::npos);
  auto bad_b64 =
      call(*endpoint, "upload_file",
           {{"path", "a"}, {"content", "!!"}, {"encoding", "base64"}, {"session_id", "x"}});
  EXPECT_TRUE(bad_b64["isError"]);
}

TEST_F(McpServerTest, RunCodeCreatesAndReusesSessions) {
  initialize(*endpoint);
  auto first = call(*endpoint, "run_code", {{"code", "x = 1"}});
  ASSERT_FALSE(first["isError"]) << first.dump();
  const auto id = first["structuredContent"]["session_id"].get<std::string>();
  EXPECT_TRUE(first["structuredContent"]["session_created"]);
  auto second = call(*endpoint, "run_shell", {{"command", "ls"}, {"session_id", id}});
  EXPECT_FALSE(second["structuredContent"]["session_created"]);
  EXPECT_EQ(second["structuredContent"]["stdout"], "ran: ls");
  EXPECT_EQ(backend.created, 1);
  auto stats = call(*endpoint, "get_session_stats", {{"session_id", id}});
  EXPECT_EQ(stats["structuredContent"]["execution_count"], 2);
  EXPECT_EQ(stats["structuredContent"]["runtime"], "runsc");
  auto fresh = call(*endpoint, "run_code", {{"code", "1"}});
  EXPECT_NE(fresh["structuredContent"]["session_id"], id);
  EXPECT_EQ(
      call(*endpoint, "list_sessions", json::object())["structuredContent"]["sessions"].size(), 2U);
}

// Handles are minted: a name the client made up, or one of a session that ended, is an error
// saying what to do, never a fresh empty sandbox.
TEST_F(McpServerTest, AnUnknownOrEndedSessionIdIsAnErrorNotAFreshSandbox) {
  initialize(*endpoint);
  auto named = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "my-session"}});
  EXPECT_TRUE(named["isError"]);
  EXPECT_NE(named["content"][0]["text"].get<std::string>().find("Unknown session 'my-session'"),
            std::string::npos)
      << named.dump();
  EXPECT_EQ(backend.created, 0);
  const std::string id = newSession(*endpoint);
  EXPECT_FALSE(call(*endpoint, "cleanup_session", {{"session_id", id}})["isError"]);
  auto ended = call(*endpoint, "run_shell", {{"command", "ls"}, {"session_id", id}});
  EXPECT_TRUE(ended["isError"]);
  const auto text = ended["content"][0]["text"].get<std::string>();
  EXPECT_NE(text.find("has ended (cleanup_session ended it)"), std::string::npos) << text;
  EXPECT_NE(text.find("without session_id"), std::string::npos) << text;
  EXPECT_EQ(backend.created, 1);
}

TEST_F(McpServerTest, SessionsBelongToTheirOwner) {
  initialize(*endpoint);
  auto other = server->open("owner-b");
  initialize(*other);
  const std::string mine = newSession(*endpoint);
  auto stolen = call(*other, "get_session_stats", {{"session_id", mine}});
  EXPECT_TRUE(stolen["isError"]);
  EXPECT_TRUE(call(*other, "run_code", {{"code", "1"}, {"session_id", mine}})["isError"]);
  EXPECT_TRUE(
      call(*other, "list_sessions", json::object())["structuredContent"]["sessions"].empty());
  EXPECT_TRUE(call(*other, "cleanup_session", {{"session_id", mine}})["isError"]);
  other->close();
  EXPECT_EQ(backend.live, 1);
  endpoint->close();
  EXPECT_EQ(backend.live, 0);
}

TEST_F(McpServerTest, OptionsAreFixedAtCreation) {
  initialize(*endpoint);
  const std::string s = newSession(*endpoint, {{"environment", {{"A", "1"}}}});
  auto same = call(*endpoint, "run_code",
                   {{"code", "x"}, {"session_id", s}, {"environment", {{"A", "1"}}}});
  EXPECT_FALSE(same["isError"]);
  auto changed = call(*endpoint, "run_code",
                      {{"code", "x"}, {"session_id", s}, {"environment", {{"A", "2"}}}});
  EXPECT_TRUE(changed["isError"]);
  EXPECT_NE(changed["content"][0]["text"].get<std::string>().find("different environment"),
            std::string::npos);
  EXPECT_EQ(backend.last_spec.environment.at("A"), "1");
}

TEST_F(McpServerTest, SessionLimitGivesBusyError) {
  initialize(*endpoint);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}})["isError"]);
  }
  auto busy = call(*endpoint, "run_code", {{"code", "x"}});
  EXPECT_TRUE(busy["isError"]);
  EXPECT_EQ(busy["content"][0]["text"].get<std::string>().rfind("busy:", 0), 0U);
}

// A sandbox that died between calls (killed from outside, OOM) is replaced, and the call says
// so: state_lost plus a warning; never a silently empty sandbox under the old id.
TEST_F(McpServerTest, DeadSandboxIsReplacedWithStateLostAndAWarning) {
  initialize(*endpoint);
  const std::string victim = newSession(*endpoint);
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);  // new ones live

  auto next = call(*endpoint, "run_code", {{"code", "x"}, {"session_id", victim}});
  ASSERT_FALSE(next["isError"]) << next.dump();
  const auto& s = next["structuredContent"];
  EXPECT_EQ(s["session_id"], victim);
  EXPECT_TRUE(s["state_lost"]);
  ASSERT_TRUE(s.contains("warnings")) << s.dump();
  EXPECT_NE(s["warnings"][0].get<std::string>().find("was lost"), std::string::npos);
  EXPECT_EQ(backend.created, 2);

  auto after = call(*endpoint, "run_code", {{"code", "x"}, {"session_id", victim}});
  EXPECT_FALSE(after["structuredContent"]["state_lost"]) << "reported once, not forever";
  EXPECT_FALSE(after["structuredContent"].contains("warnings"));
}

TEST_F(McpServerTest, FileToolOnDeadSandboxSaysLostThenRunReportsIt) {
  initialize(*endpoint);
  const std::string s = newSession(*endpoint);
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);
  auto listed = call(*endpoint, "list_files", {{"session_id", s}});
  EXPECT_TRUE(listed["isError"]);
  EXPECT_NE(listed["content"][0]["text"].get<std::string>().find("was lost"), std::string::npos)
      << listed.dump();
  auto next = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", s}});
  EXPECT_TRUE(next["structuredContent"]["state_lost"]) << next.dump();
}

TEST_F(McpServerTest, CleanupForgetsALostSandbox) {
  initialize(*endpoint);
  const std::string s = newSession(*endpoint);
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);
  (void)call(*endpoint, "list_files", {{"session_id", s}});  // notices and forgets it
  (void)call(*endpoint, "cleanup_session", {{"session_id", s}});
  auto next = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", s}});
  EXPECT_TRUE(next["isError"]) << "an explicit cleanup ends the session: " << next.dump();
  EXPECT_FALSE(next.contains("structuredContent") &&
               next["structuredContent"].contains("state_lost"));
}

}  // namespace

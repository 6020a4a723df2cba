// Table test for decideMcpCall: methods and tool names in single messages and batches.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

using nlohmann::json;

struct Row {
  std::string name;
  std::string body;
  bool allowed;
  std::string reason;
};

std::ostream& operator<<(std::ostream& out, const Row& row) { return out << row.name; }

const policy::Rule& searchOnly() {
  static const auto loaded = policy::loadPolicy(json::parse(R"([
    {"url": "http://localhost:1/mcp", "id": "search-only",
     "methods": ["tools/list", "tools/call"], "tools": ["search"]}])"));
  return loaded->rules.front();
}

const std::vector<Row> kRows = {
    {"ListedMethod", R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", true,
     "method 'tools/list' allowed by search-only"},
    {"ListedTool", R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search"}})",
     true, "method 'tools/call' allowed"},
    {"UnlistedTool", R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec"}})",
     false, "tool 'exec' is not allowed by search-only (allowed: search)"},
    {"ToolCallWithoutName", R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}})", false,
     "tools/call without a string params.name"},
    {"ToolCallNameNotString",
     R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":["search"]}})", false,
     "without a string params.name"},
    {"UnlistedMethod", R"({"jsonrpc":"2.0","id":3,"method":"resources/read"})", false,
     "method 'resources/read' is not allowed by search-only (allowed: tools/list, tools/call)"},
    {"InitializeAlwaysAllowed", R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})",
     true, "method 'initialize' allowed"},
    {"InitializedNotification", R"({"jsonrpc":"2.0","method":"notifications/initialized"})", true,
     "allowed"},
    {"PingAlwaysAllowed", R"({"jsonrpc":"2.0","id":9,"method":"ping"})", true, "allowed"},
    {"UnlistedNotificationChecked",
     R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})", false,
     "method 'notifications/roots/list_changed' is not allowed"},
    {"ResponseToServerRequest", R"({"jsonrpc":"2.0","id":"s1","result":{}})", true,
     "response allowed"},
    {"MethodNotString", R"({"jsonrpc":"2.0","id":1,"method":7})", false,
     "'method' is not a string"},
    {"NeitherRequestNorResponse", R"({"jsonrpc":"2.0","id":1})", false,
     "neither 'method' nor 'result'/'error'"},
    {"NotAnObject", R"("tools/list")", false, "not a JSON-RPC message or batch"},
    {"EmptyBatch", R"([])", false, "empty JSON-RPC batch"},
    {"BatchAllAllowed",
     R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},
         {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search"}}])",
     true, "all 2 batch elements allowed by search-only"},
    {"BatchOneToolDenied",
     R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},
         {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_all"}}])",
     false, "batch element 1: tool 'delete_all' is not allowed"},
    {"BatchNotificationDenied",
     R"([{"jsonrpc":"2.0","method":"notifications/message"},
         {"jsonrpc":"2.0","id":2,"method":"tools/list"}])",
     false, "batch element 0: method 'notifications/message'"},
    // Go's encoding/json matches keys ignoring case: the upstream would run "exec".
    {"ToolNameCaseVariant",
     R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","Name":"exec"}})",
     false, "differs from 'name'/'arguments' only in case"},
    // No "method", so this looks like a response here; a case-blind upstream sees a request.
    {"MethodCaseVariantPosingAsResponse",
     R"({"jsonrpc":"2.0","id":1,"result":{},"Method":"tools/call","Params":{"name":"exec"}})",
     false, "differs from a member name only in case"},
    {"BatchElementNotObject", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}, 3])", false,
     "batch element 1: not a JSON-RPC message object"},
};

class DecideMcpCallTable : public testing::TestWithParam<Row> {};

TEST_P(DecideMcpCallTable, VerdictAndReason) {
  const Row& row = GetParam();
  const policy::Decision decision = policy::decideMcpCall(searchOnly(), json::parse(row.body));
  EXPECT_EQ(decision.allowed(), row.allowed) << decision.reason;
  EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
      << "reason '" << decision.reason << "' lacks '" << row.reason << "'";
  EXPECT_EQ(decision.rule_id, "search-only");
}

INSTANTIATE_TEST_SUITE_P(Unit, DecideMcpCallTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& row_info) {
                           return row_info.param.name;
                         });

TEST(Unit, UnrestrictedRuleAllowsAnyBody) {
  const auto loaded = policy::loadPolicy(json::array({"http://localhost:1/mcp"}));
  const policy::Decision decision =
      policy::decideMcpCall(loaded->rules.front(), json::parse(R"({"method":"anything"})"));
  EXPECT_TRUE(decision.allowed());
  EXPECT_NE(decision.reason.find("does not restrict"), std::string::npos);
}

TEST(Unit, ToolsOnlyRuleAllowsOtherMethods) {
  const auto loaded = policy::loadPolicy(
      json::parse(R"([{"url": "http://localhost:1/mcp", "tools": ["search"]}])"));
  const policy::Rule& rule = loaded->rules.front();
  EXPECT_TRUE(
      policy::decideMcpCall(rule, json::parse(R"({"id":1,"method":"prompts/list"})")).allowed());
  EXPECT_FALSE(policy::decideMcpCall(
                   rule, json::parse(R"({"id":1,"method":"tools/call","params":{"name":"x"}})"))
                   .allowed());
}

}  // namespace

// Mcp-Param-* headers against the arguments they repeat (x-mcp-header): table tests.
#include "transport/param_headers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "transport/modern_gate.h"

namespace {

using nlohmann::json;
using transport::ParamHeaders;

// Two tools: run_code marks session_id (a string) at the top; configure marks a nested integer
// and a boolean.
const json kToolsList = json::parse(R"({"tools": [
  {"name": "run_code", "inputSchema": {"type": "object", "properties": {
    "code": {"type": "string"},
    "session_id": {"type": "string", "x-mcp-header": "Session-Id"}}}},
  {"name": "configure", "inputSchema": {"type": "object", "properties": {
    "limits": {"type": "object", "properties": {
      "max": {"type": "integer", "x-mcp-header": "Max"}}},
    "dry": {"type": "boolean", "x-mcp-header": "Dry"}}}},
  {"name": "plain", "inputSchema": {"type": "object"}}]})");

// A lookup over `headers` (exact names, as the tests write them).
ParamHeaders::HeaderLookup lookup(std::map<std::string, std::string> headers) {
  return
      [headers = std::move(headers)](const std::string& name) -> std::optional<std::string_view> {
        const auto it = headers.find(name);
        if (it == headers.end()) return std::nullopt;
        return std::string_view(it->second);
      };
}

json call(const std::string& tool, json arguments) {
  return {{"name", tool}, {"arguments", std::move(arguments)}};
}

TEST(ParamHeaders, ReadsTheMarkedPropertiesOfEveryTool) {
  const auto marked = ParamHeaders::fromToolsList(kToolsList);
  EXPECT_EQ(marked.headersOf("run_code"), std::vector<std::string>{"Mcp-Param-Session-Id"});
  EXPECT_EQ(marked.headersOf("configure"),
            (std::vector<std::string>{"Mcp-Param-Dry", "Mcp-Param-Max"}));
  EXPECT_TRUE(marked.headersOf("plain").empty());
  EXPECT_TRUE(marked.headersOf("unknown").empty());
}

TEST(ParamHeaders, HeadersThatCarryTheArgumentsPass) {
  const auto marked = ParamHeaders::fromToolsList(kToolsList);
  EXPECT_FALSE(marked.disagreement(call("run_code", {{"session_id", "s-1~a"}}),
                                   lookup({{"Mcp-Param-Session-Id", "s-1~a"}})));
  EXPECT_FALSE(marked.disagreement(call("run_code", {{"session_id", "s-1~a"}}),
                                   lookup({{"Mcp-Param-Session-Id", " =?base64?cy0xfmE=?= "}})));
  EXPECT_FALSE(marked.disagreement(call("run_code", {{"code", "1"}}), lookup({})))
      << "no session_id, no header";
  EXPECT_FALSE(marked.disagreement(call("run_code", {{"session_id", nullptr}}), lookup({})));
  EXPECT_FALSE(marked.disagreement(call("configure", {{"limits", {{"max", 42}}}, {"dry", true}}),
                                   lookup({{"Mcp-Param-Max", "42.0"}, {"Mcp-Param-Dry", "true"}})))
      << "integers compare as numbers";
  EXPECT_FALSE(marked.disagreement(call("plain", {{"x", 1}}), lookup({{"Mcp-Param-X", "2"}})));
}

TEST(ParamHeaders, EachDisagreementSaysWhatDiffers) {
  const auto marked = ParamHeaders::fromToolsList(kToolsList);
  struct Case {
    const char* what;
    json params;
    std::map<std::string, std::string> headers;
    const char* message;
  };
  const Case cases[] = {
      {"another session than the body's",
       call("run_code", {{"session_id", "s-1~a"}}),
       {{"Mcp-Param-Session-Id", "s-2~b"}},
       "Mcp-Param-Session-Id header 's-2~b' does not match the arguments' session_id"},
      {"the body names a session, the header is missing",
       call("run_code", {{"session_id", "s-1~a"}}),
       {},
       "the Mcp-Param-Session-Id header must carry it too"},
      {"a header naming a session the body does not",
       call("run_code", {{"code", "1"}}),
       {{"Mcp-Param-Session-Id", "s-2~b"}},
       "the arguments have no session_id"},
      {"broken base64",
       call("run_code", {{"session_id", "s-1~a"}}),
       {{"Mcp-Param-Session-Id", "=?base64?cy0x*mE=?="}},
       "not valid =?base64?...?= text"},
      {"another number",
       call("configure", {{"limits", {{"max", 42}}}}),
       {{"Mcp-Param-Max", "43"}},
       "Mcp-Param-Max header '43'"},
      {"a boolean spelled otherwise",
       call("configure", {{"dry", false}}),
       {{"Mcp-Param-Dry", "False"}},
       "Mcp-Param-Dry header 'False'"},
  };
  for (const auto& c : cases) {
    const auto why = marked.disagreement(c.params, lookup(c.headers));
    ASSERT_TRUE(why) << c.what;
    EXPECT_NE(why->find(c.message), std::string::npos) << c.what << ": " << *why;
  }
}

// Through the gate: a disagreement is 400 with -32020 naming the request's id.
TEST(ParamHeaders, TheGateRefusesADisagreementAsAHeaderMismatch) {
  const auto marked = ParamHeaders::fromToolsList(kToolsList);
  const json message = {{"jsonrpc", "2.0"},
                        {"id", 9},
                        {"method", "tools/call"},
                        {"params",
                         {{"_meta",
                           {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                            {"io.modelcontextprotocol/clientCapabilities", json::object()}}},
                          {"name", "run_code"},
                          {"arguments", {{"code", "1"}, {"session_id", "s-1~a"}}}}}};
  const transport::ModernHeaders headers{"2026-07-28", "tools/call", "run_code"};
  const auto refused = transport::refuseModernRequest(message, headers, marked,
                                                      lookup({{"Mcp-Param-Session-Id", "s-9~b"}}));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400U);
  EXPECT_EQ(refused->body["error"]["code"], -32020);
  EXPECT_EQ(refused->body["id"], 9);
  EXPECT_FALSE(transport::refuseModernRequest(message, headers, marked,
                                              lookup({{"Mcp-Param-Session-Id", "s-1~a"}})));
}

}  // namespace

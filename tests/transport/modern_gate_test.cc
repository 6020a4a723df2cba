// transport/modern_gate.h: which requests without Mcp-Session-Id are 2026-07-28 ones, and the
// status and error each malformed one gets (table tests).
#include "transport/modern_gate.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using nlohmann::json;
using transport::decodeHeaderValue;
using transport::isModernRequest;
using transport::ModernHeaders;
using transport::refuseModernRequest;

json meta(const std::string& version = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

json request(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", std::move(params)}};
}

json toolCall(const std::string& version = "2026-07-28") {
  return request("tools/call", {{"_meta", meta(version)}, {"name", "run_code"}, {"arguments", {}}});
}

const ModernHeaders kToolCallHeaders{"2026-07-28", "tools/call", "run_code"};

TEST(ModernGate, ARequestIsModernByItsMetaOrItsVersionHeader) {
  EXPECT_TRUE(isModernRequest(toolCall(), {}));
  EXPECT_TRUE(isModernRequest(request("tools/list", json::object()), {"2026-07-28", "", ""}));
  EXPECT_FALSE(isModernRequest(request("tools/list", json::object()), {"2025-11-25", "", ""}));
  // An initialize naming the new version only in its header is still the 2025 handshake.
  EXPECT_FALSE(isModernRequest(request("initialize", json::object()), {"2026-07-28", "", ""}));
  json notification = toolCall();
  notification.erase("id");
  EXPECT_FALSE(isModernRequest(notification, {}));
  EXPECT_FALSE(isModernRequest(json::array({toolCall()}), {}));
}

TEST(ModernGate, AWellFormedRequestPasses) {
  EXPECT_FALSE(refuseModernRequest(toolCall(), kToolCallHeaders));
  // Header names are matched by the transport; values are trimmed, and may be base64-encoded.
  EXPECT_FALSE(refuseModernRequest(toolCall(), {" 2026-07-28 ", "tools/call", "  run_code  "}));
  EXPECT_FALSE(
      refuseModernRequest(toolCall(), {"2026-07-28", "tools/call", "=?base64?cnVuX2NvZGU=?="}));
  EXPECT_FALSE(refuseModernRequest(request("tools/list", {{"_meta", meta()}}),
                                   {"2026-07-28", "tools/list", ""}));
}

TEST(ModernGate, EachMalformedRequestGetsItsStatusAndCode) {
  struct Case {
    const char* what;
    json message;
    ModernHeaders headers;
    unsigned status;
    int code;
  };
  const Case cases[] = {
      {"header claims 2026 but no _meta",
       request("tools/list", json::object()),
       {"2026-07-28", "tools/list", ""},
       400,
       -32602},
      {"no client capabilities",
       request("tools/list",
               {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}),
       {"2026-07-28", "tools/list", ""},
       400,
       -32602},
      {"header version differs from the body's", toolCall("v999.0.0"), kToolCallHeaders, 400,
       -32020},
      {"the same unknown version in both",
       toolCall("v999.0.0"),
       {"v999.0.0", "tools/call", "run_code"},
       400,
       -32022},
      {"method header differs", toolCall(), {"2026-07-28", "tools/list", "run_code"}, 400, -32020},
      {"method header in another case",
       toolCall(),
       {"2026-07-28", "TOOLS/CALL", "run_code"},
       400,
       -32020},
      {"no version header", toolCall(), {"", "tools/call", "run_code"}, 400, -32020},
      {"no method header", toolCall(), {"2026-07-28", "", "run_code"}, 400, -32020},
      {"no name header on tools/call", toolCall(), {"2026-07-28", "tools/call", ""}, 400, -32020},
      {"name header differs", toolCall(), {"2026-07-28", "tools/call", "run_shell"}, 400, -32020},
      {"name header not valid base64",
       toolCall(),
       {"2026-07-28", "tools/call", "=?base64?!!!?="},
       400,
       -32020},
      {"a method 2026-07-28 removed",
       request("ping", {{"_meta", meta()}}),
       {"2026-07-28", "ping", ""},
       404,
       -32601},
  };
  for (const auto& c : cases) {
    const auto refused = refuseModernRequest(c.message, c.headers);
    ASSERT_TRUE(refused) << c.what;
    EXPECT_EQ(refused->status, c.status) << c.what << ": " << refused->body;
    EXPECT_EQ(refused->body["error"]["code"], c.code) << c.what << ": " << refused->body;
    EXPECT_EQ(refused->body["id"], 7) << c.what << ": the error must name the request";
  }
}

TEST(ModernGate, HeaderValuesAreTrimmedAndDecoded) {
  EXPECT_EQ(decodeHeaderValue("  plain  "), "plain");
  EXPECT_EQ(decodeHeaderValue("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, \u4e16\u754c");
  EXPECT_EQ(decodeHeaderValue("=?base64?abc"), "=?base64?abc") << "no suffix: a literal";
  EXPECT_EQ(decodeHeaderValue("base64?abc?="), "base64?abc?=") << "no prefix: a literal";
  EXPECT_FALSE(decodeHeaderValue("=?base64?a b?="));
  EXPECT_FALSE(decodeHeaderValue("=?base64?@@@@?="));
  EXPECT_FALSE(decodeHeaderValue("=?base64?SGVsbG8?=")) << "padding missing";
}

}  // namespace

namespace {

TEST(ModernGate, UnknownMethodsReachTheEndpoint) {
  // The endpoint knows what it serves: its -32601 becomes 404 (modernAnswerStatus).
  EXPECT_FALSE(transport::refuseModernRequest(request("no/such", {{"_meta", meta()}}),
                                              {"2026-07-28", "no/such", ""}));
}

TEST(ModernGate, AnswersGetTheStatusTheirErrorCodeAsks) {
  const auto error = [](int code) {
    return nlohmann::json{{"jsonrpc", "2.0"}, {"id", 1}, {"error", {{"code", code}}}};
  };
  EXPECT_EQ(transport::modernAnswerStatus(error(-32601)), 404u);
  EXPECT_EQ(transport::modernAnswerStatus(error(-32021)), 400u);
  EXPECT_EQ(transport::modernAnswerStatus(error(-32020)), 400u);
  EXPECT_EQ(transport::modernAnswerStatus(error(-32022)), 400u);
  EXPECT_EQ(transport::modernAnswerStatus(error(-32602)), 200u);  // e.g. an unknown tool: in-band
  EXPECT_EQ(transport::modernAnswerStatus(nlohmann::json{
                {"jsonrpc", "2.0"}, {"id", 1}, {"result", nlohmann::json::object()}}),
            200u);
  EXPECT_EQ(transport::modernAnswerStatus(nlohmann::json()), 200u);
}

}  // namespace

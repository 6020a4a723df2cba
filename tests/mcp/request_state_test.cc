// mcp/request_state.h and mcp/input_required.h: input-required states come back only as they
// were sealed, for the same owner and purpose, before they expire; input requests go out only
// for capabilities the client declared.
#include "mcp/request_state.h"

#include <gtest/gtest.h>

#include "jsonrpc/errors.h"
#include "mcp/input_required.h"

namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr mcp::RequestStateSeal::Clock::time_point kNow{seconds(1'800'000'000)};

TEST(RequestState, OpensWhatItSealedForTheSameOwnerAndPurpose) {
  const mcp::RequestStateSeal seal("key");
  const json state{{"round", 2}, {"name", "Ada"}};
  const std::string sealed = seal.seal(state, "alice", "tools/call:t", seconds(60), kNow);
  EXPECT_EQ(seal.open(sealed, "alice", "tools/call:t", kNow), state);
  EXPECT_FALSE(seal.open(sealed, "bob", "tools/call:t", kNow)) << "another owner";
  EXPECT_FALSE(seal.open(sealed, "alice", "tools/call:u", kNow)) << "another tool";
  EXPECT_FALSE(seal.open(sealed, "alice", "tools/call:t", kNow + seconds(61))) << "expired";
  EXPECT_FALSE(mcp::RequestStateSeal("other key").open(sealed, "alice", "tools/call:t", kNow))
      << "another process";
}

TEST(RequestState, RefusesAlteredOrMalformedStates) {
  const mcp::RequestStateSeal seal("key");
  const std::string sealed = seal.seal(json{{"ok", false}}, "alice", "p", seconds(60), kNow);
  std::string altered = sealed;
  altered[3] = altered[3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(seal.open(altered, "alice", "p", kNow));
  EXPECT_FALSE(seal.open(sealed + "0", "alice", "p", kNow));
  EXPECT_FALSE(seal.open("", "alice", "p", kNow));
  EXPECT_FALSE(seal.open("no-dot-here", "alice", "p", kNow));
  EXPECT_FALSE(seal.open(R"({"data":"x","hmac":"y"})", "alice", "p", kNow));
}

TEST(InputRequired, KeepsOnlyRequestsForDeclaredCapabilities) {
  const mcp::RequestStateSeal seal("key");
  const json requests{
      {"ask", {{"method", "elicitation/create"}, {"params", json::object()}}},
      {"sample", {{"method", "sampling/createMessage"}, {"params", json::object()}}}};
  const json result = mcp::inputRequiredResult(requests, json{{"k", 1}},
                                               {{"sampling", json::object()}}, seal, "o", "p");
  EXPECT_EQ(result["resultType"], "input_required");
  EXPECT_EQ(result["inputRequests"].size(), 1u);
  EXPECT_TRUE(result["inputRequests"].contains("sample"));
  EXPECT_EQ(seal.open(result["requestState"].get<std::string>(), "o", "p"), (json{{"k", 1}}));
  try {
    (void)mcp::inputRequiredResult(requests, nullptr, json::object(), seal, "o", "p");
    FAIL() << "no declared capability: -32021 expected";
  } catch (const jsonrpc::Error& e) {
    EXPECT_EQ(e.code(), -32021);
    EXPECT_EQ(e.data()["requiredCapabilities"],
              (json{{"elicitation", json::object()}, {"sampling", json::object()}}));
  }
}

TEST(InputRequired, RequestInputsAreCheckedBeforeAToolSeesThem) {
  const mcp::RequestStateSeal seal("key");
  const json meta{
      {"io.modelcontextprotocol/clientCapabilities", {{"elicitation", json::object()}}}};
  const std::string state = seal.seal(json{{"round", 1}}, "o", "p", seconds(60));
  const auto inputs = mcp::requestInputs({{"_meta", meta},
                                          {"inputResponses", {{"a", {{"action", "accept"}}}}},
                                          {"requestState", state}},
                                         seal, "o", "p");
  EXPECT_EQ(inputs.state, (json{{"round", 1}}));
  EXPECT_EQ(inputs.client_capabilities, (json{{"elicitation", json::object()}}));
  EXPECT_TRUE(inputs.responses.contains("a"));
  for (const json& params :
       {json{{"inputResponses", {{"a", 12345}}}}, json{{"inputResponses", "x"}},
        json{{"requestState", state + "x"}}, json{{"requestState", 7}}}) {
    EXPECT_THROW((void)mcp::requestInputs(params, seal, "o", "p"), jsonrpc::Error) << params;
  }
  EXPECT_EQ(mcp::missingCapabilities({{"sampling", json::object()}}, meta.begin().value()),
            (json{{"sampling", json::object()}}));
  EXPECT_TRUE(
      mcp::missingCapabilities({{"elicitation", json::object()}}, meta.begin().value()).empty());
}

}  // namespace

#include "agent/exec_request.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/request_error.h"

namespace {

using agent::ExecKind;
using agent::parseExecRequest;
using agent::RequestError;
using nlohmann::json;

std::string errorOf(const json& request) {
  try {
    (void)parseExecRequest(1, request);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "";
}

TEST(Unit, ExecRequestParsesAllFields) {
  const auto r = parseExecRequest(7, json{{"kind", "shell"},
                                          {"code", "ls"},
                                          {"timeout_ms", 2500},
                                          {"max_output_bytes", 10},
                                          {"stream", true}});
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.kind, ExecKind::kShell);
  EXPECT_EQ(r.code, "ls");
  EXPECT_EQ(r.timeout.count(), 2500);
  EXPECT_EQ(r.max_output_bytes, 10U);
  EXPECT_TRUE(r.stream);
}

TEST(Unit, ExecRequestAppliesDefaultsAndClamps) {
  const auto r =
      parseExecRequest(1, json{{"kind", "python"}, {"code", "1"}, {"max_output_bytes", 1LL << 40}});
  EXPECT_EQ(r.timeout, protocol::kDefaultTimeout);
  EXPECT_EQ(r.max_output_bytes, protocol::kMaxOutputBytesLimit);
  EXPECT_FALSE(r.stream);
}

TEST(Unit, ExecRequestErrorsNameTheField) {
  EXPECT_NE(errorOf(json{{"kind", "ruby"}, {"code", "1"}}).find("\"kind\""), std::string::npos);
  EXPECT_NE(errorOf(json{{"kind", "python"}}).find("\"code\""), std::string::npos);
  EXPECT_NE(errorOf(json{{"kind", "python"}, {"code", "1"}, {"timeout_ms", 0}}).find("timeout_ms"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"kind", "python"}, {"code", "1"}, {"timeout_ms", "5"}}).find("integer"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"kind", "python"}, {"code", "1"}, {"stream", 1}}).find("stream"),
            std::string::npos);
  // Found by agent_frame_fuzzer: a non-string kind threw nlohmann's type_error, not ours.
  EXPECT_NE(errorOf(json{{"kind", 3}, {"code", "1"}}).find("\"kind\""), std::string::npos);
}

}  // namespace

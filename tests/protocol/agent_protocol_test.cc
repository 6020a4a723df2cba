// The agent protocol's codec (protocol/agent_protocol.h): what one side encodes the other decodes
// to the same value, and a reply from a hostile sandbox decodes to defaults and capped values
// without throwing.
#include "protocol/agent_protocol.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace {

using namespace protocol;

TEST(AgentProtocol, AnExecRequestSurvivesTheRoundTrip) {
  ExecRequest sent;
  sent.kind = ExecKind::kJavascript;
  sent.code = "console.log('\\u0000')\n";
  sent.timeout = std::chrono::milliseconds(1234);
  sent.max_output_bytes = 77;
  sent.save_output_bytes = 4096;
  sent.stream = true;
  sent.images = {3, 5000, 640};
  const json wire = encodeExecRequest(sent);
  EXPECT_EQ(wire["op"], kOpExec);
  const ExecRequest got = decodeExecRequest(wire);
  EXPECT_EQ(got.kind, sent.kind);
  EXPECT_EQ(got.code, sent.code);
  EXPECT_EQ(got.timeout, sent.timeout);
  EXPECT_EQ(got.max_output_bytes, sent.max_output_bytes);
  EXPECT_EQ(got.save_output_bytes, sent.save_output_bytes);
  EXPECT_EQ(got.stream, sent.stream);
  EXPECT_EQ(got.images, sent.images);
}

TEST(AgentProtocol, RequestNumbersAreClampedToTheProtocolsCaps) {
  const ExecRequest got =
      decodeExecRequest({{"kind", "python"},
                         {"code", ""},
                         {"timeout_ms", std::numeric_limits<std::uint64_t>::max()},
                         {"save_output_bytes", 1LL << 50},
                         {"max_images", 1000},
                         {"image_max_px", 1}});
  EXPECT_EQ(got.timeout, kMaxTimeout);
  EXPECT_EQ(got.save_output_bytes, kMaxSaveOutputBytesLimit);
  EXPECT_EQ(got.images.max_count, common::kMaxImagesLimit);
  EXPECT_EQ(got.images.max_px, common::kMinImagePx);
}

TEST(AgentProtocol, AnExecReplySurvivesTheRoundTrip) {
  ExecResult sent;
  sent.status = ExecStatus::kTimeout;
  sent.stdout_text = "out";
  sent.stderr_text = "err\n[sandbox] execution exceeded 1.0 s\n";
  sent.exit_code = kTimeoutExitCode;
  sent.result = "42";
  sent.stdout_truncated = true;
  sent.stdout_bytes = 1 << 20;
  sent.stderr_bytes = 40;
  sent.duration_ms = 1001.5;
  sent.exec_ms = 999.25;
  sent.state_lost = true;
  sent.saved_outputs = {{"stdout", "/tmp/.sandbox/exec-9-stdout.txt", 1 << 20, true}};
  const ExecResult got = decodeExecReply(encodeExecReply(9, sent), ExecRequest{});
  EXPECT_EQ(got.status, sent.status);
  EXPECT_EQ(got.stdout_text, sent.stdout_text);
  EXPECT_EQ(got.stderr_text, sent.stderr_text);
  EXPECT_EQ(got.exit_code, sent.exit_code);
  EXPECT_EQ(got.result, sent.result);
  EXPECT_TRUE(got.stdout_truncated);
  EXPECT_FALSE(got.stderr_truncated);
  EXPECT_EQ(got.stdout_bytes, sent.stdout_bytes);
  EXPECT_EQ(got.stderr_bytes, sent.stderr_bytes);
  EXPECT_DOUBLE_EQ(got.duration_ms, sent.duration_ms);
  EXPECT_EQ(got.exec_ms, sent.exec_ms);
  EXPECT_TRUE(got.state_lost);
  ASSERT_EQ(got.saved_outputs.size(), 1U);
  EXPECT_EQ(got.saved_outputs[0].path, sent.saved_outputs[0].path);
  EXPECT_EQ(got.saved_outputs[0].bytes, sent.saved_outputs[0].bytes);
  EXPECT_TRUE(got.saved_outputs[0].complete);
}

TEST(AgentProtocol, AHostileExecReplyDecodesToDefaultsWithoutThrowing) {
  const json hostile = {{"status", "pwned"},
                        {"stdout", 12},
                        {"stderr", json::array({"x"})},
                        {"exit_code", 1e300},
                        {"result", json::object()},
                        {"truncated", "yes"},
                        {"stdout_bytes", -5},
                        {"stderr_bytes", "many"},
                        {"duration_ms", "fast"},
                        {"exec_ms", -3},
                        {"state_lost", 1},
                        {"saved_output",
                         {{"stdout", {{"path", "relative/path"}}},
                          {"stderr", {{"path", "/" + std::string(9000, 'a')}}}}}};
  ExecResult got;
  ASSERT_NO_THROW(got = decodeExecReply(hostile, ExecRequest{}));
  EXPECT_EQ(got.status, ExecStatus::kError);
  EXPECT_EQ(got.stdout_text, "");
  EXPECT_EQ(got.stderr_text, "");
  EXPECT_EQ(got.exit_code, 0);
  EXPECT_FALSE(got.result.has_value());
  EXPECT_FALSE(got.stdout_truncated);
  EXPECT_EQ(got.stdout_bytes, 0U);  // a negative count is not read as 2^64 - 5
  EXPECT_DOUBLE_EQ(got.duration_ms, 0.0);
  EXPECT_FALSE(got.exec_ms.has_value());
  EXPECT_FALSE(got.state_lost);
  EXPECT_TRUE(got.saved_outputs.empty());
  for (const json& not_an_object : {json(), json(7), json("text"), json::array({1, 2})}) {
    EXPECT_NO_THROW((void)decodeExecReply(not_an_object, ExecRequest{})) << not_an_object;
    EXPECT_NO_THROW((void)decodeFileListing(not_an_object)) << not_an_object;
  }
}

TEST(AgentProtocol, OutputPastWhatTheServerAskedForIsCutAndMarkedTruncated) {
  ExecRequest asked;
  asked.max_output_bytes = 10;
  const std::size_t cap = asked.max_output_bytes + kNotesBytes;
  const json reply = {{"status", "success"},
                      {"stdout", std::string(cap + 500, 'o')},
                      {"stderr", "fine"},
                      {"result", std::string(cap * 2, 'r')}};
  const ExecResult got = decodeExecReply(reply, asked);
  EXPECT_EQ(got.stdout_text.size(), cap);
  EXPECT_TRUE(got.stdout_truncated);
  EXPECT_EQ(got.result->size(), cap);
  EXPECT_EQ(got.stderr_text, "fine");
}

TEST(AgentProtocol, AListingSurvivesTheRoundTripWithItsTruncatedFlag) {
  FileListing sent;
  sent.path = "/workspace";
  sent.entries = {{"a.txt", FileType::kFile, 3, 1700000000},
                  {"dir", FileType::kDir, 0, 1},
                  {"link", FileType::kSymlink, 7, 2},
                  {"fifo", FileType::kOther, 0, 3}};
  sent.truncated = true;
  const FileListing got = decodeFileListing(encodeFileListing(sent));
  EXPECT_EQ(got.path, sent.path);
  EXPECT_TRUE(got.truncated);
  ASSERT_EQ(got.entries.size(), sent.entries.size());
  for (std::size_t i = 0; i < sent.entries.size(); ++i) {
    EXPECT_EQ(got.entries[i].name, sent.entries[i].name);
    EXPECT_EQ(got.entries[i].type, sent.entries[i].type);
    EXPECT_EQ(got.entries[i].size, sent.entries[i].size);
    EXPECT_EQ(got.entries[i].mtime, sent.entries[i].mtime);
  }
  EXPECT_FALSE(encodeFileListing(FileListing{}).contains("truncated"));
}

TEST(AgentProtocol, AHostileListingIsCappedAndItsOddFieldsDefaulted) {
  json entries = json::array();
  for (std::size_t i = 0; i < FileListing::kMaxListEntries + 5; ++i) {
    entries.push_back({{"name", "f"}, {"type", "file"}});
  }
  entries[0] = {{"name", std::string(kMaxNameBytes + 100, 'n')}, {"type", "door"}, {"size", -1}};
  entries[1] = "not an object";
  const FileListing got = decodeFileListing({{"entries", entries}, {"truncated", false}});
  EXPECT_EQ(got.entries.size(), FileListing::kMaxListEntries);
  EXPECT_TRUE(got.truncated);
  EXPECT_EQ(got.entries[0].name.size(), kMaxNameBytes);
  EXPECT_EQ(got.entries[0].type, FileType::kOther);
  EXPECT_EQ(got.entries[0].size, 0U);
  EXPECT_EQ(got.entries[1].name, "");
}

TEST(AgentProtocol, EnumsHaveOneNameEachAndUnknownNamesAreRefused) {
  for (const auto status :
       {ExecStatus::kSuccess, ExecStatus::kError, ExecStatus::kTimeout, ExecStatus::kCancelled}) {
    EXPECT_EQ(parseExecStatus(toString(status)), status);
  }
  for (const auto kind : {ExecKind::kPython, ExecKind::kShell, ExecKind::kJavascript}) {
    EXPECT_EQ(parseExecKind(toString(kind)), kind);
  }
  EXPECT_FALSE(parseExecStatus("Success").has_value());
  EXPECT_FALSE(parseExecKind("").has_value());
  EXPECT_EQ(parseFileType("socket"), FileType::kOther);
}

TEST(AgentProtocol, FieldOrNeverThrowsAndRefusesOutOfRangeIntegers) {
  const json object = {{"small", 5}, {"big", 1LL << 40}, {"neg", -1}, {"text", "x"}, {"f", 2.5}};
  EXPECT_EQ(fieldOr<int>(object, "small", 0), 5);
  EXPECT_EQ(fieldOr<int>(object, "big", 7), 7);
  EXPECT_EQ(fieldOr<std::uint64_t>(object, "neg", 9), 9U);
  EXPECT_EQ(fieldOr<int>(object, "text", 3), 3);
  EXPECT_EQ(fieldOr<int>(object, "f", 4), 4);  // a float is not silently cut to an integer
  EXPECT_DOUBLE_EQ(fieldOr<double>(object, "small", 0), 5.0);
  EXPECT_EQ(fieldOr<std::string>(object, "small", "d"), "d");
  EXPECT_EQ(fieldOr<bool>(json::array(), "x", true), true);
}

TEST(AgentProtocol, SecondsAreFormattedForPeople) {
  EXPECT_EQ(formatSeconds(std::chrono::milliseconds(2000)), "2.0 s");
  EXPECT_EQ(formatSeconds(std::chrono::milliseconds(250)), "0.25 s");
  EXPECT_EQ(formatSeconds(std::chrono::milliseconds(1234)), "1.234 s");
}

}  // namespace

#include "sidecar/audit_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

sidecar::AuditRecord sampleRecord() {
  sidecar::AuditRecord record;
  record.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  record.session = "s-1";
  record.method = "POST";
  record.url = "http://127.0.0.1:8080/mcp";
  record.decision = "deny";
  record.reason = "no allowlist entry covers http://127.0.0.1:8080";
  record.rule = "";
  record.status = 403;
  record.bytes = 57;
  record.duration_ms = 3;
  return record;
}

TEST(AuditLog, LineIsOneJsonObjectWithFieldsInOrder) {
  const std::string line = sidecar::formatAuditLine(sampleRecord());
  EXPECT_EQ(line, R"({"time":"2023-11-14T22:13:20.123Z","session":"s-1","method":"POST",)"
                  R"("url":"http://127.0.0.1:8080/mcp","decision":"deny",)"
                  R"("reason":"no allowlist entry covers http://127.0.0.1:8080","rule":"",)"
                  R"("status":403,"bytes":57,"ms":3})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(AuditLog, InvalidUtf8InTheTargetDoesNotThrow) {
  auto record = sampleRecord();
  record.url = "/\xff\xfe";
  const auto parsed = nlohmann::json::parse(sidecar::formatAuditLine(record));
  EXPECT_EQ(parsed["status"], 403);
}

TEST(AuditLog, ConcurrentWritesProduceWholeLines) {
  char dir_template[] = "/tmp/sidecar-audit-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/audit.log";
  {
    auto log = sidecar::AuditLog::open(path);
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&log] {
        for (int i = 0; i < 50; ++i) log->write(sampleRecord());
      });
    }
    for (auto& writer : writers) writer.join();
  }
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["session"], "s-1");
    ++lines;
  }
  EXPECT_EQ(lines, 200);
  std::remove(path.c_str());
  rmdir(dir_template);
}

TEST(AuditLog, OpenFailureNamesThePath) {
  try {
    static_cast<void>(sidecar::AuditLog::open("/nonexistent-dir/audit.log"));
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/audit.log"), std::string::npos);
  }
}

}  // namespace

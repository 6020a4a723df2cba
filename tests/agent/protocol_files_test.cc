// File ops through the real sandbox-agent binary over pipes: binary round trips, errors, answers
// while an exec runs, and exec output past the cap saved whole to a file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "agent_client.h"
#include "protocol_test_support.h"

namespace {

using agent_test::AgentClient;
using agent_test::contains;
using agent_test::json;
using agent_test::TempDir;
using namespace std::chrono_literals;

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = -6;
  for (const unsigned char c : bytes) {
    value = (value << 8U) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(kAlphabet[(value >> static_cast<unsigned>(bits)) & 0x3FU]);
      bits -= 6;
    }
  }
  if (bits > -6)
    out.push_back(kAlphabet[((value << 8U) >> static_cast<unsigned>(bits + 8)) & 0x3FU]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

TEST(Unit, FileOpsRoundTripBinaryData) {
  TempDir dir;
  AgentClient agent(dir.path());
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  bytes += bytes;
  const json written = agent.request({{"id", 80},
                                      {"op", "write_file"},
                                      {"path", "sub/dir/data.bin"},
                                      {"data_b64", base64(bytes)},
                                      {"mode", 0600}});
  ASSERT_EQ(written["ok"], true) << written;
  EXPECT_EQ(written["bytes"], 512);
  EXPECT_EQ(written["path"], (dir.path() / "sub/dir/data.bin").string());
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "sub/dir/data.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);

  const json read = agent.request(
      {{"id", 81}, {"op", "read_file"}, {"path", "sub/dir/data.bin"}, {"max_bytes", 1000}});
  ASSERT_EQ(read["ok"], true) << read;
  EXPECT_EQ(read["data_b64"], base64(bytes));
  EXPECT_EQ(read["size"], 512);

  const json listed = agent.request({{"id", 82}, {"op", "list_files"}, {"path", "sub/dir"}});
  ASSERT_EQ(listed["ok"], true) << listed;
  ASSERT_EQ(listed["entries"].size(), 1U);
  EXPECT_EQ(listed["entries"][0]["name"], "data.bin");
  EXPECT_EQ(listed["entries"][0]["type"], "file");
  EXPECT_EQ(listed["entries"][0]["size"], 512);

  // Python sees the same bytes.
  EXPECT_EQ(agent.exec("python", "open('sub/dir/data.bin','rb').read()[250:258]")["result"],
            "b'\\xfa\\xfb\\xfc\\xfd\\xfe\\xff\\x00\\x01'");
}

TEST(Unit, FileOpErrorsExplainWhatToDo) {
  TempDir dir;
  AgentClient agent(dir.path());
  const json missing =
      agent.request({{"id", 90}, {"op", "read_file"}, {"path", "nope/x.txt"}, {"max_bytes", 10}});
  EXPECT_EQ(missing["ok"], false);
  EXPECT_TRUE(contains(missing["error"],
                       "No such file or directory: " + (dir.path() / "nope/x.txt").string()))
      << missing;
  const json directory =
      agent.request({{"id", 91}, {"op", "read_file"}, {"path", "."}, {"max_bytes", 10}});
  EXPECT_TRUE(contains(directory["error"], "Is a directory")) << directory;
  (void)agent.exec("shell", "head -c 2048 /dev/zero > big.bin");
  const json big =
      agent.request({{"id", 92}, {"op", "read_file"}, {"path", "big.bin"}, {"max_bytes", 1024}});
  EXPECT_TRUE(contains(big["error"], "2048 bytes")) << big;
}

TEST(Unit, FileOpsAreAnsweredWhileAnExecRuns) {
  TempDir dir;
  AgentClient agent(dir.path());
  agent.send({{"id", 100},
              {"op", "exec"},
              {"kind", "python"},
              {"code", "import time; time.sleep(0.5)"},
              {"timeout_ms", 10000}});
  agent.send({{"id", 101},
              {"op", "exec"},
              {"kind", "shell"},
              {"code", "echo second"},
              {"timeout_ms", 10000}});
  agent.send({{"id", 102}, {"op", "list_files"}, {"path", "."}});
  agent.send({{"id", 103}, {"op", "hello"}});
  std::vector<std::int64_t> order;
  for (int i = 0; i < 4; ++i) {
    const auto frame = agent.readFrame(5s);
    ASSERT_TRUE(frame.has_value());
    order.push_back((*frame)["id"].get<std::int64_t>());
  }
  EXPECT_EQ(order, (std::vector<std::int64_t>{102, 103, 100, 101}));
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json execSaving(AgentClient& agent, std::int64_t id, const std::string& kind,
                const std::string& code, std::int64_t max_output, std::int64_t save_bytes) {
  return agent.request({{"id", id},
                        {"op", "exec"},
                        {"kind", kind},
                        {"code", code},
                        {"timeout_ms", 20'000},
                        {"max_output_bytes", max_output},
                        {"save_output_bytes", save_bytes}});
}

TEST(Unit, OutputPastTheCapIsSavedWholeToAFile) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json py = execSaving(agent, 500, "python",
                             "import sys\nfor i in range(100000):\n    print(i)\n"
                             "sys.stderr.write('short')",
                             1000, 1 << 24);
  EXPECT_EQ(py["status"], "success") << py.dump();
  EXPECT_EQ(py["stdout"].get<std::string>().size(), 1000U);
  std::string expected;
  for (int i = 0; i < 100000; ++i) expected += std::to_string(i) + "\n";
  const auto& saved = py["saved_output"]["stdout"];
  EXPECT_EQ(saved["path"], (outputs / "exec-500-stdout.txt").string());
  EXPECT_EQ(saved["bytes"], expected.size());
  EXPECT_EQ(saved["complete"], true);
  EXPECT_EQ(slurp(saved["path"].get<std::string>()), expected);
  EXPECT_FALSE(py["saved_output"].contains("stderr"));  // it fit under the cap

  // Under the cap nothing is saved; without save_output_bytes nothing is saved either.
  EXPECT_FALSE(execSaving(agent, 501, "shell", "echo hi", 1000, 1 << 24).contains("saved_output"));
  EXPECT_FALSE(agent.exec("shell", "head -c 5000 /dev/zero", 10'000, 100).contains("saved_output"));
}

TEST(Unit, SavedOutputStopsAtItsLimitAndOnlyTheNewestFilesAreKept) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json big =
      execSaving(agent, 600, "shell", "head -c 50000 /dev/zero | tr '\\0' z", 100, 20000);
  EXPECT_EQ(big["saved_output"]["stdout"]["bytes"], 20000);
  EXPECT_EQ(big["saved_output"]["stdout"]["complete"], false);
  EXPECT_EQ(slurp(outputs / "exec-600-stdout.txt"), std::string(20000, 'z'));
  for (int i = 601; i <= 610; ++i) {
    (void)execSaving(agent, i, "shell", "head -c 300 /dev/zero", 100, 1000);
  }
  std::vector<std::string> kept;
  for (const auto& entry : std::filesystem::directory_iterator(outputs)) {
    kept.push_back(entry.path().filename().string());
  }
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), 8U);
  EXPECT_EQ(kept.front(), "exec-603-stdout.txt");
  EXPECT_EQ(kept.back(), "exec-610-stdout.txt");
}

TEST(Unit, APlantedSymlinkDoesNotRedirectSavedOutput) {
  TempDir dir;
  const auto outputs = dir.path() / "outputs";
  std::filesystem::create_directories(dir.path() / "elsewhere");
  std::filesystem::create_directory_symlink(dir.path() / "elsewhere", outputs);
  AgentClient agent(dir.path(), {}, {"--output-dir", outputs.string()});
  const json r = execSaving(agent, 700, "shell", "head -c 5000 /dev/zero", 100, 1 << 20);
  EXPECT_EQ(r["status"], "success");
  EXPECT_FALSE(r.contains("saved_output")) << r.dump();
  EXPECT_NE(r["stderr"].get<std::string>().find("[sandbox] the full stdout could not be saved"),
            std::string::npos)
      << r["stderr"];
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "elsewhere"));
}

}  // namespace

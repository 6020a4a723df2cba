// Data frames sent to the real sandbox-agent binary: a file's bytes follow the write_file request
// that announces them; a frame out of that order is refused without breaking the stream.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "agent_client.h"

namespace {

using agent_test::AgentClient;
using agent_test::json;
using agent_test::TempDir;

std::string dataFrame(const std::string& bytes) {
  return frame::encodeHeader(bytes.size(), frame::FrameKind::kData) + bytes;
}

std::string fileText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(DataFrames, AnAnnouncedDataFrameIsTheFilesContent) {
  TempDir dir;
  AgentClient agent(dir.path());
  const std::string bytes("\0\x01\xff raw\n", 8);
  agent.send({{"id", 1}, {"op", "write_file"}, {"path", "f.bin"}, {"data_frame", true}});
  agent.sendRaw(dataFrame(bytes));
  const json reply = agent.waitFor(1).final;
  EXPECT_EQ(reply["ok"], true) << reply;
  EXPECT_EQ(reply["bytes"], bytes.size());
  EXPECT_EQ(fileText(dir.path() / "f.bin"), bytes);
}

TEST(DataFrames, AMissingOrUnannouncedDataFrameIsRefusedAndTheAgentServesOn) {
  TempDir dir;
  AgentClient agent(dir.path());
  // Announced, but a JSON request comes instead: the write fails, the request is still served.
  agent.send({{"id", 1}, {"op", "write_file"}, {"path", "f.bin"}, {"data_frame", true}});
  agent.send({{"id", 2}, {"op", "list_files"}});
  const json refused = agent.waitFor(1).final;
  EXPECT_EQ(refused["ok"], false) << refused;
  EXPECT_NE(refused["error"].get<std::string>().find("data frame"), std::string::npos) << refused;
  EXPECT_EQ(agent.waitFor(2).final["ok"], true);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f.bin"));
  // A data frame nobody announced is dropped; it is never taken for a request.
  agent.sendRaw(dataFrame(R"({"id": 3, "op": "write_file", "path": "g", "data_b64": ""})"));
  EXPECT_EQ(agent.exec("shell", "echo alive")["stdout"], "alive\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "g"));
}

}  // namespace

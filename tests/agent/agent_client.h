// Test helper: runs the real sandbox-agent binary as a child process with pipes and speaks
// frames to it. Cleans up (closes stdin, then kills) in its destructor. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/frame.h"

namespace agent_test {

using nlohmann::json;
using namespace std::chrono_literals;

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Reply {
  json final;                // the reply with "ok"
  std::vector<json> events;  // events for the same id that arrived before it
};

class AgentClient {
 public:
  // Starts the agent with `cwd` as working directory and extra environment overrides.
  explicit AgentClient(const std::filesystem::path& cwd,
                       const std::map<std::string, std::string>& env = {},
                       const std::vector<std::string>& args = {});
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  void send(const json& message);
  void sendRaw(const std::string& bytes);
  // Next frame, or nullopt on timeout/EOF.
  [[nodiscard]] std::optional<json> readFrame(std::chrono::milliseconds timeout = 10s);
  // Waits for the final reply to `id`; frames for other ids are kept for later calls.
  [[nodiscard]] Reply waitFor(std::int64_t id, std::chrono::milliseconds timeout = 10s);
  // Sends `message` (which must carry "id") and waits for its final reply.
  [[nodiscard]] json request(const json& message, std::chrono::milliseconds timeout = 10s);
  [[nodiscard]] json exec(const std::string& kind, const std::string& code,
                          std::int64_t timeout_ms = 10'000, std::int64_t max_output = 1 << 20);

  void closeInput();
  // The agent's wait status once it has exited, or nullopt on timeout.
  [[nodiscard]] std::optional<int> waitExit(std::chrono::milliseconds timeout = 10s);
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_agent_ = -1;
  int from_agent_ = -1;
  bool exited_ = false;
  frame::Decoder decoder_;
  std::vector<json> stash_;  // frames read while waiting for another id
  std::int64_t next_id_ = 1'000'000;
};

// A streamed exec of `code` (output events on), as the streaming tests send it.
[[nodiscard]] json streamedExec(std::int64_t id, const std::string& kind, const std::string& code,
                                std::int64_t timeout_ms = 30'000,
                                std::int64_t max_output = 1 << 20);

// Sends `request` and reads the first frame back: the frame, and when it came.
struct FirstFrame {
  std::optional<json> frame;
  std::chrono::steady_clock::time_point at{};
};
[[nodiscard]] FirstFrame sendAndReadFirst(AgentClient& agent, const json& request);

// The output events' data as they arrived, stderr's marked "[stderr]": the order a client saw.
[[nodiscard]] std::string outputInOrder(const std::vector<json>& events);

// True once `pid` no longer runs (gone, or a zombie waiting for its parent).
[[nodiscard]] bool processGone(pid_t pid);
[[nodiscard]] bool waitUntilGone(pid_t pid, std::chrono::milliseconds timeout = 3s);

}  // namespace agent_test

// The agent's requests (agent/PROTOCOL.md: exec, files, suspend) over whatever carries them to it:
// engine-neutral, so that every backend's sandbox speaks to its agent the same way once it has a
// channel. The backend supplies `call`, which sends one request and returns its reply.
// Thread-safe when `call` is.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sandbox/agent_channel.h"
#include "sandbox/backend.h"

namespace sandbox {

class AgentClient {
 public:
  // Above the agent's own exec timeout: room for SIGINT, the kill and a driver restart.
  inline static constexpr std::chrono::milliseconds kExecGrace{10000};
  inline static constexpr std::chrono::milliseconds kFileOpDeadline{60000};
  inline static constexpr std::chrono::milliseconds kSuspendDeadline{10000};

  // Sends `request` and returns the reply when it is ok; throws SandboxError with the agent's
  // "error" when it is not, or with the stop reason when the channel closed.
  using Call = std::function<nlohmann::json(
      nlohmann::json request, std::chrono::milliseconds deadline, const AgentCallOptions& options)>;

  explicit AgentClient(Call call) : call_(std::move(call)) {}

  ExecResult exec(const ExecRequest& request, CancelToken& cancel,
                  const OutputCallback& on_output) const;
  std::size_t writeFile(const std::string& path, std::string_view bytes, int mode) const;
  std::string readFile(const std::string& path, std::size_t max_bytes) const;
  FileRange readFileRange(const std::string& path, std::uint64_t offset, std::size_t length) const;
  FileListing listFiles(const std::string& path) const;
  // The agent moves its frames back to stdio and closes its socket (before a checkpoint).
  void suspend() const;

 private:
  Call call_;
};

}  // namespace sandbox

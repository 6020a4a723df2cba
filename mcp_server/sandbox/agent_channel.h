// Request/response multiplexing with the in-container agent (agent/PROTOCOL.md) over a duplex
// ByteStream: assigns request ids, writes frames one at a time, and runs one reader thread that
// hands each final reply to its waiting caller and each event frame to that call's handler.
// Thread-safe: call() may be used from any number of threads at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "common/cancel_token.h"
#include "sandbox/backend.h"
#include "sandbox/byte_stream.h"

namespace sandbox {

// The channel is closed: the agent exited, the container died, or it stopped answering.
// what() is "the sandbox stopped: <reason>".
class ChannelClosedError : public SandboxError {
 public:
  explicit ChannelClosedError(const std::string& reason)
      : SandboxError("the sandbox stopped: " + reason) {}
};

struct AgentCallOptions {
  // Runs on the reader thread for each event frame of this call.
  std::function<void(const nlohmann::json& event)> on_event;
  CancelToken* cancel = nullptr;  // when cancelled: sends {"op":"cancel","target":<id>}
  // Events beyond this many bytes of "data" are dropped (and counted), never handed on: a
  // misbehaving agent cannot stream more into the caller than the execution may produce.
  std::size_t max_event_bytes = SIZE_MAX;
  // Sent right after the request as its data frame (a file's content, raw); empty: none.
  std::string_view request_data;
  // Receives the reply's data frame when the reply announces one ("data_frame": true); a reply
  // that announces one when this is null (nobody asked) has it dropped.
  std::string* reply_data = nullptr;
};

class AgentChannel : public std::enable_shared_from_this<AgentChannel> {
 public:
  using EventHandler = std::function<void(const nlohmann::json& event)>;
  using CallOptions = AgentCallOptions;

  // Starts the reader thread. `name` identifies the peer in logs (e.g. a container id).
  [[nodiscard]] static std::shared_ptr<AgentChannel> start(std::unique_ptr<ByteStream> stream,
                                                           std::string name);
  ~AgentChannel();  // closes the stream, fails every waiter and joins the reader
  AgentChannel(const AgentChannel&) = delete;
  AgentChannel& operator=(const AgentChannel&) = delete;

  // Sends `request` (its "id" is set here) and returns the final reply as received, ok or not.
  // Throws ChannelClosedError when the channel is or becomes closed. When `deadline` passes
  // without a reply the agent is considered hung: the channel is closed and this throws too.
  nlohmann::json call(nlohmann::json request, std::chrono::milliseconds deadline,
                      const CallOptions& options = {});

  // Closes the stream and fails all waiters with `reason`; the first reason is kept.
  void close(const std::string& reason) noexcept;

  [[nodiscard]] bool alive() const noexcept;
  [[nodiscard]] std::string closeReason() const;

 private:
  struct Waiter {
    std::optional<nlohmann::json> reply;
    std::string* reply_data = nullptr;  // where the reply's data frame goes
    EventHandler on_event;
    int dispatching = 0;  // event handlers running now; the caller waits for them to finish
    std::size_t max_event_bytes = SIZE_MAX;
    std::size_t event_bytes = 0;       // bytes (as counted by dispatch) handed on so far
    std::uint64_t dropped_events = 0;  // events beyond max_event_bytes
  };

  AgentChannel(std::unique_ptr<ByteStream> stream, std::string name);
  void readLoop() noexcept;
  // Handles one JSON frame. A reply that announces a data frame is returned instead of
  // delivered: it is delivered with the next frame, which must be that data frame.
  [[nodiscard]] std::optional<std::pair<std::uint64_t, nlohmann::json>> dispatch(
      const std::string& payload);
  // Hands `reply` (and its data frame, when there is one) to its waiter. mutex_ held.
  void deliverReply(std::uint64_t id, nlohmann::json reply, std::string* data);
  void deliverEvent(std::uint64_t id, const nlohmann::json& event, std::size_t event_bytes);
  void writeFrame(const nlohmann::json& message, std::string_view data = {});
  void sendCancel(std::uint64_t target) noexcept;

  std::unique_ptr<ByteStream> stream_;
  const std::string name_;
  std::mutex write_mutex_;  // one frame on the wire at a time

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::map<std::uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
  std::string close_reason_;

  std::thread reader_;  // last: started after every other member exists
};

}  // namespace sandbox

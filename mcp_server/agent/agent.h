// The agent: reads request frames from stdin, answers on stdout, runs executions through the
// Executor, file ops directly and preview connections (open_port) through PortRelays, and acts as
// PID 1 (reaps children, stops everything on SIGTERM or when stdin closes). Not thread-safe: one
// thread runs everything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "agent/child_process.h"
#include "agent/egress_forwarder.h"
#include "agent/event_loop.h"
#include "agent/executor.h"
#include "agent/output_spill.h"
#include "agent/port_relay.h"
#include "agent/signal_fd.h"
#include "common/frame.h"
#include "common/unique_fd.h"

namespace agent {

class Agent {
 public:
  // Installs signal handling, starts the egress forwarder (when `egress_proxy` is given) and the
  // Python driver. Throws std::system_error on failure (e.g. the egress port cannot be bound).
  // `saved_output_dir`: where output past an exec's cap is saved (see OutputSpill).
  explicit Agent(std::filesystem::path saved_output_dir = std::string(kSavedOutputDir),
                 const std::optional<EgressProxySpec>& egress_proxy = std::nullopt);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Serves until stdin closes or SIGTERM arrives; returns the process exit code.
  [[nodiscard]] int run();

 private:
  // Reads the request stream (stdin, or the channel socket once switched) or, after the switch,
  // stdin, whose end still means the server went away.
  void onReadable(int fd);
  void onSignals();
  void handleFrame(frame::Frame& frame);
  void handlePayload(const std::string& payload);
  // `data`: the request's data frame (write_file with "data_frame": true), else null.
  void dispatch(std::int64_t id, const std::string& op, const nlohmann::json& request,
                const std::string* data);
  void replyHello(std::int64_t id);
  // Op "channel": connects to the socket and makes it the request and reply stream.
  void switchToChannel(std::int64_t id, const nlohmann::json& request);
  // Op "suspend": closes the preview connections, answers on the socket, closes it and reads
  // requests from stdin again.
  void suspendChannel(std::int64_t id);
  // Op "open_port": answered once the preview connection relays (or cannot).
  void openPort(std::int64_t id, const nlohmann::json& request);
  void replyError(std::int64_t id, const std::string& error);
  // Sends `message`, followed by `data` as its data frame when given.
  void send(const nlohmann::json& message, const std::string* data = nullptr);
  void shutdown(int exit_code, std::string_view reason);

  EventLoop loop_;
  SignalFd signals_;
  Reaper reaper_;
  Executor executor_;
  std::optional<EgressForwarder> egress_;  // with --egress-proxy
  PortRelays ports_;                       // preview connections (open_port)
  int input_fd_;   // where requests come from: stdin, then the channel socket
  int output_fd_;  // where frames go: stdout, then the channel socket
  common::UniqueFd channel_;
  frame::Decoder decoder_;  // of the request stream
  // A request that announced a data frame ("data_frame": true) and waits for it.
  std::optional<nlohmann::json> awaiting_data_;
  // Reused for every read of stdin: allocating (and zeroing) 256 KiB per frame costs page
  // faults, which are dear under gVisor.
  std::string input_buffer_;
  std::filesystem::path cwd_;
  int exit_code_ = 0;
  bool shutting_down_ = false;
};

}  // namespace agent

// One persistent interpreter process running a driver that speaks the driver line protocol, for
// every language (driver.py, js_driver.js):
//   fd 3, agent -> driver: one JSON command per line, {"cell": n, "code": str,
//         "max_result_chars": int, ...language options};
//   fd 4, driver -> agent: a {"ready": true, "version": str} line, then one reply per command that
//         names its cell, {"cell": n, "status", "exit_code", "result", ...};
//   fd 1/2: the code's output (each driver block-buffers it and flushes it before replying).
// One object = one process; a restart is a new object. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "agent/output_stream.h"
#include "agent/pipe_reader.h"

namespace agent {

// Looks for an executable `name` in $PATH (or the usual directories when PATH is unset).
[[nodiscard]] std::optional<std::string> findOnPath(std::string_view name);

class InterpreterDriver {
 public:
  // Every callback may destroy the InterpreterDriver that invoked it.
  struct Events {
    std::function<void()> on_ready;
    std::function<void(OutputStream, std::string_view)> on_output;
    std::function<void(const nlohmann::json& reply)> on_reply;
    std::function<void(int wait_status)> on_exit;  // the process ended without kill()
  };

  // Spawns `executable` with `argv` (argv[0] included) in its own process group; `label` names it
  // in log lines ("Node.js"). Throws std::system_error when it cannot be started.
  InterpreterDriver(EventLoop& loop, Reaper& reaper, std::string executable,
                    std::vector<std::string> argv, std::string label, Events events);
  ~InterpreterDriver();  // kills the process group
  InterpreterDriver(const InterpreterDriver&) = delete;
  InterpreterDriver& operator=(const InterpreterDriver&) = delete;

  // Sends one cell, numbered, with the language's `options` (a JSON object, or null) merged into
  // the command; exactly one on_reply (or on_exit) follows. Returns false when the command pipe is
  // broken (the process is dying; on_exit follows).
  [[nodiscard]] bool sendCell(std::string_view code, std::size_t max_result_chars,
                              const nlohmann::json& options = nullptr);
  void interrupt() noexcept;  // SIGINT to the interpreter (interrupts the running cell)
  void killGroup() noexcept;  // SIGKILL to the interpreter and everything it started
  void drainOutput();         // collect output already written (call before using a reply)

  [[nodiscard]] bool ready() const noexcept { return ready_; }
  [[nodiscard]] const std::string& version() const noexcept { return version_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

 private:
  void onReplyBytes(std::string_view chunk);
  void handleLine(std::string_view line);

  EventLoop& loop_;
  Reaper& reaper_;
  std::string label_;
  Events events_;
  pid_t pid_ = -1;
  bool exited_ = false;
  bool ready_ = false;
  // Cells are numbered and a reply must name the cell it answers: user code can write the reply
  // pipe, and a line it wrote (or the real reply of a cell whose reply it forged) must not be
  // taken for a later cell's reply.
  std::uint64_t cells_sent_ = 0;
  std::string version_;
  UniqueFd commands_;                    // driver's fd 3
  std::unique_ptr<PipeReader> replies_;  // driver's fd 4
  std::unique_ptr<PipeReader> stdout_;
  std::unique_ptr<PipeReader> stderr_;
  std::string reply_buffer_;
  std::shared_ptr<int> liveness_ = std::make_shared<int>(0);  // expires when *this is destroyed
};

}  // namespace agent

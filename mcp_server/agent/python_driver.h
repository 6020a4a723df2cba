// One persistent Python interpreter running driver.py: starts it in its own process group, sends
// code cells, reads replies and output, interrupts it, kills it. One object = one process; a
// restart is a new object. Not thread-safe.
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

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "agent/output_stream.h"
#include "agent/pipe_reader.h"
#include "common/rich_output.h"

namespace agent {

// Looks for an executable `python3` in $PATH (or the usual directories when PATH is unset).
[[nodiscard]] std::optional<std::string> findPython3();

class PythonDriver {
 public:
  // Every callback may destroy the PythonDriver that invoked it.
  struct Events {
    std::function<void()> on_ready;
    std::function<void(OutputStream, std::string_view)> on_output;
    std::function<void(const nlohmann::json& reply)> on_reply;
    std::function<void(int wait_status)> on_exit;  // the process ended without kill()
  };

  // Spawns `python3 -u -c <driver>`. Throws std::system_error when it cannot be started.
  PythonDriver(EventLoop& loop, Reaper& reaper, const std::string& python3, Events events);
  ~PythonDriver();  // kills the process group
  PythonDriver(const PythonDriver&) = delete;
  PythonDriver& operator=(const PythonDriver&) = delete;

  // Sends one cell; exactly one on_reply (or on_exit) follows. Returns false when the driver's
  // command pipe is broken (the process is dying; on_exit follows).
  // Figures the cell leaves open, or shows, are saved under `figures_dir` and sent back inline
  // within `images`.
  [[nodiscard]] bool sendCell(std::string_view code, std::size_t max_result_chars,
                              const common::ImageLimits& images, const std::string& figures_dir);
  void interrupt() noexcept;  // SIGINT to the interpreter (KeyboardInterrupt in user code)
  void killGroup() noexcept;  // SIGKILL to the interpreter and everything it started
  void drainOutput();         // collect output already written (call before using a reply)

  [[nodiscard]] bool ready() const noexcept { return ready_; }
  [[nodiscard]] const std::string& pythonVersion() const noexcept { return python_version_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

 private:
  void onReplyBytes(std::string_view chunk);
  void handleLine(std::string_view line);

  EventLoop& loop_;
  Reaper& reaper_;
  Events events_;
  pid_t pid_ = -1;
  bool exited_ = false;
  bool ready_ = false;
  // Cells are numbered and a reply must name the cell it answers: user code can write the reply
  // pipe, and a line it wrote (or the real reply of a cell whose reply it forged) must not be
  // taken for a later cell's reply.
  std::uint64_t cells_sent_ = 0;
  std::string python_version_;
  UniqueFd commands_;                    // driver's fd 3
  std::unique_ptr<PipeReader> replies_;  // driver's fd 4
  std::unique_ptr<PipeReader> stdout_;
  std::unique_ptr<PipeReader> stderr_;
  std::string reply_buffer_;
  std::shared_ptr<int> liveness_ = std::make_shared<int>(0);  // expires when *this is destroyed
};

}  // namespace agent

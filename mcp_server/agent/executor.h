// Runs `exec` requests one at a time (FIFO): Python cells on the persistent driver, JavaScript
// cells on a persistent Node.js driver started on first use, shell commands in their own process
// groups. Owns deadlines, cancellation, output capture and the reply. Not
// thread-safe: everything runs on the agent's event loop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "agent/exec_request.h"
#include "agent/interpreter_driver.h"
#include "agent/output_stream.h"
#include "agent/shell_process.h"

namespace agent {

// How long an interrupted Python cell may take to stop before the interpreter is killed.
inline constexpr std::chrono::milliseconds kPythonInterruptGrace{500};
// How long an interrupted JavaScript cell may take to stop before Node.js is killed.
inline constexpr std::chrono::milliseconds kJavascriptInterruptGrace{500};
// How long a shell command's process group gets between SIGTERM and SIGKILL.
inline constexpr std::chrono::milliseconds kShellTerminateGrace{200};
// Files of output saved past the cap that are kept (the oldest are deleted beyond this).
inline constexpr std::size_t kMaxSavedOutputFiles = 8;

class Executor {
 public:
  using SendFrame = std::function<void(const nlohmann::json&)>;

  Executor(EventLoop& loop, Reaper& reaper, SendFrame send, std::filesystem::path saved_output_dir);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Looks for python3 and starts the driver (or records why there is none).
  void startPython();
  // Starts a warm shell for the next shell command, unless one is waiting already (or /bin/sh
  // could not be started before). Also done whenever the executor becomes idle.
  void prestartShell();

  // Queues a request; its reply (and output events) go out through `send` later.
  void submit(ExecRequest request);

  // Stops the running exec `target` or drops it from the queue. False when it is unknown.
  [[nodiscard]] bool cancel(std::int64_t target);

  // Runs `callback` once the driver has started or failed to (at once when neither is pending).
  void whenPythonSettled(std::function<void()> callback);
  // {"python": bool, "python_version": str|null, "python_error": str (only when unavailable)}
  [[nodiscard]] nlohmann::json pythonInfo() const;
  // {"javascript": bool (node is on PATH; it starts on the first JavaScript exec),
  //  "node_version": str|null (once started)}
  [[nodiscard]] nlohmann::json javascriptInfo() const;

  // Forgets process groups that have no members left (call after reaping).
  void pruneGroups();
  // No execution runs or waits.
  [[nodiscard]] bool idle() const noexcept { return !run_ && queue_.empty(); }
  // SIGKILLs every process group this executor started. For shutdown.
  void killEverything() noexcept;

 private:
  struct Run;

  void pump();
  void beginRun(ExecRequest request);
  void rejectRequest(std::int64_t id, const std::string& error);

  void startDriver();
  void settlePythonWaiters();
  void onDriverReady();
  void onDriverOutput(OutputStream stream, std::string_view data);
  void onDriverReply(const nlohmann::json& reply);
  void onDriverExit(int wait_status);
  void onPythonGraceExpired();

  // JavaScript (executor_javascript.cc)
  void startJavascript();
  void onJavascriptReady();
  void onJavascriptOutput(OutputStream stream, std::string_view data);
  void onJavascriptReply(const nlohmann::json& reply);
  void onJavascriptExit(int wait_status);
  void onJavascriptGraceExpired();

  // Shell (executor_shell.cc)
  void startShell();
  void onShellExit(int wait_status);

  void stop(ExecStatus status);  // kTimeout or kCancelled
  void appendOutput(OutputStream stream, std::string_view data);
  // Arms the timer that sends batched output events at `due` (none armed yet, something waits).
  void scheduleOutputEvents(std::optional<std::chrono::steady_clock::time_point> due);
  void finish(ExecResult result);
  // Reports the run's saved output files in `result` and deletes the oldest beyond the limit.
  void keepSavedOutputs(Run& run, ExecResult& result);

  EventLoop& loop_;
  Reaper& reaper_;
  SendFrame send_;
  std::unique_ptr<Run> run_;
  std::deque<ExecRequest> queue_;

  std::optional<std::string> python3_;
  std::unique_ptr<InterpreterDriver> driver_;
  std::string driver_failure_;          // why the driver is not running, for replies
  std::string driver_startup_output_;   // what a failing driver printed before it was ready
  bool front_start_attempted_ = false;  // the queued Python request already triggered a start
  bool state_lost_while_idle_ = false;  // the driver died between cells
  std::vector<std::function<void()>> python_waiters_;

  std::optional<std::string> node_;  // found on the first JavaScript exec
  bool node_looked_up_ = false;
  std::unique_ptr<InterpreterDriver> js_driver_;
  std::string js_failure_;         // why Node.js is not running, for replies
  std::string js_startup_output_;  // what a failing Node.js printed before it was ready
  bool js_state_lost_while_idle_ = false;

  const std::filesystem::path saved_output_dir_;
  std::deque<std::filesystem::path> saved_output_files_;  // oldest first
  std::set<pid_t> groups_;  // process groups started here that may still have members
  std::unique_ptr<ShellProcess> warm_shell_;  // started while idle, for the next shell command
  bool warm_shell_failed_ = false;            // /bin/sh could not be started: stop trying
};

}  // namespace agent

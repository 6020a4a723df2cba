// A crashed server must not leave sandboxes frozen: a frozen agent never sees its channel close,
// so its container would outlive the server, holding its memory, until a later start's sweep
// (and `docker stop` or an engine restart would wait on it). The witness is a small process of the
// server's own binary (`sandbox-mcp --freeze-witness`, in its own process group) that the server
// tells, over a pipe, each freezer file it freezes and thaws. When the pipe closes, however the
// server ended (SIGKILL included), it thaws whatever is still frozen and exits; the agents then
// see their channels closed and their containers go as after any crash.
// Thread-safe.
#pragma once

#include <filesystem>
#include <istream>
#include <mutex>
#include <string>

namespace sandbox::docker {

class FreezeWitness {
 public:
  static FreezeWitness& instance();

  // The binary that serves `--freeze-witness` (the server's own: "/proc/self/exe"), set once at
  // start; without it (tests) there is no witness.
  void useProgram(std::string program);

  // Before `freeze_file` (freezer.state or cgroup.freeze) is frozen; the witness is started on
  // the first one. False when there is no witness (it could not start or died: logged once): a
  // crash would then leave the sandbox frozen until the next start's sweep.
  bool willFreeze(const std::filesystem::path& freeze_file);
  // After it was thawed.
  void thawed(const std::filesystem::path& freeze_file) noexcept;

 private:
  FreezeWitness() = default;
  bool startLocked();                                 // mutex_ held
  bool sendLocked(const std::string& line) noexcept;  // mutex_ held

  std::mutex mutex_;
  std::string program_;
  int fd_ = -1;  // the pipe to the witness; -1: none
  bool tried_ = false;
};

// The witness itself: reads "F <file>" (frozen) and "T <file>" (thawed) lines from `in` until it
// ends, then thaws every file still frozen. Returns the process's exit code (0). Its process
// ignores the stop signals first: only the end of the server's pipe may end it.
int runFreezeWitness(std::istream& in);

// Thaws one freezer file: "THAWED" into a v1 freezer.state, "0" into a v2 cgroup.freeze.
bool thawFreezerFile(const std::filesystem::path& freeze_file) noexcept;

}  // namespace sandbox::docker

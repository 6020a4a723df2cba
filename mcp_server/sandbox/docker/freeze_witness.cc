#include "sandbox/docker/freeze_witness.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox/log.h"
#include "sandbox/spawn_setup.h"

namespace sandbox::docker {

FreezeWitness& FreezeWitness::instance() {
  static FreezeWitness witness;
  return witness;
}

void FreezeWitness::useProgram(std::string program) {
  std::lock_guard lock(mutex_);
  program_ = std::move(program);
}

bool FreezeWitness::startLocked() {
  tried_ = true;
  if (program_.empty()) return false;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  const common::UniqueFd reader(pipe_fds[0]);
  common::UniqueFd writer(pipe_fds[1]);
  const common::UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!null) return false;
  SpawnSetup setup;
  posix_spawn_file_actions_adddup2(&setup.actions, reader.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, null.get(), STDOUT_FILENO);  // not the MCP stdio
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
  // Its own process group: a Ctrl-C at the server's terminal must not end it before the server.
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP);
  std::string name = "sandbox-mcp";
  std::string mode = "--freeze-witness";
  char* argv[] = {name.data(), mode.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, program_.c_str(), &setup.actions, &setup.attributes, argv, environ) != 0) {
    return false;
  }
  fd_ = writer.release();
  logger().info("freeze witness started (pid {}): sandboxes frozen when the server ends are thawed",
                pid);
  return true;
}

bool FreezeWitness::sendLocked(const std::string& line) noexcept {
  if (fd_ < 0) return false;
  // One write of less than PIPE_BUF: whole or not at all. The server ignores SIGPIPE.
  if (::write(fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size())) return true;
  logger().warn(
      "the freeze witness is gone: a crash would leave frozen sandboxes until the next "
      "start removes them");
  ::close(fd_);
  fd_ = -1;
  return false;
}

bool FreezeWitness::willFreeze(const std::filesystem::path& freeze_file) {
  const std::string text = freeze_file.string();
  if (text.find('\n') != std::string::npos || text.size() > 1024) return false;
  std::lock_guard lock(mutex_);
  if (!tried_ && !startLocked() && !program_.empty()) {
    logger().warn(
        "the freeze witness could not start: a crash would leave frozen sandboxes until "
        "the next start removes them");
  }
  return sendLocked("F " + text + "\n");
}

void FreezeWitness::thawed(const std::filesystem::path& freeze_file) noexcept {
  try {
    std::lock_guard lock(mutex_);
    (void)sendLocked("T " + freeze_file.string() + "\n");
  } catch (const std::exception&) {
    // Out of memory for a line: the witness thaws it once more at the end, harmlessly.
  }
}

bool thawFreezerFile(const std::filesystem::path& freeze_file) noexcept {
  const bool v2 = freeze_file.filename() == "cgroup.freeze";
  const common::UniqueFd fd(::open(freeze_file.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return false;
  const char* text = v2 ? "0" : "THAWED";
  const auto size = static_cast<ssize_t>(std::char_traits<char>::length(text));
  return ::write(fd.get(), text, static_cast<std::size_t>(size)) == size;
}

int runFreezeWitness(std::istream& in) {
  std::set<std::string> frozen;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 3 || line[1] != ' ') continue;
    const std::string file = line.substr(2);
    const auto name = std::filesystem::path(file).filename();
    if (name != "freezer.state" && name != "cgroup.freeze") continue;  // nothing else is written
    if (line[0] == 'F') frozen.insert(file);
    if (line[0] == 'T') frozen.erase(file);
  }
  int thawed = 0;
  for (const auto& file : frozen) thawed += thawFreezerFile(file) ? 1 : 0;
  if (thawed > 0) {
    std::fprintf(stderr, "sandbox-mcp freeze witness: the server ended; thawed %d sandbox(es)\n",
                 thawed);
  }
  return 0;
}

}  // namespace sandbox::docker

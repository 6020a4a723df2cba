#include "sandbox/host_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "common/unique_fd.h"
#include "sandbox/spawn_setup.h"

namespace sandbox {
namespace {

using Clock = std::chrono::steady_clock;

void keepTail(std::string& output, const char* data, std::size_t size) {
  output.append(data, size);
  if (output.size() > kMaxHostCommandOutputBytes) {
    output.erase(0, output.size() - kMaxHostCommandOutputBytes);
  }
}

}  // namespace

HostCommandResult runHostCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout) {
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
    throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                            "runHostCommand needs an absolute program path");
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  common::UniqueFd reader(pipe_fds[0]);
  common::UniqueFd writer(pipe_fds[1]);

  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, writer.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, writer.get(), STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
  sigset_t defaults;
  sigfillset(&defaults);
  posix_spawnattr_setsigdefault(&setup.attributes, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&setup.attributes, &none);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  char path_variable[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* environment[] = {path_variable, nullptr};

  pid_t pid = 0;
  if (const int error = ::posix_spawn(&pid, args.front(), &setup.actions, &setup.attributes,
                                      args.data(), environment);
      error != 0) {
    throw std::system_error(error, std::generic_category(), "starting " + argv.front());
  }
  writer.reset();  // EOF on the reader once the program (and what it started) closes its copy

  HostCommandResult result;
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{reader.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(reader.get(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    keepTail(result.output, buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace sandbox

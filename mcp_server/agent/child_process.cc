#include "agent/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "agent/credentials.h"

namespace agent {
namespace {

constexpr std::size_t kMaxMappedFds = 8;
// The child runs on its own stack until it execs; exec and the calls before it need little.
constexpr std::size_t kChildStackBytes = std::size_t{64} * 1024;

// What the child needs, prepared by the parent: the child shares the parent's memory (CLONE_VM)
// and must not allocate, lock or touch anything the parent might be changing.
struct ChildArgs {
  const SpawnSpec* spec = nullptr;
  char* const* argv = nullptr;
  int stdin_fd = -1;
  int exec_errno = 0;  // written by the child when it cannot exec; read once it has gone
};

// The child of spawnProcess, on its own stack, sharing the parent's memory until execve: only
// async-signal-safe calls, and credentials changed with raw syscalls (glibc's wrappers would
// try to coordinate with the parent's threads).
int execChild(void* raw) {
  auto& args = *static_cast<ChildArgs*>(raw);
  const SpawnSpec& spec = *args.spec;
  // Dispositions first, then the mask: no signal may be delivered to an inherited handler.
  for (int sig = 1; sig < NSIG; ++sig) {
    ::signal(sig, SIG_DFL);  // also undoes SIG_IGN for SIGPIPE, which exec would keep
  }
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  ::setpgid(0, 0);
  // First move every source above the target range, so one mapping never clobbers another's
  // source; dup2 then clears close-on-exec on each target.
  constexpr int kHighFd = 64;
  int high[kMaxMappedFds];
  const std::size_t count = spec.fds.size();
  for (std::size_t i = 0; i < count; ++i) {
    high[i] = ::fcntl(spec.fds[i].second, F_DUPFD_CLOEXEC, kHighFd);
  }
  bool stdin_mapped = false;
  for (std::size_t i = 0; i < count; ++i) {
    ::dup2(high[i], spec.fds[i].first);
    if (spec.fds[i].first == 0) stdin_mapped = true;
  }
  if (!stdin_mapped) ::dup2(args.stdin_fd, 0);
  if (!becomeCodeUserInChild()) {
    args.exec_errno = errno;
    ::_exit(127);
  }
  ::execve(spec.executable.c_str(), args.argv, environ);
  args.exec_errno = errno;
  ::_exit(127);
}

// /dev/null for reading, or (in an image without it) a pipe whose writer is already closed.
UniqueFd openEmptyInput() {
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull) return devnull;
  Pipe p = makePipe(false);
  return std::move(p.read_end);
}

}  // namespace

Pipe makePipe(bool nonblocking_read) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  if (nonblocking_read) {
    const int flags = ::fcntl(fds[0], F_GETFL);
    ::fcntl(fds[0], F_SETFL, flags | O_NONBLOCK);
  }
  return p;
}

pid_t spawnProcess(const SpawnSpec& spec) {
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  if (spec.fds.size() > kMaxMappedFds) {
    throw std::invalid_argument("spawnProcess: too many fds to map for " + spec.executable);
  }
  const UniqueFd empty_input = openEmptyInput();
  ChildArgs args{&spec, argv.data(), empty_input.get(), 0};
  // CLONE_VFORK: this thread waits until the child has exec'd or exited, without copying the
  // agent's address space. Under gVisor a full fork costs several times more (bench/README.md).
  std::vector<char> stack(kChildStackBytes);
  const pid_t pid =
      ::clone(execChild, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  if (pid < 0) {
    throw std::system_error(errno, std::generic_category(), "starting " + spec.executable);
  }
  ::setpgid(pid, pid);  // also in the parent, so killing the group right away cannot miss
  if (args.exec_errno != 0) {
    // The child has exited with 127; the Reaper collects it.
    throw std::system_error(args.exec_errno, std::generic_category(), "exec " + spec.executable);
  }
  return pid;
}

int shellStyleExitCode(int wait_status) noexcept {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

std::string describeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(wait_status)) + " (" +
           ::strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "exited with code " + std::to_string(shellStyleExitCode(wait_status));
}

void Reaper::reapAll() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      if (pid < 0 && errno == EINTR) continue;
      return;  // 0: children still running; ECHILD: none left
    }
    auto it = callbacks_.find(pid);
    if (it == callbacks_.end()) continue;  // an orphan or a forgotten child: just reaped
    ExitCallback callback = std::move(it->second);
    callbacks_.erase(it);
    callback(status);
  }
}

void signalGroup(pid_t pgid, int signal) noexcept {
  if (pgid > 1) ::kill(-pgid, signal);
}

bool groupExists(pid_t pgid) noexcept {
  return pgid > 1 && (::kill(-pgid, 0) == 0 || errno != ESRCH);
}

namespace {

// Pids whose parent is this process, read from /proc/<pid>/stat ("pid (comm) state ppid ...").
std::vector<pid_t> directChildren() {
  std::vector<pid_t> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    char stat[512];
    const ssize_t n = ::read(fd.get(), stat, sizeof stat - 1);
    if (n <= 0) continue;
    stat[n] = '\0';
    const char* after_comm = std::strrchr(stat, ')');  // comm may contain spaces and parens
    if (after_comm == nullptr) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(after_comm + 1, " %c %ld", &state, &ppid) == 2 && ppid == self) {
      children.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return children;
}

}  // namespace

void killRemainingChildren(std::chrono::milliseconds wait) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    // Reap first: zombies are children too, and killing one does nothing.
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const std::vector<pid_t> children = directChildren();
    if (children.empty() || std::chrono::steady_clock::now() >= deadline) return;
    for (const pid_t pid : children) ::kill(pid, SIGKILL);
    ::usleep(2000);
  }
}

}  // namespace agent

#include "agent/egress_forwarder.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "agent/egress_relay.h"

namespace agent {
namespace {

// The fallback's bound when /proc is not there to list open descriptors.
constexpr int kMaxFdToClose = 65536;

// stdin and stdout carry the agent's frames: /dev/null instead. stderr stays, for diagnostics.
// Everything else the agent had open (the channel socket, the signalfd, pipes to drivers) goes.
void closeInheritedFds(int keep) {
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (const int fd : {0, 1}) {
    if (devnull >= 0) {
      ::dup2(devnull, fd);
    } else {
      ::close(fd);
    }
  }
  if (devnull > 2 && devnull != keep) ::close(devnull);
  std::vector<int> open_fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    const int listing = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      int fd = -1;
      const char* end = entry->d_name + std::strlen(entry->d_name);
      if (std::from_chars(entry->d_name, end, fd).ptr != end) continue;  // "." and ".."
      if (fd > 2 && fd != keep && fd != listing) open_fds.push_back(fd);
    }
    ::closedir(dir);
  } else {
    rlimit limit{};
    const int last = ::getrlimit(RLIMIT_NOFILE, &limit) == 0
                         ? static_cast<int>(std::min<rlim_t>(limit.rlim_cur, kMaxFdToClose))
                         : kMaxFdToClose;
    for (int fd = 3; fd < last; ++fd) {
      if (fd != keep) open_fds.push_back(fd);
    }
  }
  for (const int fd : open_fds) ::close(fd);
}

// The agent blocks these for its signalfd and gives them a no-op handler; the forwarder takes
// them the ordinary way.
void resetSignals() {
  for (const int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL; this is for anything else
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
}

// The forked child: becomes the forwarder and never returns (the agent's objects, copied by
// fork, must not run their destructors here: the executor's would kill the code's processes).
[[noreturn]] void serveInChild(int listener, const std::string& socket_path, pid_t agent) {
  resetSignals();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // outside a container (tests) the agent may be killed
  if (::getppid() != agent) ::_exit(0);
  ::prctl(PR_SET_NAME, "egress-forward");  // what ps shows in the sandbox
  closeInheritedFds(listener);
  try {
    auto upstream = makeEgressUpstream(socket_path);
    if (!upstream) {
      std::fprintf(stderr, "sandbox-agent: egress forwarder: socket path too long: %s\n",
                   socket_path.c_str());
      ::_exit(2);
    }
    EgressRelay relay(UniqueFd(listener), std::move(*upstream));
    relay.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent: egress forwarder: %s\n", e.what());
    ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

std::optional<EgressProxySpec> parseEgressProxy(std::string_view text) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) return std::nullopt;
  const std::string_view port = text.substr(0, equals);
  const std::string_view path = text.substr(equals + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return std::nullopt;
  }
  if (path.empty() || path.front() != '/' || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return std::nullopt;
  }
  return EgressProxySpec{static_cast<std::uint16_t>(value), std::string(path)};
}

EgressForwarder::EgressForwarder(EventLoop& loop, Reaper& reaper, const EgressProxySpec& spec,
                                 std::chrono::milliseconds restart_delay)
    : loop_(loop),
      reaper_(reaper),
      socket_path_(spec.socket_path),
      listener_(listenOnLoopback(spec.port)),
      port_(boundPort(listener_.get())),
      restart_delay_(restart_delay),
      next_delay_(restart_delay) {
  start();
}

EgressForwarder::~EgressForwarder() { stop(); }

void EgressForwarder::start() {
  restart_timer_ = 0;
  if (stopped_) return;
  const pid_t agent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) serveInChild(listener_.get(), socket_path_, agent);
  if (pid < 0) {
    std::fprintf(stderr, "sandbox-agent: egress forwarder: fork failed (%s); retrying in %lld ms\n",
                 std::strerror(errno), static_cast<long long>(next_delay_.count()));
    onExit(-1);
    return;
  }
  pid_ = pid;
  started_at_ = std::chrono::steady_clock::now();
  reaper_.onExit(pid, [this](int wait_status) { onExit(wait_status); });
}

void EgressForwarder::onExit(int wait_status) {
  if (pid_ > 0) {
    std::fprintf(stderr, "sandbox-agent: egress forwarder (pid %d) %s; restarting it in %lld ms\n",
                 static_cast<int>(pid_), describeExit(wait_status).c_str(),
                 static_cast<long long>(next_delay_.count()));
  }
  pid_ = -1;
  if (std::chrono::steady_clock::now() - started_at_ >= kEgressStableRun) {
    next_delay_ = restart_delay_;  // it had been running fine: this is no crash loop
  }
  restart_timer_ = loop_.addTimer(next_delay_, [this] { start(); });
  next_delay_ = std::min(next_delay_ * 2, std::max(kEgressMaxRestartDelay, restart_delay_));
}

void EgressForwarder::stop() noexcept {
  stopped_ = true;
  if (restart_timer_ != 0) loop_.cancelTimer(restart_timer_);
  restart_timer_ = 0;
  if (pid_ <= 0) return;
  reaper_.forget(pid_);
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace agent

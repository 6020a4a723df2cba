#include "agent/signal_fd.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace agent {
namespace {

constexpr int kHandledSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

void noOpHandler(int /*signal*/) {}

}  // namespace

SignalFd::SignalFd() {
  sigset_t mask;
  ::sigemptyset(&mask);
  for (const int sig : kHandledSignals) {
    ::sigaddset(&mask, sig);
    // A real handler (never run: the signal stays blocked) so PID 1 is not shielded from it.
    struct sigaction action {};
    action.sa_handler = noOpHandler;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
  ::signal(SIGPIPE, SIG_IGN);
  if (::sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) {
    throw std::system_error(errno, std::generic_category(), "sigprocmask");
  }
  fd_.reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) throw std::system_error(errno, std::generic_category(), "signalfd");
}

std::vector<int> SignalFd::readPending() {
  std::vector<int> signals;
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return signals;
  }
}

}  // namespace agent

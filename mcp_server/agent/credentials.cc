#include "agent/credentials.h"

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <vector>

extern char** environ;  // NOLINT: POSIX

namespace agent {
namespace {

std::optional<CodeUser>& storedCodeUser() noexcept {
  static std::optional<CodeUser> user;
  return user;
}

template <class T>
bool parseId(std::string_view text, T& out) {
  unsigned long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return false;
  if (value > 0x7fffffffUL) return false;
  out = static_cast<T>(value);
  return true;
}

void check(int rc, const char* what) {
  if (rc != 0) {
    throw std::system_error(errno, std::generic_category(),
                            std::string(what) +
                                " (the sandbox container needs User 0:0 with CAP_SETUID and "
                                "CAP_SETGID to separate the agent from the code it runs)");
  }
}

}  // namespace

std::optional<CodeUser> parseCodeUser(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  CodeUser user;
  if (!parseId(text.substr(0, colon), user.uid) || !parseId(text.substr(colon + 1), user.gid)) {
    return std::nullopt;
  }
  return user;
}

void adoptCodeUser(const CodeUser& user) {
  // Supplementary groups first (needs CAP_SETGID, still effective while euid is 0).
  check(::setgroups(0, nullptr), "setgroups");
  check(::setresgid(0, user.gid, 0), "setresgid");
  // Real and saved uid stay 0: a process of the code user differs from us in every id the kernel
  // compares for ptrace, /proc/<pid>/fd and kill. The effective uid leaving 0 clears every
  // effective capability; the children can still drop to `user` because it is our euid.
  check(::setresuid(0, user.uid, 0), "setresuid");
  // Nothing left needs a capability (children drop to our euid unprivileged): clear the
  // permitted set too, so even a subverted agent cannot use CAP_SETUID/CAP_SETGID again.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  check(static_cast<int>(::syscall(SYS_capset, &header, data)), "capset");
  // Linux marks us non-dumpable on the uid change already; say so explicitly for any runtime.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  storedCodeUser() = user;
}

const std::optional<CodeUser>& codeUser() noexcept { return storedCodeUser(); }

bool becomeCodeUserInChild() noexcept {
  const auto& user = storedCodeUser();
  if (!user) return true;
  // Raw syscalls: this runs in a child that shares the agent's memory (spawnProcess), where
  // glibc's wrappers may try to coordinate the change with threads that are not the child's.
  return ::syscall(SYS_setresgid, user->gid, user->gid, user->gid) == 0 &&
         ::syscall(SYS_setresuid, user->uid, user->uid, user->uid) == 0;
}

void scrubInitialEnvironment() {
  if (environ == nullptr || environ[0] == nullptr) return;
  std::vector<std::string> saved;
  char* begin = environ[0];
  char* end = begin;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    saved.emplace_back(*entry);
    char* const tail = *entry + std::strlen(*entry) + 1;
    if (*entry < begin) begin = *entry;
    if (tail > end) end = tail;
  }
  ::clearenv();
  for (const auto& variable : saved) {
    const auto eq = variable.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    ::setenv(variable.substr(0, eq).c_str(), variable.c_str() + eq + 1, 1);
  }
  std::memset(begin, 0, static_cast<std::size_t>(end - begin));
}

}  // namespace agent

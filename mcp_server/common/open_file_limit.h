// The process's open-file limit (RLIMIT_NOFILE): every HTTP connection, sandbox channel and
// engine connection holds a descriptor. The soft limit is often far below the hard one (1024
// against 524288 under systemd); raising it needs no privilege.
#pragma once

#include <sys/resource.h>

#include <cerrno>
#include <cstdint>

namespace common {

struct OpenFileLimit {
  std::uint64_t before = 0;  // the soft limit found
  std::uint64_t now = 0;     // the soft limit in force
  std::uint64_t hard = 0;
  int error = 0;  // errno of a failed getrlimit/setrlimit, else 0
};

// Raises the soft limit to the hard limit. Not thread-safe against other setrlimit callers:
// call once at start.
inline OpenFileLimit raiseOpenFileLimit() noexcept {
  OpenFileLimit result;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    result.error = errno;
    return result;
  }
  result.before = result.now = limit.rlim_cur;
  result.hard = limit.rlim_max;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      result.now = limit.rlim_cur;
    } else {
      result.error = errno;
    }
  }
  return result;
}

// The soft limit in force; 0 when it cannot be read.
inline std::uint64_t openFileLimit() noexcept {
  rlimit limit{};
  return ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 0;
}

}  // namespace common

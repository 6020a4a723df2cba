// Blocking socket helpers for the egress forwarder tests: a Unix-socket "gateway" in a temporary
// directory and TCP clients on 127.0.0.1. Header-only; each call throws std::runtime_error on
// failure, so a broken setup fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "common/unique_fd.h"

namespace egress_test {

using common::UniqueFd;
using namespace std::chrono_literals;

inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

// A directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "egress-XXXXXX").string();
    check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline sockaddr_un unixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) throw std::runtime_error("socket path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// A blocking Unix stream socket bound at `path`; listening unless `listen` is false (then a
// connect is refused: ECONNREFUSED).
inline UniqueFd unixListener(const std::string& path, bool listen = true) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  check(fd.valid(), "socket(AF_UNIX)");
  const sockaddr_un address = unixAddress(path);
  check(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0,
        "bind " + path);
  if (listen) check(::listen(fd.get(), 512) == 0, "listen");
  return fd;
}

// Waits (at most 10 s) for `fd` to report `events`.
inline void waitFor(int fd, short events) {
  pollfd p{fd, events, 0};
  const int ready = ::poll(&p, 1, 10'000);
  check(ready >= 0, "poll");
  if (ready == 0) throw std::runtime_error("timed out waiting for a socket");
}

inline UniqueFd acceptOne(int listener) {
  waitFor(listener, POLLIN);
  UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  check(fd.valid(), "accept");
  return fd;
}

inline UniqueFd connectTcp(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  check(fd.valid(), "socket(AF_INET)");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0,
        "connect 127.0.0.1:" + std::to_string(port));
  return fd;
}

// A port that was free a moment ago (for a child that must be told its port up front).
inline std::uint16_t freeLoopbackPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0,
        "bind 127.0.0.1:0");
  socklen_t length = sizeof address;
  check(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0,
        "getsockname");
  return ntohs(address.sin_port);
}

inline void sendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    check(n > 0 || errno == EINTR, "send");
    if (n > 0) bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads until EOF (or a reset, which ends the read too).
inline std::string readToEof(int fd) {
  std::string all;
  char buffer[65536];
  for (;;) {
    waitFor(fd, POLLIN);
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return all;
    all.append(buffer, static_cast<std::size_t>(n));
  }
}

// `size` bytes from a seeded generator: the same for the same seed, unlike any pattern a relay
// could get right by accident.
inline std::string randomBytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i + 8 <= size; i += 8) {
    const std::uint64_t word = generator();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  return bytes;
}

// Sends `a_sends` on `a` and `b_sends` on `b` at once, each followed by its EOF, and reads both
// to their ends: {what `b` received, what `a` received}.
inline std::pair<std::string, std::string> exchange(int a, const std::string& a_sends, int b,
                                                    const std::string& b_sends) {
  std::thread a_writer([&] {
    sendAll(a, a_sends);
    ::shutdown(a, SHUT_WR);
  });
  std::thread b_writer([&] {
    sendAll(b, b_sends);
    ::shutdown(b, SHUT_WR);
  });
  std::string at_b = readToEof(b);
  std::string at_a = readToEof(a);
  a_writer.join();
  b_writer.join();
  return {std::move(at_b), std::move(at_a)};
}

inline std::string readExactly(int fd, std::size_t size) {
  std::string all(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    waitFor(fd, POLLIN);
    const ssize_t n = ::recv(fd, all.data() + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, "recv (" + std::to_string(done) + " of " + std::to_string(size) + " bytes)");
    done += static_cast<std::size_t>(n);
  }
  return all;
}

// Open descriptors of process `pid` ("self" by default).
inline int openFdCount(const std::string& pid = "self") {
  int count = 0;
  DIR* dir = ::opendir(("/proc/" + pid + "/fd").c_str());
  if (dir == nullptr) return -1;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - (pid == "self" ? 1 : 0);  // the listing's own descriptor
}

// Polls `condition` every millisecond for up to 10 s.
template <class Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    ::usleep(1000);
  }
  return true;
}

}  // namespace egress_test

// Helpers for the preview relay tests (op "open_port"): a TCP listener on 127.0.0.1 standing for
// the server sandbox code runs, a listen backlog filled so that a connect stays in progress, and
// the CPU time a process has used. Header-only; each call throws std::runtime_error on failure.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "egress_test_support.h"

namespace port_test {

using egress_test::check;
using egress_test::UniqueFd;

// A token of the shape the server sends (32 lowercase hex digits).
inline constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

struct TcpServer {
  UniqueFd listener;
  std::uint16_t port = 0;
};

// A blocking TCP listener on 127.0.0.1 at a free port.
inline TcpServer tcpServer(int backlog = 512) {
  TcpServer server;
  server.listener.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  check(server.listener.valid(), "socket(AF_INET)");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(server.listener.get(), reinterpret_cast<const sockaddr*>(&address),
               sizeof address) == 0,
        "bind 127.0.0.1:0");
  check(::listen(server.listener.get(), backlog) == 0, "listen");
  socklen_t length = sizeof address;
  check(::getsockname(server.listener.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0,
        "getsockname");
  server.port = ntohs(address.sin_port);
  return server;
}

// Connects to 127.0.0.1:`port` (whose listener nobody accepts on) until a connect stays in
// progress: the accept queue is full and Linux drops further SYNs, so the next connect waits too.
// The returned sockets keep the queue full.
inline std::vector<UniqueFd> fillBacklog(std::uint16_t port) {
  std::vector<UniqueFd> fillers;
  for (int i = 0; i < 32; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    check(fd.valid(), "socket(AF_INET)");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int status =
        ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
    check(status == 0 || errno == EINPROGRESS, "connect");
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, 200);
    fillers.push_back(std::move(fd));
    if (ready == 0) return fillers;  // this one waits: the queue is full
  }
  throw std::runtime_error("the listen backlog of 127.0.0.1:" + std::to_string(port) +
                           " never filled");
}

// User plus system CPU time of `pid` so far, in clock ticks (utime + stime of /proc/PID/stat).
inline long cpuTicks(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) throw std::runtime_error("cannot read /proc/PID/stat");
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  // After the command: state is field 3; utime and stime are fields 14 and 15.
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::stol(field);
    if (index == 15) stime = std::stol(field);
  }
  return utime + stime;
}

}  // namespace port_test

#include "test_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace sidecar_test {
namespace {

using namespace std::chrono_literals;

int listenLoopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 64) != 0) {
    ::close(fd);
    throw std::runtime_error("bind/listen on 127.0.0.1 failed");
  }
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return fd;
}

bool sendAll(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string chunk(const std::string& data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return out.str();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

nlohmann::json headersOf(const std::string& head) {
  nlohmann::json headers = nlohmann::json::object();
  std::istringstream lines(head);
  std::string line;
  std::getline(lines, line);  // request line
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    // A repeated field is joined as HTTP combines it ("a, b"), so tests see duplicates.
    const std::string name = lower(line.substr(0, colon));
    headers[name] =
        headers.contains(name) ? headers[name].get<std::string>() + ", " + value : value;
  }
  return headers;
}

std::string jsonResponse(const nlohmann::json& body) {
  const std::string text = body.dump();
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text;
}

constexpr const char* kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    "Connection: close\r\n\r\n";

}  // namespace

std::uint16_t unusedPort() {
  std::uint16_t port = 0;
  ::close(listenLoopback(port));
  return port;
}

TestUpstream::TestUpstream() {
  listen_fd_ = listenLoopback(port_);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TestUpstream::~TestUpstream() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    const std::lock_guard lock(mutex_);
    for (const int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    sse_released_ = true;
    threads.swap(connections_);
  }
  changed_.notify_all();
  for (auto& thread : threads) thread.join();
}

std::vector<std::string> TestUpstream::targetsSeen() {
  const std::lock_guard lock(mutex_);
  return targets_;
}

void TestUpstream::releaseSse() {
  {
    const std::lock_guard lock(mutex_);
    sse_released_ = true;
  }
  changed_.notify_all();
}

bool TestUpstream::waitForeverClosed(int timeout_ms) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return forever_closed_; });
}

void TestUpstream::acceptLoop() {
  while (!stopping_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    const std::lock_guard lock(mutex_);
    open_fds_.push_back(fd);
    connections_.emplace_back([this, fd] { serve(fd); });
  }
}

void TestUpstream::serve(int fd) {
  serveOne(fd);
  {
    const std::lock_guard lock(mutex_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  }
  ::close(fd);
}

void TestUpstream::serveOne(int fd) {
  std::string data;
  char buffer[4096];
  std::size_t head_end = std::string::npos;
  std::size_t body_length = 0;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const auto headers = headersOf(data.substr(0, head_end));
        if (headers.contains("content-length")) {
          body_length = std::stoul(headers["content-length"].get<std::string>());
        }
      }
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + body_length) break;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  const std::string head = data.substr(0, head_end);
  std::istringstream request_line(head);
  std::string method;
  std::string target;
  request_line >> method >> target;
  {
    const std::lock_guard lock(mutex_);
    targets_.push_back(target);
  }
  route(fd, method, target, head, data.substr(head_end + 4, body_length));
}

void TestUpstream::route(int fd, const std::string& method, const std::string& target,
                         const std::string& head, const std::string& body) {
  if (target == "/ok/echo") {
    sendAll(fd, jsonResponse({{"method", method},
                              {"target", target},
                              {"headers", headersOf(head)},
                              {"body", body}}));
  } else if (target == "/ok/sse") {
    sendAll(fd, kSseHead);
    sendAll(fd, chunk("data: one\n\n"));
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [this] { return sse_released_; });
    lock.unlock();
    second_sse_sent_ = true;
    sendAll(fd, chunk("data: two\n\n") + "0\r\n\r\n");
  } else if (target == "/ok/forever") {
    bool open = sendAll(fd, kSseHead);
    for (int i = 0; open && i < 200 && !stopping_; ++i) {
      open = sendAll(fd, chunk("data: tick\n\n"));
      std::this_thread::sleep_for(50ms);
    }
    const std::lock_guard lock(mutex_);
    forever_closed_ = !open;
    changed_.notify_all();
  } else if (target == "/ok/redirect") {
    sendAll(fd, "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:" + std::to_string(port_) +
                    "/secret\r\nContent-Length: 5\r\nConnection: close\r\n\r\nmoved");
  } else if (target == "/ok/slow") {
    pollfd wait{fd, POLLIN, 0};
    ::poll(&wait, 1, 10'000);  // until the peer (or the destructor) closes
  } else if (target == "/restricted/mcp") {
    const auto message = nlohmann::json::parse(body, nullptr, false);
    sendAll(fd, jsonResponse({{"jsonrpc", "2.0"},
                              {"id", message.is_object() ? message.value("id", nlohmann::json())
                                                         : nlohmann::json()},
                              {"result", nlohmann::json::object()}}));
  } else {
    sendAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  }
}

}  // namespace sidecar_test

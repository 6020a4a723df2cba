// A scripted HTTP/1.1 server on a Unix socket standing in for dockerd in unit tests. Serves one
// connection at a time on its own thread; `respond` maps each request to raw response bytes.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace sandbox::testing {

using common::UniqueFd;

struct FakeRequest {
  std::string head;  // request line and headers
  std::string body;
};

struct FakeReply {
  std::string bytes;          // written verbatim
  bool close_after = false;   // close the connection after writing
  bool never_answer = false;  // read the request, then wait until the server stops
};

class FakeEngine {
 public:
  using Responder = std::function<FakeReply(const FakeRequest&)>;

  FakeEngine(std::string path, Responder respond)
      : path_(std::move(path)), respond_(std::move(respond)) {
    ::unlink(path_.c_str());
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof(address.sun_path) - 1);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_.get(), 8) != 0) {
      throw std::runtime_error("fake engine cannot listen on " + path_);
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeEngine() {
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    ::shutdown(current_.load(), SHUT_RDWR);
    thread_.join();
    ::unlink(path_.c_str());
  }
  FakeEngine(const FakeEngine&) = delete;
  FakeEngine& operator=(const FakeEngine&) = delete;

  [[nodiscard]] int connections() const { return connections_.load(); }
  [[nodiscard]] int requests() const { return requests_.load(); }

  static std::string reply(int status, const std::string& reason, const std::string& body,
                           const std::string& extra_headers = "") {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n" + extra_headers + "\r\n" + body;
  }

 private:
  void serve() {
    while (!stopping_) {
      UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!connection.valid()) return;
      ++connections_;
      current_ = connection.get();
      serveConnection(connection.get());
      current_ = -1;
    }
  }

  void serveConnection(int fd) {
    std::string buffer;
    char chunk[4096];
    for (;;) {
      std::size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
      FakeRequest request;
      request.head = buffer.substr(0, head_end);
      std::size_t length = 0;
      if (const auto at = request.head.find("Content-Length: "); at != std::string::npos) {
        length = std::stoul(request.head.substr(at + 16));
      }
      buffer.erase(0, head_end + 4);
      while (buffer.size() < length) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      ++requests_;
      const FakeReply out = respond_(request);
      if (out.never_answer) {
        while (::read(fd, chunk, sizeof chunk) > 0) {
        }
        return;
      }
      if (::send(fd, out.bytes.data(), out.bytes.size(), MSG_NOSIGNAL) < 0) return;
      if (out.close_after) return;
    }
  }

  std::string path_;
  Responder respond_;
  UniqueFd listener_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> current_{-1};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace sandbox::testing

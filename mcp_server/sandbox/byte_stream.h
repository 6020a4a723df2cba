// A duplex byte stream the agent channel runs over: the attached container stdio in production,
// a socketpair in tests. Thread-safety: one reader thread and one writer at a time may use it
// concurrently; shutdown() may be called from any thread at any time.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace sandbox {

using common::UniqueFd;

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Blocks until bytes arrive and appends them to `out`; returns how many, 0 at end of stream.
  // Throws std::system_error on a transport failure.
  virtual std::size_t read(std::string& out) = 0;
  // Writes every byte or throws std::system_error (including when the send timeout passes).
  virtual void write(std::string_view bytes) = 0;
  // Wakes a blocked read() (it returns 0) and makes later writes fail. Never throws.
  virtual void shutdown() noexcept = 0;
};

// A ByteStream over a connected stream socket (socketpair, Unix or TCP socket) that it owns.
class SocketStream : public ByteStream {
 public:
  // A zero send_timeout blocks writes indefinitely.
  explicit SocketStream(UniqueFd fd,
                        std::chrono::milliseconds send_timeout = std::chrono::milliseconds{0});
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  std::size_t read(std::string& out) override;
  void write(std::string_view bytes) override;
  void shutdown() noexcept override;

  [[nodiscard]] int fd() const noexcept { return fd_.get(); }

 private:
  UniqueFd fd_;
};

}  // namespace sandbox

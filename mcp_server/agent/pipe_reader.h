// Reads a non-blocking pipe from the event loop and hands each chunk to a callback, so output is
// consumed as it is produced (a child never blocks on a full pipe). Not thread-safe.
#pragma once

#include <functional>
#include <string_view>

#include "agent/event_loop.h"
#include "common/unique_fd.h"

namespace agent {

using common::UniqueFd;

class PipeReader {
 public:
  using DataCallback = std::function<void(std::string_view chunk)>;

  // Takes ownership of `fd` (which must be O_NONBLOCK) and starts watching it.
  PipeReader(EventLoop& loop, UniqueFd fd, DataCallback on_data);
  ~PipeReader();
  PipeReader(const PipeReader&) = delete;
  PipeReader& operator=(const PipeReader&) = delete;

  // Reads whatever the pipe holds right now (bounded, so a writer that never pauses cannot pin the
  // agent here). Used when a child says it is done, before its output is collected.
  void drain();
  [[nodiscard]] bool atEof() const noexcept { return !fd_.valid(); }

 private:
  // Returns false once the pipe is exhausted for now (EAGAIN) or closed.
  bool readOnce();
  void close() noexcept;

  EventLoop& loop_;
  UniqueFd fd_;
  DataCallback on_data_;
};

}  // namespace agent

// Bounded capture of one output stream (stdout or stderr of an execution): counts every byte,
// keeps at most a fixed number, and remembers whether anything was dropped. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "agent/output_spill.h"
#include "common/utf8.h"

namespace agent {

using common::completeUtf8PrefixLength;  // (in common/utf8.h)

class OutputCapture {
 public:
  explicit OutputCapture(std::size_t max_bytes) noexcept : max_bytes_(max_bytes) {}

  // Records a chunk; returns the part that was kept (empty once the cap is reached). When the cap
  // cuts through a multi-byte character, the partial character is dropped too.
  std::string_view append(std::string_view chunk);

  // From the first byte past the cap on, the whole stream (from its start) also goes to `spill`.
  void saveOverflowTo(std::unique_ptr<OutputSpill> spill) { spill_ = std::move(spill); }
  // The spill, when the stream outgrew the cap and one was given; else null.
  [[nodiscard]] const OutputSpill* overflow() const noexcept {
    return spill_ && spill_->started() ? spill_.get() : nullptr;
  }

  [[nodiscard]] const std::string& data() const noexcept { return data_; }
  [[nodiscard]] std::uint64_t totalBytes() const noexcept { return total_bytes_; }
  [[nodiscard]] bool truncated() const noexcept { return truncated_; }

 private:
  std::size_t max_bytes_;
  std::string data_;
  std::unique_ptr<OutputSpill> spill_;
  std::uint64_t total_bytes_ = 0;
  bool truncated_ = false;
};

// Re-chunks a byte stream so no chunk ends inside a UTF-8 character: a character split across two
// pipe reads is delivered whole in the later event instead of as two U+FFFD. Not thread-safe.
class Utf8Rechunker {
 public:
  [[nodiscard]] std::string push(std::string_view chunk);
  [[nodiscard]] std::string flush();

 private:
  std::string pending_;
};

}  // namespace agent

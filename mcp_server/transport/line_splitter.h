// Splits a byte stream into '\n'-terminated lines no longer than a bound, without ever buffering
// more than the bound: an oversize line is reported once and skipped up to its newline.
// Not thread-safe: one reader feeds it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace transport {

class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Calls on_line(std::string_view) for each complete line (without "\n" or a trailing "\r")
  // and on_oversize() once for each line longer than the bound.
  template <typename OnLine, typename OnOversize>
  void feed(std::string_view data, OnLine&& on_line, OnOversize&& on_oversize) {
    while (!data.empty()) {
      const std::size_t newline = data.find('\n');
      if (discarding_) {
        if (newline == std::string_view::npos) return;
        discarding_ = false;
        data.remove_prefix(newline + 1);
        continue;
      }
      const std::string_view piece = data.substr(0, newline);
      if (pending_.size() + piece.size() > max_line_bytes_) {
        pending_.clear();
        pending_.shrink_to_fit();  // do not keep a 16 MiB buffer around after one big line
        on_oversize();
        if (newline == std::string_view::npos) {
          discarding_ = true;
          return;
        }
        data.remove_prefix(newline + 1);
        continue;
      }
      pending_.append(piece);
      if (newline == std::string_view::npos) return;
      emit(on_line);
      data.remove_prefix(newline + 1);
    }
  }

  // At end of input: delivers a last line that had no trailing newline.
  template <typename OnLine>
  void finish(OnLine&& on_line) {
    if (!discarding_ && !pending_.empty()) emit(on_line);
    discarding_ = false;
  }

 private:
  template <typename OnLine>
  void emit(OnLine& on_line) {
    std::string_view line = pending_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_line(line);
    pending_.clear();
  }

  std::size_t max_line_bytes_;
  std::string pending_;
  bool discarding_ = false;
};

}  // namespace transport

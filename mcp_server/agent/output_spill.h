// Saves the whole of an execution's output stream to a file in the sandbox once it outgrows the
// reply's cap, so nothing is silently dropped: the reply carries the first bytes and the path of
// the file with all of them (up to a limit of its own). Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace agent {

// Where saved outputs go; a tmpfs in every sandbox, private to the session.
inline constexpr std::string_view kSavedOutputDir = "/tmp/.sandbox-mcp/outputs";

class OutputSpill {
 public:
  // Nothing is created until the first write(). `max_bytes` bounds the file.
  OutputSpill(std::filesystem::path dir, std::string file_name, std::uint64_t max_bytes);

  // Appends bytes; past max_bytes, or after an error, the rest is dropped (complete() false).
  void write(std::string_view bytes);

  [[nodiscard]] bool started() const noexcept { return started_; }
  [[nodiscard]] std::filesystem::path path() const { return dir_ / file_name_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return written_; }
  [[nodiscard]] bool complete() const noexcept { return complete_; }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }

 private:
  void open();
  void fail(const std::string& what, int err);

  std::filesystem::path dir_;
  std::string file_name_;
  std::uint64_t max_bytes_;
  common::UniqueFd fd_;
  std::uint64_t written_ = 0;
  bool started_ = false;
  bool complete_ = true;
  std::string error_;
};

}  // namespace agent

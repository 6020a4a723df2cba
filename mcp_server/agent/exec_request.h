// The `exec` op's request and reply, parsed from and rendered to JSON. Pure; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/request_error.h"
#include "common/rich_output.h"

namespace agent {

enum class ExecKind { kPython, kShell, kJavascript };

// Limits that keep every reply inside one frame (frame::kMaxPayloadBytes) even when the output is
// all control characters, which JSON escapes as six bytes each.
inline constexpr std::size_t kMaxOutputBytesLimit = std::size_t{4} * 1024 * 1024;
inline constexpr std::size_t kDefaultMaxOutputBytes = std::size_t{1024} * 1024;
inline constexpr std::chrono::milliseconds kDefaultTimeout{30'000};
inline constexpr std::chrono::milliseconds kMaxTimeout{24LL * 3600 * 1000};
// Output saved past the cap lives on the sandbox's /tmp tmpfs, which counts against its memory.
inline constexpr std::uint64_t kMaxSaveOutputBytesLimit = std::uint64_t{256} * 1024 * 1024;

struct ExecRequest {
  std::int64_t id = 0;
  ExecKind kind = ExecKind::kPython;
  std::string code;
  std::chrono::milliseconds timeout = kDefaultTimeout;
  std::size_t max_output_bytes = kDefaultMaxOutputBytes;
  // Per stream: output past max_output_bytes is saved to a file up to this size; 0 = not saved.
  std::uint64_t save_output_bytes = 0;
  bool stream = false;
  // Images (figures, display()) a Python cell may send back inline; max_count 0: none.
  common::ImageLimits images;
};

// Throws RequestError naming the offending field.
[[nodiscard]] ExecRequest parseExecRequest(std::int64_t id, const nlohmann::json& request);

struct ExecResult {
  std::string status;  // success | error | timeout | cancelled
  std::string stdout_text;
  std::string stderr_text;
  int exit_code = 0;
  std::optional<std::string> result;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
  double duration_ms = 0;  // from the request's turn to its reply, in the agent
  // The user code's own run time as the interpreter measured it (Python); nullopt: not measured.
  std::optional<double> exec_ms;
  bool state_lost = false;
  struct SavedOutput {
    std::string stream;  // stdout | stderr
    std::string path;
    std::uint64_t bytes = 0;
    bool complete = false;  // false: the file reached its limit or a write failed
  };
  std::vector<SavedOutput> saved_outputs;
  common::RichOutput rich;  // images and a table summary (Python only)
};

[[nodiscard]] nlohmann::json toReply(std::int64_t id, const ExecResult& result);

// "2.0 s", "0.25 s": a timeout as people read it in a note.
[[nodiscard]] std::string formatSeconds(std::chrono::milliseconds duration);

// Exit codes the agent reports when it stopped a run itself (documented in PROTOCOL.md).
inline constexpr int kTimeoutExitCode = 124;    // as GNU timeout(1)
inline constexpr int kCancelledExitCode = 130;  // as a shell after SIGINT

}  // namespace agent

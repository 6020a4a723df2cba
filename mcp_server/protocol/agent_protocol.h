// The agent protocol (PROTOCOL.md) in one place: the messages the server and the in-sandbox agent
// exchange, their enums, the size caps, and one codec for each message that both sides use.
//
// The two directions trust differently, so their decoders differ:
//  - requests (server → agent) are decoded strictly: a bad field is refused with a ProtocolError
//    naming it, and the reply says so;
//  - replies (agent → server) come from a sandbox that may be hostile (user code can write to the
//    agent's pipes, or replace the agent's view of them): they are decoded leniently and capped:
//    a missing or mistyped field gets its default, strings and lists are cut at the caps below,
//    and nothing in a reply can make the server allocate more than those caps.
// Pure; thread-safe. Built twice: unsanitized into the static agent, sanitized into the server.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/rich_output.h"

namespace protocol {

using json = nlohmann::json;

// A request that is well-formed JSON but asks for something invalid; what() is the sentence the
// agent sends back as the reply's "error".
class ProtocolError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ---- ops ---------------------------------------------------------------------------------------

inline constexpr std::string_view kOpHello = "hello";
inline constexpr std::string_view kOpExec = "exec";
inline constexpr std::string_view kOpCancel = "cancel";
inline constexpr std::string_view kOpWriteFile = "write_file";
inline constexpr std::string_view kOpReadFile = "read_file";
inline constexpr std::string_view kOpListFiles = "list_files";
// Moves the frames to a host Unix socket (agent/channel_socket.h); sent once, on stdin.
inline constexpr std::string_view kOpChannel = "channel";
// Moves the frames back from the socket to stdio and closes the socket, so that the sandbox holds
// no connection to the host and can be checkpointed; sent on the socket, when no exec runs.
inline constexpr std::string_view kOpSuspend = "suspend";
// Connects 127.0.0.1:<port> inside the sandbox to a host Unix socket and relays bytes between
// them (a preview connection; agent/port_relay.h).
inline constexpr std::string_view kOpOpenPort = "open_port";

// ---- exec --------------------------------------------------------------------------------------

enum class ExecKind { kPython, kShell, kJavascript };
enum class ExecStatus { kSuccess, kError, kTimeout, kCancelled };

[[nodiscard]] std::string_view toString(ExecKind kind) noexcept;
[[nodiscard]] std::string_view toString(ExecStatus status) noexcept;
// nullopt for anything else.
[[nodiscard]] std::optional<ExecKind> parseExecKind(std::string_view text) noexcept;
[[nodiscard]] std::optional<ExecStatus> parseExecStatus(std::string_view text) noexcept;

// Limits that keep every reply inside one frame (frame::kMaxPayloadBytes) even when the output is
// all control characters, which JSON escapes as six bytes each.
inline constexpr std::size_t kMaxOutputBytesLimit = std::size_t{4} * 1024 * 1024;
inline constexpr std::size_t kDefaultMaxOutputBytes = std::size_t{1024} * 1024;
inline constexpr std::chrono::milliseconds kDefaultTimeout{30'000};
inline constexpr std::chrono::milliseconds kMaxTimeout{24LL * 3600 * 1000};
// Output saved past the cap lives on the sandbox's /tmp tmpfs, which counts against its memory.
inline constexpr std::uint64_t kMaxSaveOutputBytesLimit = std::uint64_t{256} * 1024 * 1024;
// Room for the agent's "[sandbox] ..." notes after a stream's capped output.
inline constexpr std::size_t kNotesBytes = std::size_t{16} * 1024;
// A file name or path the server copies out of a reply.
inline constexpr std::size_t kMaxNameBytes = 4096;
inline constexpr std::size_t kMaxPathBytes = 4096;
// Exit codes the agent reports when it stopped a run itself.
inline constexpr int kTimeoutExitCode = 124;    // as GNU timeout(1)
inline constexpr int kCancelledExitCode = 130;  // as a shell after SIGINT

struct ExecRequest {
  ExecKind kind = ExecKind::kPython;
  std::string code;
  std::chrono::milliseconds timeout = kDefaultTimeout;
  std::size_t max_output_bytes = kDefaultMaxOutputBytes;  // per stream
  // Per stream: output past max_output_bytes is saved to a file in the sandbox, up to this size;
  // 0: not saved.
  std::uint64_t save_output_bytes = 0;
  bool stream = false;  // deliver output events while running
  // Images a Python cell may send back inline (figures, display()); max_count 0: none.
  common::ImageLimits images;
};

// The whole of a stream that outgrew the cap, kept as a file in the sandbox.
struct SavedOutput {
  std::string stream;  // stdout | stderr
  std::string path;    // absolute, inside the sandbox
  std::uint64_t bytes = 0;
  bool complete = false;  // false: the file reached its own limit or a write failed
};

struct ExecResult {
  ExecStatus status = ExecStatus::kSuccess;
  std::string stdout_text;
  std::string stderr_text;
  int exit_code = 0;
  std::optional<std::string> result;  // repr of a trailing bare expression (Python, JavaScript)
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
  double duration_ms = 0;         // the execution in the agent, from its turn to its reply
  double channel_ms = 0;          // the server's round trip to the agent (not on the wire)
  std::optional<double> exec_ms;  // the code's own run time, when the interpreter measured it
  bool state_lost = false;        // the interpreter was restarted: its globals are gone
  std::vector<SavedOutput> saved_outputs;
  common::RichOutput rich;  // images and a pandas table summary (Python only)
};

// Server: the "exec" request (without "id"; the channel adds it).
[[nodiscard]] json encodeExecRequest(const ExecRequest& request);
// Agent: strict; defaults for absent fields, numbers clamped to the caps above. Throws
// ProtocolError naming the offending field.
[[nodiscard]] ExecRequest decodeExecRequest(const json& message);
// Agent: the reply to exec `id`.
[[nodiscard]] json encodeExecReply(std::int64_t id, const ExecResult& result);
// Server: lenient and capped (see the top of this file); `request` gives the caps it asked for.
// Takes the reply by value to move its strings out instead of copying them.
[[nodiscard]] ExecResult decodeExecReply(json reply, const ExecRequest& request);

// ---- list_files --------------------------------------------------------------------------------

enum class FileType { kFile, kDir, kSymlink, kOther };
[[nodiscard]] std::string_view toString(FileType type) noexcept;
[[nodiscard]] FileType parseFileType(std::string_view text) noexcept;  // kOther when unknown

struct FileEntry {
  std::string name;
  FileType type = FileType::kOther;
  std::uint64_t size = 0;
  std::int64_t mtime = 0;  // unix seconds
};

struct FileListing {
  std::string path;                // the directory listed, absolute
  std::vector<FileEntry> entries;  // sorted by name, at most kMaxListEntries
  bool truncated = false;          // the directory had more entries than were listed
  inline static constexpr std::size_t kMaxListEntries = 10000;
};

// Agent: the reply's fields besides "id" and "ok".
[[nodiscard]] json encodeFileListing(const FileListing& listing);
// Server: lenient and capped (kMaxListEntries, kMaxNameBytes).
[[nodiscard]] FileListing decodeFileListing(const json& reply);

// ---- shared helpers ----------------------------------------------------------------------------

// `object[key]` as T (bool, an integer type, a floating-point type or std::string); `fallback`
// when absent, of another JSON type, or an integer out of T's range. Never throws: replies come
// from the sandbox.
template <class T>
[[nodiscard]] T fieldOr(const json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  const json& value = *it;
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean() ? value.get<bool>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) {
      const auto number = value.get<std::uint64_t>();
      return std::in_range<T>(number) ? static_cast<T>(number) : fallback;
    }
    if (value.is_number_integer()) {
      const auto number = value.get<std::int64_t>();
      return std::in_range<T>(number) ? static_cast<T>(number) : fallback;
    }
    return fallback;
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number() ? value.get<T>() : fallback;
  } else {
    static_assert(std::is_same_v<T, std::string>, "fieldOr reads bool, numbers and strings");
    return value.is_string() ? value.get<std::string>() : fallback;
  }
}

// `object[key]` when it is of JSON type `type`, else an empty value of that type (never throws).
[[nodiscard]] const json& memberOr(const json& object, const char* key, json::value_t type);

// "2.0 s", "0.25 s": a duration as people read it in a note.
[[nodiscard]] std::string formatSeconds(std::chrono::milliseconds duration);

// ---- open_port ---------------------------------------------------------------------------------

// The token the agent writes first on the host socket (then "\n"): lowercase hex digits.
inline constexpr std::size_t kOpenPortTokenDigits = 32;
// sizeof(sockaddr_un::sun_path) on Linux, minus its terminating NUL.
inline constexpr std::size_t kMaxUnixSocketPathBytes = 107;

struct OpenPortRequest {
  std::uint16_t port = 0;  // of 127.0.0.1 inside the sandbox, 1-65535
  std::string path;        // the host's Unix socket as the sandbox sees it, absolute
  std::string token;       // kOpenPortTokenDigits lowercase hex digits
};

// Server: the "open_port" request (without "id").
[[nodiscard]] inline json encodeOpenPortRequest(const OpenPortRequest& request) {
  return {{"op", kOpOpenPort},
          {"port", request.port},
          {"path", request.path},
          {"token", request.token}};
}

// Agent: strict, every field required. Throws ProtocolError naming the offending field.
[[nodiscard]] inline OpenPortRequest decodeOpenPortRequest(const json& message) {
  // A mistyped or absent field reads as a value that fails its check below.
  const auto port = fieldOr<std::int64_t>(message, "port", 0);
  if (port < 1 || port > 65535) {
    throw ProtocolError(
        "open_port: \"port\" must be an integer from 1 to 65535 (the TCP port a server in the "
        "sandbox listens on)");
  }
  auto path = fieldOr<std::string>(message, "path", "");
  if (!path.starts_with('/') || path.size() > kMaxUnixSocketPathBytes ||
      path.find('\0') != std::string::npos) {
    throw ProtocolError("open_port: \"path\" must be the absolute path of a Unix socket, at most " +
                        std::to_string(kMaxUnixSocketPathBytes) + " bytes");
  }
  auto token = fieldOr<std::string>(message, "token", "");
  const auto lower_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (token.size() != kOpenPortTokenDigits || !std::ranges::all_of(token, lower_hex)) {
    throw ProtocolError("open_port: \"token\" must be " + std::to_string(kOpenPortTokenDigits) +
                        " lowercase hex digits");
  }
  return {static_cast<std::uint16_t>(port), std::move(path), std::move(token)};
}

}  // namespace protocol

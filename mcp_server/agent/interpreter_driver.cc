#include "agent/interpreter_driver.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/json_codec.h"

namespace agent {
namespace {

constexpr int kCommandFd = 3;
constexpr int kReplyFd = 4;
constexpr std::size_t kMaxReplyLineBytes = std::size_t{64} * 1024 * 1024;
constexpr std::size_t kMaxVersionChars = 64;

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> findOnPath(std::string_view name) {
  const char* env_path = std::getenv("PATH");
  const std::string_view search =
      (env_path != nullptr && *env_path != '\0') ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= search.size()) {
    const std::size_t end = std::min(search.find(':', start), search.size());
    // An empty PATH entry means the current directory.
    const std::string_view dir = end > start ? search.substr(start, end - start) : ".";
    std::string candidate(dir);
    candidate.append("/").append(name);
    if (isExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

InterpreterDriver::InterpreterDriver(EventLoop& loop, Reaper& reaper, std::string executable,
                                     std::vector<std::string> argv, std::string label,
                                     Events events)
    : loop_(loop), reaper_(reaper), label_(std::move(label)), events_(std::move(events)) {
  Pipe commands = makePipe(false);
  Pipe replies = makePipe(true);
  Pipe out = makePipe(true);
  Pipe err = makePipe(true);
  SpawnSpec spec;
  spec.executable = std::move(executable);
  spec.argv = std::move(argv);
  spec.fds = {{1, out.write_end.get()},
              {2, err.write_end.get()},
              {kCommandFd, commands.read_end.get()},
              {kReplyFd, replies.write_end.get()}};
  pid_ = spawnProcess(spec);

  commands_ = std::move(commands.write_end);
  replies_ = std::make_unique<PipeReader>(loop_, std::move(replies.read_end),
                                          [this](std::string_view chunk) { onReplyBytes(chunk); });
  stdout_ = std::make_unique<PipeReader>(
      loop_, std::move(out.read_end),
      [this](std::string_view c) { events_.on_output(OutputStream::kStdout, c); });
  stderr_ = std::make_unique<PipeReader>(
      loop_, std::move(err.read_end),
      [this](std::string_view c) { events_.on_output(OutputStream::kStderr, c); });
  reaper_.onExit(pid_, [this](int wait_status) {
    exited_ = true;
    auto on_exit = events_.on_exit;  // copy: the callback may destroy *this
    on_exit(wait_status);
  });
}

InterpreterDriver::~InterpreterDriver() {
  if (!exited_) killGroup();
  reaper_.forget(pid_);
}

bool InterpreterDriver::sendCell(std::string_view code, std::size_t max_result_chars,
                                 const nlohmann::json& options) {
  nlohmann::json command = options.is_object() ? options : nlohmann::json::object();
  command["cell"] = ++cells_sent_;
  command["code"] = code;
  command["max_result_chars"] = max_result_chars;
  const std::string line =
      command.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string_view rest(line);
  while (!rest.empty()) {
    const ssize_t n = ::write(commands_.get(), rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "sandbox-agent: sending code to the %s driver: %s\n", label_.c_str(),
                   std::strerror(errno));
      return false;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void InterpreterDriver::interrupt() noexcept {
  if (!exited_) ::kill(pid_, SIGINT);
}

void InterpreterDriver::killGroup() noexcept {
  signalGroup(pid_, SIGKILL);
  reaper_.forget(pid_);  // the Reaper still collects it; nobody is told
  exited_ = true;
}

void InterpreterDriver::drainOutput() {
  stdout_->drain();
  stderr_->drain();
}

void InterpreterDriver::onReplyBytes(std::string_view chunk) {
  reply_buffer_.append(chunk);
  std::size_t newline;
  while ((newline = reply_buffer_.find('\n')) != std::string::npos) {
    const std::string line = reply_buffer_.substr(0, newline);
    reply_buffer_.erase(0, newline + 1);
    const std::weak_ptr<int> alive = liveness_;
    handleLine(line);
    if (alive.expired()) return;  // a callback replaced this driver
  }
  if (reply_buffer_.size() > kMaxReplyLineBytes) {
    std::fprintf(stderr, "sandbox-agent: the %s driver sent an overlong reply; stopping it\n",
                 label_.c_str());
    reply_buffer_.clear();
    killGroup();
    auto on_exit = events_.on_exit;
    on_exit(SIGKILL);  // a wait status meaning "killed by SIGKILL"
  }
}

void InterpreterDriver::handleLine(std::string_view line) {
  nlohmann::json message;
  try {
    message = common::parseJson(line);  // the shared parser: its nesting limit applies here too
  } catch (const nlohmann::json::exception&) {
    message = nullptr;
  }
  if (!message.is_object()) {
    std::fprintf(stderr, "sandbox-agent: ignoring a malformed line from the %s driver\n",
                 label_.c_str());
    return;
  }
  if (const auto ready = message.find("ready"); ready != message.end()) {
    if (ready_ || *ready != true) return;  // user code repeating the driver's first line
    ready_ = true;
    const auto version = message.find("version");
    version_ = version != message.end() && version->is_string()
                   ? version->get<std::string>().substr(0, kMaxVersionChars)
                   : "";
    auto on_ready = events_.on_ready;
    on_ready();
    return;
  }
  const auto cell = message.find("cell");
  if (cell == message.end() || !cell->is_number_unsigned() ||
      cell->get<std::uint64_t>() != cells_sent_) {
    std::fprintf(stderr, "sandbox-agent: ignoring a %s reply that answers no running cell\n",
                 label_.c_str());
    return;
  }
  auto on_reply = events_.on_reply;
  try {
    on_reply(message);
  } catch (const nlohmann::json::exception& e) {
    // User code can write this pipe: a reply of the wrong shape must not take the agent down.
    std::fprintf(stderr, "sandbox-agent: ignoring a malformed reply from the %s driver: %s\n",
                 label_.c_str(), e.what());
  }
}

}  // namespace agent

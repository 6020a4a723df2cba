#include "agent/python_driver.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "agent/driver_source.h"        // generated from driver.py: kDriverSource
#include "agent/rich_display_source.h"  // generated from rich_display.py: kRichDisplaySource
#include "common/json_codec.h"

namespace agent {
namespace {

constexpr int kCommandFd = 3;
constexpr int kReplyFd = 4;
constexpr std::size_t kMaxReplyLineBytes = std::size_t{64} * 1024 * 1024;

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> findPython3() {
  const char* env_path = std::getenv("PATH");
  const std::string_view search =
      (env_path != nullptr && *env_path != '\0') ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= search.size()) {
    const std::size_t end = std::min(search.find(':', start), search.size());
    // An empty PATH entry means the current directory.
    const std::string_view dir = end > start ? search.substr(start, end - start) : ".";
    std::string candidate(dir);
    candidate.append("/python3");
    if (isExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

PythonDriver::PythonDriver(EventLoop& loop, Reaper& reaper, const std::string& python3,
                           Events events)
    : loop_(loop), reaper_(reaper), events_(std::move(events)) {
  Pipe commands = makePipe(false);
  Pipe replies = makePipe(true);
  Pipe out = makePipe(true);
  Pipe err = makePipe(true);
  SpawnSpec spec;
  spec.executable = python3;
  // rich_display.py first: driver.py uses what it defines (one program, one globals dict).
  spec.argv = {"python3", "-c",
               std::string(kRichDisplaySource) + "\n" + std::string(kDriverSource)};
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

PythonDriver::~PythonDriver() {
  if (!exited_) killGroup();
  reaper_.forget(pid_);
}

bool PythonDriver::sendCell(std::string_view code, std::size_t max_result_chars,
                            const common::ImageLimits& images, const std::string& figures_dir) {
  const nlohmann::json command = {{"cell", ++cells_sent_},
                                  {"code", code},
                                  {"max_result_chars", max_result_chars},
                                  {"max_images", images.max_count},
                                  {"image_max_bytes", images.max_bytes},
                                  {"image_max_px", images.max_px},
                                  {"figures_dir", figures_dir}};
  const std::string line =
      command.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string_view rest(line);
  while (!rest.empty()) {
    const ssize_t n = ::write(commands_.get(), rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "sandbox-agent: sending code to the Python driver: %s\n",
                   std::strerror(errno));
      return false;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void PythonDriver::interrupt() noexcept {
  if (!exited_) ::kill(pid_, SIGINT);
}

void PythonDriver::killGroup() noexcept {
  signalGroup(pid_, SIGKILL);
  reaper_.forget(pid_);  // the Reaper still collects it; nobody is told
  exited_ = true;
}

void PythonDriver::drainOutput() {
  stdout_->drain();
  stderr_->drain();
}

void PythonDriver::onReplyBytes(std::string_view chunk) {
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
    std::fprintf(stderr,
                 "sandbox-agent: the Python driver sent an overlong reply; restarting it\n");
    reply_buffer_.clear();
    killGroup();
    auto on_exit = events_.on_exit;
    on_exit(SIGKILL);  // a wait status meaning "killed by SIGKILL"
  }
}

void PythonDriver::handleLine(std::string_view line) {
  nlohmann::json message;
  try {
    message = common::parseJson(line);  // the shared parser: its nesting limit applies here too
  } catch (const nlohmann::json::exception&) {
    message = nullptr;
  }
  if (!message.is_object()) {
    std::fprintf(stderr, "sandbox-agent: ignoring a malformed line from the Python driver\n");
    return;
  }
  if (const auto ready = message.find("ready"); ready != message.end()) {
    if (ready_ || *ready != true) return;  // user code repeating the driver's first line
    ready_ = true;
    const auto version = message.find("python_version");
    python_version_ = version != message.end() && version->is_string()
                          ? version->get<std::string>().substr(0, 64)
                          : "";
    auto on_ready = events_.on_ready;
    on_ready();
    return;
  }
  const auto cell = message.find("cell");
  if (cell == message.end() || !cell->is_number_unsigned() ||
      cell->get<std::uint64_t>() != cells_sent_) {
    std::fprintf(stderr, "sandbox-agent: ignoring a Python reply that answers no running cell\n");
    return;
  }
  auto on_reply = events_.on_reply;
  try {
    on_reply(message);
  } catch (const nlohmann::json::exception& e) {
    // User code can write this pipe: a reply of the wrong shape must not take the agent down.
    std::fprintf(stderr, "sandbox-agent: ignoring a malformed reply from the Python driver: %s\n",
                 e.what());
  }
}

}  // namespace agent

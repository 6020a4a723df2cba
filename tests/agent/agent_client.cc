#include "agent_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace agent_test {
namespace {

using Clock = std::chrono::steady_clock;

int remainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "agent-proto-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

AgentClient::AgentClient(const std::filesystem::path& cwd,
                         const std::map<std::string, std::string>& env,
                         const std::vector<std::string>& args) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  const std::string dir = cwd.string();
  std::vector<std::string> argv_strings{"sandbox-agent"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    ::execv(SANDBOX_AGENT_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_agent_ = in[1];
  from_agent_ = out[0];
}

AgentClient::~AgentClient() {
  closeInput();
  if (!exited_ && !waitExit(5s)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (from_agent_ >= 0) ::close(from_agent_);
}

void AgentClient::send(const json& message) { sendRaw(frame::encode(message.dump())); }

void AgentClient::sendRaw(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(to_agent_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("writing to the agent failed");
    }
    done += static_cast<std::size_t>(n);
  }
}

std::optional<json> AgentClient::readFrame(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto payload = decoder_.next()) return json::parse(*payload);
    pollfd p{from_agent_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remainingMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buffer[65536];
    const ssize_t n = ::read(from_agent_, buffer, sizeof buffer);
    if (n <= 0) return std::nullopt;
    decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

Reply AgentClient::waitFor(std::int64_t id, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Reply reply;
  std::vector<json> kept;
  auto take = [&](json message) {
    if (message.value("id", std::int64_t{-1}) != id) {
      kept.push_back(std::move(message));
      return false;
    }
    if (message.contains("event")) {
      reply.events.push_back(std::move(message));
      return false;
    }
    reply.final = std::move(message);
    return true;
  };
  bool done = false;
  std::vector<json> stash = std::exchange(stash_, {});
  for (auto& message : stash) {
    if (!done && take(std::move(message))) {
      done = true;
    } else if (done) {
      kept.push_back(std::move(message));
    }
  }
  while (!done) {
    auto message = readFrame(std::chrono::milliseconds(remainingMs(deadline)));
    if (!message) throw std::runtime_error("no reply to request " + std::to_string(id));
    done = take(std::move(*message));
  }
  stash_ = std::move(kept);
  return reply;
}

json AgentClient::request(const json& message, std::chrono::milliseconds timeout) {
  send(message);
  return waitFor(message.at("id").get<std::int64_t>(), timeout).final;
}

json AgentClient::exec(const std::string& kind, const std::string& code, std::int64_t timeout_ms,
                       std::int64_t max_output) {
  const std::int64_t id = next_id_++;
  return request({{"id", id},
                  {"op", "exec"},
                  {"kind", kind},
                  {"code", code},
                  {"timeout_ms", timeout_ms},
                  {"max_output_bytes", max_output}},
                 std::chrono::milliseconds(timeout_ms) + 10s);
}

void AgentClient::closeInput() {
  if (to_agent_ >= 0) ::close(to_agent_);
  to_agent_ = -1;
}

std::optional<int> AgentClient::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  do {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      return status;
    }
    std::this_thread::sleep_for(5ms);
  } while (Clock::now() < deadline);
  return std::nullopt;
}

bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(stat), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    return true;  // reaped between the open and the read: the read fails with ESRCH
  }
  const auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'Z' ||
         text[paren + 2] == 'X';
}

bool waitUntilGone(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!processGone(pid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

json streamedExec(std::int64_t id, const std::string& kind, const std::string& code,
                  std::int64_t timeout_ms, std::int64_t max_output) {
  return {{"id", id},
          {"op", "exec"},
          {"kind", kind},
          {"code", code},
          {"timeout_ms", timeout_ms},
          {"max_output_bytes", max_output},
          {"stream", true}};
}

FirstFrame sendAndReadFirst(AgentClient& agent, const json& request) {
  agent.send(request);
  FirstFrame first;
  first.frame = agent.readFrame();
  first.at = std::chrono::steady_clock::now();
  return first;
}

std::string outputInOrder(const std::vector<json>& events) {
  std::string in_order;
  for (const json& event : events) {
    const std::string data = event["data"].get<std::string>();
    in_order += event["stream"] == "stderr" ? "[stderr]" + data : data;
  }
  return in_order;
}

}  // namespace agent_test

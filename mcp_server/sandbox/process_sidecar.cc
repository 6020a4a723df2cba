#include "sandbox/process_sidecar.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/unique_fd.h"
#include "sandbox/backend.h"
#include "sandbox/log.h"
#include "sandbox/spawn_setup.h"

namespace sandbox {
namespace {

using common::UniqueFd;

// The last lines the relay logged, for error messages.
std::string logTail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  constexpr std::size_t kTail = 1024;
  if (text.size() > kTail) text = "..." + text.substr(text.size() - kTail);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "(it logged nothing)" : text;
}

class ProcessSidecar final : public Sidecar {
 public:
  ProcessSidecar(pid_t pid, UniqueFd stdin_writer)
      : pid_(pid), stdin_writer_(std::move(stdin_writer)) {}

  ~ProcessSidecar() override {
    stdin_writer_.reset();  // EOF: the relay stops by itself
    std::lock_guard lock(mutex_);
    if (reaped_) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ProcessSidecar(const ProcessSidecar&) = delete;
  ProcessSidecar& operator=(const ProcessSidecar&) = delete;

  bool running() override {
    std::lock_guard lock(mutex_);
    if (!reaped_ && ::waitpid(pid_, nullptr, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
  }
  [[nodiscard]] std::string describe() const override { return "process " + std::to_string(pid_); }

 private:
  const pid_t pid_;
  UniqueFd stdin_writer_;
  std::mutex mutex_;
  bool reaped_ = false;
};

}  // namespace

std::vector<std::string> sidecarEnvironment() {
  // The server's environment may hold secrets (SANDBOX_MCP_TOKEN, cloud credentials): the relay
  // gets a fixed PATH and, in sanitizer builds, the sanitizer settings, nothing else.
  std::vector<std::string> environment = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name))
      environment.push_back(std::string(name) + "=" + value);
  }
  return environment;
}

std::vector<std::string> sidecarArguments(const SidecarSpec& spec,
                                          const std::string& directory_as_seen) {
  auto relative = [&](const std::string& host_path) {
    return directory_as_seen + host_path.substr(spec.directory.size());
  };
  std::vector<std::string> args = {
      "--listen",           relative(spec.socket_dir) + "/" + spec.socket_name,
      "--policy",           relative(spec.policy_file),
      "--audit-log",        relative(spec.audit_log_file),
      "--session",          spec.session_id,
      "--exit-on-stdin-eof"};
  if (!spec.egress_rules_file.empty()) {
    args.insert(args.end(),
                {"--egress-listen", relative(spec.socket_dir) + "/" + spec.egress_socket_name,
                 "--egress-rules", relative(spec.egress_rules_file)});
    if (!spec.egress_upstream_ca_file.empty()) {
      args.insert(args.end(), {"--egress-upstream-ca", relative(spec.egress_upstream_ca_file)});
    }
  }
  if (!spec.upstream_ca_file.empty()) {
    args.insert(args.end(), {"--upstream-ca", relative(spec.upstream_ca_file)});
  }
  if (!spec.secrets_file.empty())
    args.insert(args.end(), {"--secrets", relative(spec.secrets_file)});
  args.insert(args.end(), spec.limit_flags.begin(), spec.limit_flags.end());
  return args;
}

ProcessSidecarLauncher::ProcessSidecarLauncher(std::string binary_path,
                                               std::int64_t start_timeout_ms)
    : binary_path_(std::move(binary_path)), start_timeout_ms_(start_timeout_ms) {}

std::unique_ptr<Sidecar> ProcessSidecarLauncher::launch(const SidecarSpec& spec) {
  if (::access(binary_path_.c_str(), X_OK) != 0) {
    throw SandboxError("cannot start the MCP sidecar: " + binary_path_ +
                       " is missing or not executable; build the project (it sits next to "
                       "sandbox-mcp) or set mcp.sidecar.binary_path");
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw SandboxError(
        "cannot start the MCP sidecar: pipe2 failed; the server is out of file "
        "descriptors");
  }
  UniqueFd stdin_reader(pipe_fds[0]);
  UniqueFd stdin_writer(pipe_fds[1]);
  const std::string log_path = spec.directory + "/sidecar.log";
  const UniqueFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log_fd) throw SandboxError("cannot start the MCP sidecar: cannot create " + log_path);

  SpawnSetup setup;
  posix_spawn_file_actions_adddup2(&setup.actions, stdin_reader.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, log_fd.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, log_fd.get(), STDERR_FILENO);
  // Every other descriptor of the server (client connections, the Docker socket, other
  // sessions' pipes) stays out of the relay, CLOEXEC or not.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
  // The server blocks its stop signals and ignores SIGPIPE; the child starts clean, in its own
  // process group so a Ctrl-C at the server's terminal reaches only the server (which then
  // stops its sidecars in order).
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&setup.attributes, &empty);
  posix_spawnattr_setsigdefault(&setup.attributes, &defaults);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> args = sidecarArguments(spec, spec.directory);
  args.insert(args.begin(), binary_path_);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> environment = sidecarEnvironment();
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (auto& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  if (const int rc = posix_spawn(&pid, binary_path_.c_str(), &setup.actions, &setup.attributes,
                                 argv.data(), envp.data());
      rc != 0) {
    throw SandboxError("cannot start the MCP sidecar " + binary_path_ + ": posix_spawn error " +
                       std::to_string(rc));
  }
  stdin_reader.reset();
  auto sidecar = std::make_unique<ProcessSidecar>(pid, std::move(stdin_writer));
  const std::string socket = spec.socket_dir + "/" + spec.socket_name;
  if (!waitForSocket(socket, start_timeout_ms_, [&] { return sidecar->running(); })) {
    const bool exited = !sidecar->running();
    sidecar.reset();
    throw SandboxError(std::string("the MCP sidecar ") +
                       (exited ? "exited at start" : "did not open its socket in time") + ": " +
                       logTail(log_path));
  }
  logger().info("session {}: MCP sidecar {} listening on {}", spec.session_id, sidecar->describe(),
                socket);
  return sidecar;
}

}  // namespace sandbox

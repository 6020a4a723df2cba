#include "sandbox/docker/runsc_control.h"

#include <chrono>
#include <system_error>

#include "sandbox/backend.h"
#include "sandbox/host_command.h"

namespace sandbox::docker {
namespace {

// A checkpoint of a sandbox with the data stack loaded writes ~100-300 MB.
constexpr std::chrono::seconds kCheckpointTimeout{60};
constexpr std::chrono::seconds kVersionTimeout{10};

std::vector<std::string> baseArguments(const RunscCommand& command) {
  std::vector<std::string> args = {command.path, "--root", command.root};
  args.insert(args.end(), command.runtime_args.begin(), command.runtime_args.end());
  return args;
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// runsc prints Go stack traces on failure; the first lines say what went wrong.
std::string headOf(const std::string& text) {
  constexpr std::size_t kMaxBytes = 600;
  return text.size() <= kMaxBytes ? text : text.substr(0, kMaxBytes) + "...";
}

}  // namespace

std::optional<RunscCommand> runscCommandFromInfo(const nlohmann::json& info,
                                                 const std::string& runtime, std::string root) {
  const auto runtimes = info.find("Runtimes");
  if (runtimes == info.end() || !runtimes->is_object()) return std::nullopt;
  const auto entry = runtimes->find(runtime);
  if (entry == runtimes->end() || !entry->is_object()) return std::nullopt;
  const auto path = entry->find("path");
  if (path == entry->end() || !path->is_string()) return std::nullopt;
  const auto& program = path->get_ref<const std::string&>();
  const bool is_runsc = !program.empty() && program.front() == '/' &&
                        std::filesystem::path(program).filename() == "runsc";
  if (!is_runsc) return std::nullopt;
  RunscCommand command{program, {}, std::move(root)};
  if (const auto args = entry->find("runtimeArgs"); args != entry->end() && args->is_array()) {
    for (const auto& arg : *args) {
      if (!arg.is_string()) return std::nullopt;
      command.runtime_args.push_back(arg.get<std::string>());
    }
  }
  return command;
}

std::vector<std::string> checkpointArguments(const RunscCommand& command,
                                             const std::string& container_id,
                                             const std::filesystem::path& dir) {
  auto args = baseArguments(command);
  args.insert(args.end(), {"checkpoint", "--image-path", dir.string(), "--leave-running",
                           "--compression=none", container_id});
  return args;
}

void checkpointContainer(const RunscCommand& command, const std::string& container_id,
                         const std::filesystem::path& dir) {
  HostCommandResult result;
  try {
    result = runHostCommand(checkpointArguments(command, container_id, dir), kCheckpointTimeout);
  } catch (const std::system_error& e) {
    throw SandboxError(std::string("cannot run runsc checkpoint: ") + e.what());
  }
  if (result.timed_out) {
    throw SandboxError("runsc checkpoint did not finish within " +
                       std::to_string(kCheckpointTimeout.count()) + " s");
  }
  if (result.exit_code != 0) {
    throw SandboxError("runsc checkpoint failed (exit " + std::to_string(result.exit_code) +
                       "): " + headOf(result.output));
  }
}

std::string runscVersion(const RunscCommand& command) {
  try {
    const auto result = runHostCommand({command.path, "--version"}, kVersionTimeout);
    if (result.exit_code == 0) return firstLine(result.output);
  } catch (const std::system_error&) {
  }
  return {};
}

}  // namespace sandbox::docker

#include "sandbox/docker/agent_volume.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "sandbox/docker/built_images.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/docker/tar_writer.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

constexpr std::chrono::milliseconds kUploadTimeout{120000};  // under AgentVolumeFillTimes
constexpr std::chrono::milliseconds kFillPoll{250};

std::string readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::string data(in ? static_cast<std::size_t>(in.tellg()) : 0, '\0');
  if (!in || !in.seekg(0) || !in.read(data.data(), static_cast<std::streamsize>(data.size()))) {
    throw SandboxError("cannot read the sandbox agent " + path);
  }
  return data;
}

// Removes the helper container on every path out.
class HelperContainer {
 public:
  HelperContainer(EngineClient& engine, std::string id) : engine_(engine), id_(std::move(id)) {}
  ~HelperContainer() { forceRemoveContainer(engine_, id_); }
  HelperContainer(const HelperContainer&) = delete;
  HelperContainer& operator=(const HelperContainer&) = delete;
  [[nodiscard]] const std::string& id() const noexcept { return id_; }

 private:
  EngineClient& engine_;
  std::string id_;
};

// The container that holds <volume>-fill, and how old it is by this host's clock.
struct FillHolder {
  std::string id;
  std::int64_t age_s;
};

std::optional<FillHolder> fillHolder(EngineClient& engine, const std::string& container) {
  nlohmann::json info;
  try {
    info = engine.request(Method::kGet, "/containers/" + container + "/json").json();
  } catch (const EngineError& e) {
    if (e.isNotFound()) return std::nullopt;  // gone since our create: try again
    throw;
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return FillHolder{info.value("Id", container),
                    now - parseEngineTime(info.value("Created", std::string()))};
}

// Creates the container `name`; nullopt when one of that name exists (409 Conflict).
std::optional<std::string> createNamed(EngineClient& engine, const std::string& name,
                                       const nlohmann::json& body) {
  try {
    return engine.request(Method::kPost, "/containers/create?name=" + name, body)
        .json()
        .at("Id")
        .get<std::string>();
  } catch (const EngineError& e) {
    if (e.isConflict()) return std::nullopt;
    throw;
  }
}

// Never started: it only gives the archive endpoint a view of the volume.
nlohmann::json fillContainerBody(const std::string& volume, const std::string& image,
                                 const std::map<std::string, std::string>& labels) {
  return {
      {"Image", image},
      {"Entrypoint", nlohmann::json::array()},
      {"Cmd", {std::string(kSandboxDirContainerPath) + "/agent"}},
      {"Labels", labels},
      {"NetworkDisabled", true},
      {"HostConfig",
       {{"NetworkMode", "none"},
        {"Mounts",
         {{{"Type", "volume"},
           {"Source", volume},
           {"Target", kSandboxDirContainerPath},
           {"VolumeOptions", {{"NoCopy", true}}}}}}}},
  };
}

}  // namespace

std::string agentVolumeHash(const AgentVolumeContents& contents) {
  // Length-prefixed parts: no two different contents frame to the same text.
  std::string framed = "agent " + std::to_string(contents.agent.size()) + "\n" + contents.agent;
  for (const auto& [name, source] : contents.python_modules) {
    framed += "\nmodule " + name + " " + std::to_string(source.size()) + "\n" + source;
  }
  return shortContentHash(framed);
}

std::string agentVolumeArchive(const AgentVolumeContents& contents, const std::string& hash) {
  std::vector<TarEntry> entries;
  entries.push_back({"python", "", 0755, true});
  for (const auto& [name, source] : contents.python_modules) {
    if (name.empty() || name.find('/') != std::string::npos || name.front() == '.') {
      throw SandboxError("python helper module name '" + name + "' is not a plain file name");
    }
    entries.push_back({"python/" + name, source, 0644, false});
  }
  entries.push_back({"agent", contents.agent, 0755, false});
  entries.push_back({kAgentVolumeMarker, hash + "\n", 0644, false});
  return ustarArchive(entries);
}

AgentVolume::AgentVolume(EngineClient& engine, std::string agent_path,
                         std::map<std::string, std::string> python_modules,
                         std::string helper_image, std::map<std::string, std::string> labels,
                         AgentVolumeFillTimes fill_times)
    : engine_(engine),
      agent_path_(std::move(agent_path)),
      python_modules_(std::move(python_modules)),
      helper_image_(std::move(helper_image)),
      labels_(std::move(labels)),
      fill_times_(fill_times) {}

std::string AgentVolume::ensure() {
  std::lock_guard lock(mutex_);
  struct stat info {};
  if (::stat(agent_path_.c_str(), &info) != 0) {
    throw SandboxError("cannot read the sandbox agent " + agent_path_);
  }
  const FileKey key{info.st_dev, info.st_ino, info.st_size, info.st_mtim.tv_sec,
                    info.st_mtim.tv_nsec};
  if (!ready_name_.empty() && key == ready_key_) return ready_name_;

  AgentVolumeContents contents{readWhole(agent_path_), python_modules_};
  const std::string hash = agentVolumeHash(contents);
  const std::string name = std::string(kAgentVolumePrefix) + hash;
  try {
    prepare(name, hash, contents);
  } catch (const EngineError& e) {
    throw SandboxError("cannot prepare the agent volume " + name + " on " +
                       engine_.options().endpoint.uri() + ": " + e.what());
  }
  ready_key_ = key;
  ready_name_ = name;
  return ready_name_;
}

void AgentVolume::forget() {
  std::lock_guard lock(mutex_);
  ready_name_.clear();
}

bool AgentVolume::volumeExists(const std::string& name, const std::string& hash) {
  nlohmann::json volume;
  try {
    volume = engine_.request(Method::kGet, "/volumes/" + name).json();
  } catch (const EngineError& e) {
    if (e.isNotFound()) return false;
    throw;
  }
  const auto labels = volume.value("Labels", nlohmann::json());
  if (!labels.is_object() || labels.value(kLabelAgentVolume, std::string()) != hash) {
    throw SandboxError("the engine has a volume named " + name +
                       " that sandbox-mcp did not make (no " + kLabelAgentVolume + "=" + hash +
                       " label); remove it (docker volume rm " + name + ")");
  }
  return true;
}

std::string AgentVolume::claimFill(const std::string& volume) {
  const std::string container = volume + std::string(kAgentVolumeFillSuffix);
  const auto body = fillContainerBody(volume, helper_image_, labels_);
  const auto deadline = std::chrono::steady_clock::now() + fill_times_.wait;
  const std::string uri = engine_.options().endpoint.uri();
  for (int attempt = 0;; ++attempt) {
    if (auto id = createNamed(engine_, container, body)) return *id;
    const auto holder = fillHolder(engine_, container);
    const bool stale = holder && holder->age_s >= fill_times_.stale_after.count();
    if (stale) {
      logger().warn(
          "agent volume {} on {}: removing {}, created {} s ago: no fill takes that "
          "long, so its server stopped mid-fill",
          volume, uri, container, holder->age_s);
      forceRemoveContainer(engine_, holder->id);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw SandboxError(
          "the agent volume " + volume + " on " + uri + " is still being filled by another " +
          "sandbox-mcp server (its container " + container + " was created " +
          std::to_string(holder ? holder->age_s : 0) + " s ago) after waiting " +
          std::to_string(fill_times_.wait.count() / 1000) +
          " s: try again; if no server is filling it, remove the container (docker rm -f " +
          container + "); one older than " + std::to_string(fill_times_.stale_after.count()) +
          " s is removed as a crashed fill's");
    }
    if (attempt == 0 && !stale) {
      logger().info("agent volume {} on {}: another server is filling it ({}); waiting", volume,
                    uri, container);
    }
    std::this_thread::sleep_for(kFillPoll);
  }
}

void AgentVolume::prepare(const std::string& name, const std::string& hash,
                          const AgentVolumeContents& contents) {
  if (!volumeExists(name, hash)) {
    // Idempotent: when another server created it meanwhile, the engine returns that one.
    engine_.request(Method::kPost, "/volumes/create",
                    nlohmann::json{{"Name", name}, {"Labels", {{kLabelAgentVolume, hash}}}});
  }
  // Holding <volume>-fill, this server alone checks and fills the volume.
  HelperContainer helper(engine_, claimFill(name));
  const std::string marker = std::string(kSandboxDirContainerPath) + "/" + kAgentVolumeMarker;
  try {
    engine_.request(Method::kHead,
                    "/containers/" + helper.id() + "/archive?path=" + urlEncode(marker));
    logger().debug("agent volume {} is ready on {}", name, engine_.options().endpoint.uri());
    return;
  } catch (const EngineError& e) {
    if (!e.isNotFound()) throw;
  }
  const auto archive = agentVolumeArchive(contents, hash);
  engine_.request(
      Method::kPut,
      "/containers/" + helper.id() + "/archive?path=" + urlEncode(kSandboxDirContainerPath),
      RawBody{"application/x-tar", archive}, kUploadTimeout);
  logger().info("agent volume {} filled on {} ({} KiB: the agent and {} Python module(s))", name,
                engine_.options().endpoint.uri(), archive.size() / 1024,
                contents.python_modules.size());
}

}  // namespace sandbox::docker

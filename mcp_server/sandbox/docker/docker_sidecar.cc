#include "sandbox/docker/docker_sidecar.h"

#include <unistd.h>

#include <atomic>
#include <thread>

#include "common/random_id.h"
#include "sandbox/backend.h"
#include "sandbox/docker/attach_stream.h"
#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/log.h"
#include "sandbox/process_sidecar.h"

namespace sandbox::docker {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1024} * 1024;
constexpr std::chrono::milliseconds kSendTimeout{5000};

class DockerSidecar final : public Sidecar {
 public:
  DockerSidecar(std::shared_ptr<EngineClient> engine, std::string id,
                std::unique_ptr<AttachStream> attach)
      : engine_(std::move(engine)), id_(std::move(id)), attach_(std::move(attach)) {
    // The relay writes only log lines; reading them keeps its pipes flowing, logs them with the
    // container's id, and the end of the stream says the container has exited.
    pump_ = std::thread([this] {
      std::string chunk;
      try {
        while (attach_->read(chunk) > 0) chunk.clear();
      } catch (const std::exception&) {
      }
      exited_ = true;
    });
  }
  ~DockerSidecar() override {
    attach_->shutdown();  // closes the relay's stdin: it stops; the engine removes it
    if (pump_.joinable()) pump_.join();
    forceRemoveContainer(*engine_, id_);  // immediate and certain
  }
  DockerSidecar(const DockerSidecar&) = delete;
  DockerSidecar& operator=(const DockerSidecar&) = delete;

  bool running() override { return !exited_; }
  [[nodiscard]] std::string describe() const override { return "container " + id_.substr(0, 12); }
  [[nodiscard]] std::string logTail() const {
    auto tail = attach_->stderrTail();
    return tail.empty() ? "(it logged nothing)" : tail;
  }

 private:
  std::shared_ptr<EngineClient> engine_;
  std::string id_;
  std::unique_ptr<AttachStream> attach_;
  std::atomic<bool> exited_{false};
  std::thread pump_;
};

}  // namespace

nlohmann::json sidecarContainerBody(const SidecarSpec& spec, const DockerSidecarOptions& options) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : options.labels) labels[key] = value;
  labels["sandbox-mcp.role"] = "sidecar";
  labels["sandbox-mcp.session"] = spec.session_id;

  const std::int64_t memory_bytes = options.memory_mib * kMiB;
  nlohmann::json host_config = {
      {"NetworkMode", options.network},
      {"Runtime", "runc"},  // the relay is our code, not the untrusted code; it needs real sockets
      {"Memory", memory_bytes},
      {"MemorySwap", memory_bytes},
      {"PidsLimit", options.pids_limit},
      {"CapDrop", {"ALL"}},
      {"SecurityOpt", {"no-new-privileges"}},
      {"ReadonlyRootfs", true},
      {"Binds",
       {spec.directory + ":" + kSidecarSessionMount + ":rw",
        options.binary_path + ":" + kSidecarBinaryPath + ":ro"}},
      {"AutoRemove", true},
      {"IpcMode", "private"},
  };
  nlohmann::json body = {
      {"Image", options.image},
      {"Entrypoint", {kSidecarBinaryPath}},
      {"Cmd", sidecarArguments(spec, kSidecarSessionMount)},
      {"Labels", labels},
      {"OpenStdin", true},
      {"StdinOnce", true},
      {"AttachStdin", true},
      {"AttachStdout", true},
      {"AttachStderr", true},
      {"Tty", false},
      {"HostConfig", host_config},
  };
  if (!options.user.empty()) body["User"] = options.user;
  return body;
}

DockerSidecarLauncher::DockerSidecarLauncher(std::shared_ptr<EngineClient> engine,
                                             DockerSidecarOptions options)
    : engine_(std::move(engine)), options_(std::move(options)) {}

std::unique_ptr<Sidecar> DockerSidecarLauncher::launch(const SidecarSpec& spec) {
  if (engine_->remote()) {
    throw SandboxError(
        "mcp_allowlist is not available with the Docker engine at " +
        engine_->options().endpoint.uri() +
        ": the MCP sidecar container mounts the session's directory from this host, and the "
        "sandbox reaches the sidecar through a socket in it, but that engine runs on another "
        "machine. Omit mcp_allowlist here, or use a server whose docker.host is a local unix:// "
        "socket for sessions that call MCP servers");
  }
  if (::access(options_.binary_path.c_str(), X_OK) != 0) {
    throw SandboxError("cannot start the MCP sidecar: " + options_.binary_path +
                       " is missing or not executable; build the project (it sits next to "
                       "sandbox-mcp) or set mcp.sidecar.binary_path");
  }
  std::string id;
  try {
    id = engine_
             ->request(Method::kPost,
                       "/containers/create?name=sandbox-mcp-sidecar-" + common::randomHex(6),
                       sidecarContainerBody(spec, options_))
             .json()
             .at("Id")
             .get<std::string>();
  } catch (const EngineError& e) {
    if (e.isNotFound()) {
      throw SandboxError("the MCP sidecar image " + options_.image +
                         " is not on the Docker engine: run scripts/setup.sh (it builds it with "
                         "docker/build-sidecar-image.sh), or set mcp.sidecar.mode to \"process\"");
    }
    throw SandboxError(std::string("cannot create the MCP sidecar container: ") + e.what());
  }
  std::unique_ptr<DockerSidecar> sidecar;
  try {
    auto attach = AttachStream::open(*engine_, id, kSendTimeout);
    sidecar = std::make_unique<DockerSidecar>(engine_, id, std::move(attach));
    engine_->request(Method::kPost, "/containers/" + id + "/start");
  } catch (const std::exception& e) {
    sidecar.reset();
    forceRemoveContainer(*engine_, id);
    throw SandboxError(std::string("cannot start the MCP sidecar container: ") + e.what() +
                       (options_.network == "host" ? ""
                                                   : " (check that mcp.sidecar.network '" +
                                                         options_.network + "' exists)"));
  }
  const std::string socket = spec.socket_dir + "/" + spec.socket_name;
  if (!waitForSocket(socket, options_.start_timeout_ms, [&] { return sidecar->running(); })) {
    const bool exited = !sidecar->running();
    auto tail = sidecar->logTail();
    sidecar.reset();
    throw SandboxError(std::string("the MCP sidecar container ") +
                       (exited ? "exited at start" : "did not open its socket in time") + ": " +
                       tail);
  }
  logger().info("session {}: MCP sidecar {} listening on {}", spec.session_id, sidecar->describe(),
                socket);
  return sidecar;
}

}  // namespace sandbox::docker

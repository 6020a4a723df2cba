#include "sandbox/docker/docker_backend.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <stdexcept>

#include "common/hex.h"
#include "common/random_id.h"
#include "sandbox/agent_channel.h"
#include "sandbox/docker/attach_stream.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/container_fate.h"
#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/docker/image_builder.h"
#include "sandbox/docker/runsc_control.h"
#include "sandbox/log.h"

namespace sandbox::docker {

// Removes a half-made container unless dismissed: create() leaks nothing when it fails.
class ContainerRemover {
 public:
  ContainerRemover(EngineClient& engine, std::string id) : engine_(engine), id_(std::move(id)) {}
  ~ContainerRemover() {
    if (armed_) forceRemoveContainer(engine_, id_);
  }
  ContainerRemover(const ContainerRemover&) = delete;
  ContainerRemover& operator=(const ContainerRemover&) = delete;
  void dismiss() noexcept { armed_ = false; }

 private:
  EngineClient& engine_;
  std::string id_;
  bool armed_ = true;
};

namespace {

std::int64_t nowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Image references go into the URL path unencoded (as the Docker CLI sends them).
void requireImageReference(const std::string& image) {
  const bool plausible = !image.empty() && std::all_of(image.begin(), image.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("._-:/@").find(c) != std::string_view::npos;
  });
  if (!plausible) throw SandboxError("'" + image + "' is not a valid image reference");
}

std::string tail(const std::string& text, std::size_t max_bytes) {
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace

std::string shortContentHash(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw SandboxError("computing sha256 failed (OpenSSL EVP_Digest)");
  }
  return common::hexEncode(digest, std::min<std::size_t>(8, length));
}

DockerBackend::DockerBackend(DockerBackendOptions options)
    : options_(std::move(options)), self_(ProcessIdentity::current()) {
  if (options_.instance_id.empty()) options_.instance_id = common::randomHex(8);
  EngineClientOptions engine_options;
  try {
    engine_options.endpoint = common::parseEngineHost(options_.host);
  } catch (const std::invalid_argument& e) {
    throw SandboxError(std::string("docker.host ") + e.what());
  }
  engine_options.tls = options_.tls;
  engine_options.api_version = options_.api_version;
  engine_options.connect_timeout = options_.connect_timeout;
  engine_options.request_timeout = options_.request_timeout;
  engine_ = std::make_shared<EngineClient>(std::move(engine_options));
  ownership_labels_ = options_.labels;
  for (auto& [key, value] : ownershipLabels(options_.instance_id, self_)) {
    ownership_labels_[key] = value;
  }
  if (engine_->remote()) {
    agent_volume_ =
        std::make_unique<AgentVolume>(*engine_, options_.agent_path, options_.python_modules,
                                      options_.default_image, ownership_labels_);
  }
}

void DockerBackend::useChannelSockets(std::string root) {
  if (engine_->remote()) {
    logger().info(
        "docker.host is {}: agent frames use the engine's attach stream (the channel socket "
        "needs the engine on this host)",
        engine_->options().endpoint.uri());
    return;
  }
  channel_root_ = std::move(root);
}

AgentMounts DockerBackend::agentMounts(const SandboxSpec& spec, const ChannelListener* listener) {
  if (agent_volume_) {
    refuseHostMounts(spec);  // before the volume is prepared
    return AgentMounts::fromVolume(agent_volume_->ensure());
  }
  return AgentMounts::fromHost(options_.agent_path, listener ? listener->hostDir() : std::string());
}

DockerBackend::~DockerBackend() = default;

DockerBackend::NewContainer DockerBackend::createContainer(const SandboxSpec& spec) {
  if (const auto agent = checkAgentBinary(); !agent.ok) {
    throw SandboxError("cannot create a sandbox: " + agent.detail);
  }
  NewContainer made;
  made.record.name = "sandbox-mcp-" + common::randomHex(6);
  if (!channel_root_.empty()) {
    made.listener = std::make_unique<ChannelListener>(channel_root_, made.record.name);
  }
  const auto body =
      containerCreateBody(spec, agentMounts(spec, made.listener.get()), ownership_labels_);
  made.record.image = spec.image;
  made.record.runtime = spec.runtime;
  made.record.memory_mib = spec.limits.memory_mib;
  made.record.created_unix = nowUnix();
  made.record.id =
      engine_->request(Method::kPost, "/containers/create?name=" + made.record.name, body)
          .json()
          .at("Id")
          .get<std::string>();
  made.remover = std::make_unique<ContainerRemover>(*engine_, made.record.id);
  // Attach before start so not a byte of the agent's output is missed.
  auto attach = AttachStream::open(*engine_, made.record.id, kAgentSendTimeout);
  made.attach = attach.get();  // owned by the channel, which outlives its use here
  made.channel = AgentChannel::start(std::move(attach), made.record.name);
  return made;
}

std::string DockerBackend::describeFailedStart(const NewContainer& made, const SandboxSpec& spec,
                                               const std::string& what,
                                               const std::string& otherwise) {
  std::string message = what + ": ";
  const auto fate = waitForContainerFate(*engine_, made.record.id, made.record.created_unix - 1,
                                         DockerSandbox::kFateWait);
  if (!fate) {
    message += otherwise;
  } else if (fate->oom_killed) {
    message += "the container ran out of memory (" + std::to_string(made.record.memory_mib) +
               " MiB) before the agent answered";
  } else {
    message += "the container exited with code " + std::to_string(fate->exit_code) +
               " before the agent answered";
  }
  const std::string agent_stderr = made.attach->stderrTail();
  if (!agent_stderr.empty()) message += ". Agent stderr: " + tail(agent_stderr, 1000);
  return message + ". Check that " + options_.agent_path +
         " is the static sandbox-agent binary and that image " + spec.image + " runs under " +
         spec.runtime;
}

std::unique_ptr<Sandbox> DockerBackend::create(const SandboxSpec& spec) {
  auto made = createContainer(spec);
  auto& record = made.record;
  engine_->request(Method::kPost, "/containers/" + record.id + "/start");

  nlohmann::json hello;
  try {
    hello = made.channel->call({{"op", protocol::kOpHello}}, options_.hello_timeout);
  } catch (const ChannelClosedError& e) {
    if (agent_volume_) agent_volume_->forget();  // check the volume again next time
    throw SandboxError(
        describeFailedStart(made, spec, "the sandbox agent did not start", e.what()));
  }
  if (!hello.value("ok", false)) {
    throw SandboxError("the sandbox agent refused hello: " + hello.value("error", std::string()));
  }
  AgentLink link = linkAgent(std::move(made.channel), std::move(made.listener), record.name);
  made.remover->dismiss();
  logger().info("sandbox {} ({}) started under {} from {}{}", record.name, record.id.substr(0, 12),
                record.runtime, record.image, link.socket_dir ? "" : " (frames over attach)");
  return std::make_unique<DockerSandbox>(engine_, std::move(record), std::move(link),
                                         std::move(hello), checkpointSupport(spec.runtime),
                                         /*host_cgroups=*/!engine_->remote());
}

std::unique_ptr<Sandbox> DockerBackend::restore(const SandboxSpec& spec,
                                                const PlaceCheckpoint& place) {
  if (const auto why = checkpointUnsupported(spec.runtime)) {
    throw SandboxError("cannot restore the sandbox: " + *why);
  }
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  const auto t0 = Clock::now();
  auto made = createContainer(spec);
  auto& record = made.record;
  const auto t1 = Clock::now();
  // The engine reads a checkpoint only from the container's own directory (a custom directory is
  // refused: moby daemon/start.go), so the files go there; they go with the container.
  constexpr const char* kCheckpointName = "restore";
  const auto dir = std::filesystem::path(engineFacts().root_dir) / "containers" / record.id /
                   "checkpoints" / kCheckpointName;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw SandboxError("cannot create " + dir.string() + ": " + ec.message());
  place(dir);
  // dockerd hands the directory to containerd as a tar in its content store, addressed by its
  // hash: two restores of one snapshot at once collide there ("already exists"). A file naming
  // the container makes each upload its own; runsc reads only its image files.
  std::ofstream(dir / "restored-into") << record.id << '\n';
  const auto t2 = Clock::now();
  try {
    engine_->request(Method::kPost,
                     "/containers/" + record.id + "/start?checkpoint=" + kCheckpointName);
  } catch (const EngineError& e) {
    throw SandboxError(std::string("the engine could not start the sandbox from its checkpoint: ") +
                       e.what());
  }
  const auto t3 = Clock::now();
  AgentLink link;
  nlohmann::json hello;
  try {
    // The restored agent reads its requests from its (new) stdin, where it left them. A copy of
    // the channel: made.attach (its stream) must outlive a failure, for the message below.
    link = linkAgent(made.channel, std::move(made.listener), record.name);
    hello = link.channel->call({{"op", protocol::kOpHello}}, options_.hello_timeout);
  } catch (const std::exception& e) {
    throw SandboxError(
        describeFailedStart(made, spec, "the restored sandbox did not answer", e.what()));
  }
  if (!hello.value("ok", false)) {
    throw SandboxError("the restored agent refused hello: " + hello.value("error", std::string()));
  }
  made.remover->dismiss();
  // runsc has read the image (20240729 restores eagerly): the engine's copy would only hold
  // disk for the container's life.
  std::filesystem::remove_all(dir, ec);
  const auto t4 = Clock::now();
  logger().info(
      "sandbox {} ({}) restored under {} from a checkpoint in {:.0f} ms (container {:.0f}, "
      "files {:.0f}, start {:.0f}, channel and hello {:.0f})",
      record.name, record.id.substr(0, 12), record.runtime, ms(t0, t4), ms(t0, t1), ms(t1, t2),
      ms(t2, t3), ms(t3, t4));
  return std::make_unique<DockerSandbox>(engine_, std::move(record), std::move(link),
                                         std::move(hello), checkpointSupport(spec.runtime),
                                         /*host_cgroups=*/!engine_->remote());
}

const DockerBackend::EngineFacts& DockerBackend::engineFacts() {
  std::lock_guard lock(engine_facts_mutex_);
  if (!engine_facts_) {
    const auto info = engine_->request(Method::kGet, "/info").json();
    EngineFacts facts;
    facts.root_dir = info.value("DockerRootDir", std::string());
    facts.experimental = info.value("ExperimentalBuild", false);
    if (const auto runtimes = info.find("Runtimes");
        runtimes != info.end() && runtimes->is_object()) {
      for (const auto& [name, entry] : runtimes->items()) {
        if (auto command = runscCommandFromInfo(info, name)) {
          facts.runsc[name] = std::make_shared<const RunscCommand>(std::move(*command));
        }
      }
    }
    engine_facts_ = std::move(facts);
  }
  return *engine_facts_;
}

std::optional<std::string> DockerBackend::checkpointUnsupported(const std::string& runtime) {
  if (engine_->remote()) {
    return "the Docker engine is on another machine (docker.host " +
           engine_->options().endpoint.uri() +
           "): checkpoints need gVisor's runsc and the engine's directories on the server's host";
  }
  const EngineFacts* facts = nullptr;
  try {
    facts = &engineFacts();
  } catch (const std::exception& e) {
    return std::string("the engine's facts are unavailable: ") + e.what();
  }
  if (!facts->runsc.contains(runtime)) {
    return "sandboxes run under '" + runtime +
           "', which is not gVisor (runsc): only runsc can "
           "checkpoint a sandbox";
  }
  if (!facts->experimental) {
    return "dockerd runs without \"experimental\": true in /etc/docker/daemon.json, which starting "
           "a container from a checkpoint needs (scripts/setup.sh writes it and restarts dockerd)";
  }
  std::error_code ec;
  if (facts->root_dir.empty() ||
      !std::filesystem::is_directory(std::filesystem::path(facts->root_dir) / "containers", ec) ||
      ::access((facts->root_dir + "/containers").c_str(), W_OK) != 0) {
    return "the server cannot write the engine's directory " + facts->root_dir +
           "/containers (run it as the engine's user, root)";
  }
  if (!std::filesystem::is_directory(facts->runsc.at(runtime)->root, ec)) {
    return "runsc's state directory " + facts->runsc.at(runtime)->root +
           " is missing (is dockerd's exec root /var/run/docker?)";
  }
  return std::nullopt;
}

std::string DockerBackend::checkpointFormat(const std::string& runtime) {
  if (checkpointUnsupported(runtime)) return {};
  std::lock_guard lock(engine_facts_mutex_);
  const auto& command = engine_facts_->runsc.at(runtime);
  auto& version = engine_facts_->versions[command->path];
  if (version.empty()) version = runscVersion(*command);
  return version;
}

std::optional<std::string> DockerBackend::freezeUnsupported() {
  if (engine_->remote()) {
    return "the engine is remote (" + options_.host + "): its cgroups are on another host";
  }
  return hostFreezerMissing();
}

CheckpointSupport DockerBackend::checkpointSupport(const std::string& runtime) {
  CheckpointSupport support;
  support.link_timeout = options_.hello_timeout;
  if (engine_->remote()) return support;
  try {
    const auto& facts = engineFacts();
    if (const auto it = facts.runsc.find(runtime); it != facts.runsc.end()) {
      support.runsc = it->second;
    }
  } catch (const std::exception&) {
    // No engine facts: no checkpoints for this sandbox.
  }
  return support;
}

AgentLink DockerBackend::linkAgent(std::shared_ptr<AgentChannel> attached,
                                   std::unique_ptr<ChannelListener> listener,
                                   const std::string& name) {
  if (!listener) return {attached, attached, nullptr};
  auto opened = openSocketChannel(*attached, *listener, options_.hello_timeout, name);
  if (!opened.channel) {
    if (!warned_no_socket_.exchange(true)) {
      logger().warn(
          "agent channel socket unavailable ({}); frames use the engine's attach stream, which "
          "is slower (large files most). Fix: give runsc --host-uds=open (scripts/setup.sh does)",
          opened.refusal);
    }
    return {attached, attached, nullptr};
  }
  return {std::move(opened.channel), std::move(attached), std::move(listener)};
}

bool DockerBackend::imageExists(const std::string& image) {
  requireImageReference(image);
  try {
    engine_->request(Method::kGet, "/images/" + image + "/json");
    return true;
  } catch (const EngineError& e) {
    if (e.isNotFound()) return false;
    throw;
  }
}

std::optional<ImageFacts> DockerBackend::inspectImage(const std::string& image) {
  requireImageReference(image);
  nlohmann::json details;
  try {
    details = engine_->request(Method::kGet, "/images/" + image + "/json").json();
  } catch (const EngineError& e) {
    if (e.isNotFound()) return std::nullopt;
    throw;
  }
  ImageFacts facts;
  facts.id = details.value("Id", std::string());
  for (const char* field : {"RepoTags", "RepoDigests"}) {
    auto& out = field[4] == 'T' ? facts.repo_tags : facts.repo_digests;
    if (const auto names = details.value(field, nlohmann::json()); names.is_array()) {
      for (const auto& name : names) {
        if (name.is_string()) out.push_back(name.get<std::string>());
      }
    }
  }
  const auto labels =
      details.value("Config", nlohmann::json::object()).value("Labels", nlohmann::json());
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) facts.labels[key] = value.get<std::string>();
    }
  }
  return facts;
}

std::string DockerBackend::buildImage(const BuildRequest& request, const CancelToken& cancel) {
  const auto available = runtimes();
  if (std::find(available.begin(), available.end(), request.runtime) == available.end()) {
    throw SandboxError(
        "Dockerfile builds need the runtime '" + request.runtime +
        "' (gVisor without its root overlay, so RUN steps can be committed), and the Docker "
        "engine does not have it. The operator fixes this with scripts/setup.sh (it registers "
        "runsc-build in /etc/docker/daemon.json and reloads dockerd), or sets "
        "sandbox.build_runtime");
  }
  ImageBuilder builder(*engine_, ownership_labels_);
  auto tag = builder.build(request, cancel);
  (void)collectBuiltImages();
  return tag;
}

int DockerBackend::collectBuiltImages() noexcept {
  return docker::collectBuiltImages(*engine_, options_.built_images);
}

std::vector<std::string> DockerBackend::runtimes() {
  const auto info = engine_->request(Method::kGet, "/info").json();
  std::vector<std::string> names;
  // items() refers to its json: keep the object alive for the whole loop.
  const auto runtime_map = info.value("Runtimes", nlohmann::json::object());
  for (const auto& [name, config] : runtime_map.items()) {
    names.push_back(name);
  }
  return names;
}

int DockerBackend::removeOrphans() {
  const nlohmann::json filters = {{"label", {std::string(kLabelManaged) + "=1"}}};
  const auto list =
      engine_->request(Method::kGet, "/containers/json?all=1&filters=" + urlEncode(filters.dump()))
          .json();
  int removed = 0;
  for (const auto& item : list) {
    ContainerSummary container;
    container.id = item.value("Id", std::string());
    container.state = item.value("State", std::string());
    container.created_unix = item.value("Created", std::int64_t{0});
    const auto labels = item.value("Labels", nlohmann::json::object());
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) container.labels[key] = value.get<std::string>();
    }
    const auto decision =
        decideOrphan(container, options_.instance_id, self_, nowUnix(), processStartTicks);
    if (decision.duplicate_instance) {
      logger().warn("container {}: {}", container.id.substr(0, 12), decision.reason);
      continue;
    }
    if (!decision.remove) {
      logger().debug("keeping container {}: {}", container.id.substr(0, 12), decision.reason);
      continue;
    }
    logger().info("removing orphaned container {}: {}", container.id.substr(0, 12),
                  decision.reason);
    (void)thawContainer(*engine_, container.id);  // a crashed server's frozen sandbox
    forceRemoveContainer(*engine_, container.id);
    ++removed;
  }
  (void)collectBuiltImages();
  return removed;
}

}  // namespace sandbox::docker

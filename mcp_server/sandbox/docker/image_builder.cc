#include "sandbox/docker/image_builder.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "common/random_id.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/docker/stream_demux.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::int64_t kMiB = std::int64_t{1024} * 1024;
constexpr std::size_t kLogTailBytes = 2000;
// How often a running step's state is read: soon at first (most steps are short), then every
// kLongestPoll, which bounds how long a cancelled step keeps running.
constexpr std::chrono::milliseconds kFirstPoll{10};
constexpr std::chrono::milliseconds kLongestPoll{200};

// The image configuration the Dockerfile builds up; RUN steps run with it.
struct ImageConfig {
  std::vector<std::string> env;  // "KEY=value"
  std::string user;
  std::string workdir;
  std::map<std::string, std::string> labels;
  json cmd;
  json entrypoint;

  void setEnv(const std::string& key, const std::string& value) {
    const std::string prefix = key + "=";
    for (auto& entry : env) {
      if (entry.rfind(prefix, 0) == 0) {
        entry = prefix + value;
        return;
      }
    }
    env.push_back(prefix + value);
  }
};

ImageConfig configOf(const json& image) {
  const json config = image.value("Config", json::object());
  ImageConfig out;
  if (const auto env = config.value("Env", json()); env.is_array()) {
    for (const auto& entry : env) {
      if (entry.is_string()) out.env.push_back(entry.get<std::string>());
    }
  }
  out.user = config.value("User", std::string());
  out.workdir = config.value("WorkingDir", std::string());
  if (const auto labels = config.value("Labels", json()); labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) out.labels[key] = value.get<std::string>();
    }
  }
  out.cmd = config.value("Cmd", json());
  out.entrypoint = config.value("Entrypoint", json());
  return out;
}

std::string joinPath(const std::string& base, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  const std::string dir = base.empty() ? "/" : base;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

void apply(ImageConfig& config, const BuildStep& step) {
  switch (step.op) {
    case BuildOp::kEnv:
      for (const auto& [key, value] : step.pairs) {
        config.setEnv(key, expandVariables(value, config.env));
      }
      break;
    case BuildOp::kLabel:
      for (const auto& [key, value] : step.pairs) {
        config.labels[key] = expandVariables(value, config.env);
      }
      break;
    case BuildOp::kWorkdir:
      config.workdir = joinPath(config.workdir, expandVariables(step.value, config.env));
      break;
    case BuildOp::kUser:
      config.user = expandVariables(step.value, config.env);
      break;
    case BuildOp::kRun:
      break;
  }
  std::size_t bytes = config.user.size() + config.workdir.size();
  for (const auto& entry : config.env) bytes += entry.size();
  for (const auto& [key, value] : config.labels) bytes += key.size() + value.size();
  if (bytes > kMaxImageConfigBytes) {
    throw SandboxError("dockerfile line " + std::to_string(step.line) + ": ENV and LABEL hold " +
                       "more than " + std::to_string(kMaxImageConfigBytes) + " bytes together");
  }
}

// The parts of a container (and image) config the build controls.
json configBody(const ImageConfig& config) {
  json body = {{"Env", config.env}, {"User", config.user}, {"WorkingDir", config.workdir}};
  body["Labels"] = config.labels;
  if (!config.cmd.is_null()) body["Cmd"] = config.cmd;
  if (!config.entrypoint.is_null()) body["Entrypoint"] = config.entrypoint;
  return body;
}

json stepHostConfig(const BuildRequest& request) {
  const std::int64_t memory = request.limits.memory_mib * kMiB;
  json caps = json::array();
  for (const auto cap : kBuildCapabilities) caps.push_back(std::string(cap));
  return {
      {"NetworkMode", "none"},
      {"Runtime", request.runtime},
      {"Memory", memory},
      {"MemorySwap", memory},
      {"NanoCpus", static_cast<std::int64_t>(std::llround(request.limits.cpus * 1e9))},
      {"PidsLimit", request.limits.pids},
      {"CapDrop", {"ALL"}},
      {"CapAdd", caps},
      {"SecurityOpt", {"no-new-privileges"}},
      {"IpcMode", "private"},
      {"AutoRemove", false},  // removed by us after the commit
  };
}

// Removes a build container on every path out of a step.
class StepContainer {
 public:
  StepContainer(EngineClient& engine, std::string id) : engine_(engine), id_(std::move(id)) {}
  ~StepContainer() { forceRemoveContainer(engine_, id_); }
  StepContainer(const StepContainer&) = delete;
  StepContainer& operator=(const StepContainer&) = delete;
  [[nodiscard]] const std::string& id() const noexcept { return id_; }

 private:
  EngineClient& engine_;
  std::string id_;
};

std::string logTail(EngineClient& engine, const std::string& id) {
  try {
    const auto raw =
        engine.request(Method::kGet, "/containers/" + id + "/logs?stdout=1&stderr=1&tail=40").body;
    std::string out;
    std::string err;
    StreamDemux demux;
    demux.feed(raw, out, err);
    std::string text = out + err;
    if (text.size() > kLogTailBytes) text = "..." + text.substr(text.size() - kLogTailBytes);
    return text;
  } catch (const std::exception& e) {
    return std::string("(no log: ") + e.what() + ")";
  }
}

std::string timeoutMessage(const BuildRequest& request, int line) {
  return "the build ran out of time (sandbox.build_timeout_s = " +
         std::to_string(request.timeout.count()) + " s) in the RUN step at dockerfile line " +
         std::to_string(line) + "; the step was stopped. Make the build shorter";
}

std::string cancelledMessage(int line) {
  return (line > 0 ? "the build was stopped at the RUN step at dockerfile line " +
                         std::to_string(line) + " (its container was removed)"
                   : std::string("the build was stopped before its final commit")) +
         "; no image was kept";
}

class Build {
 public:
  Build(EngineClient& engine, const std::map<std::string, std::string>& labels,
        const BuildRequest& request, const CancelToken& cancel)
      : engine_(engine),
        labels_(labels),
        request_(request),
        cancel_(cancel),
        deadline_(Clock::now() + request.timeout) {}

  // Returns the id of the last committed image (the base when there was no RUN).
  std::string runSteps(ImageConfig& config) {
    std::string image = request_.base_id;
    for (const auto& step : request_.plan.steps) {
      if (step.op != BuildOp::kRun) {
        apply(config, step);
        continue;
      }
      stopIfCancelled(step.line);
      image = runStep(image, config, step);
      committed_.push_back(image);
    }
    return image;
  }

  // Commits `image` with the final config and our labels as repo:tag.
  void finish(const std::string& image, ImageConfig config, const std::string& hash) {
    stopIfCancelled(0);
    config.labels[std::string(kLabelBuilt)] = "1";
    config.labels[std::string(kLabelBuiltBase)] = request_.base_id;
    config.labels[std::string(kLabelBuiltHash)] = hash;
    json body = configBody(config);
    body["Image"] = image;
    if (!body.contains("Cmd") && !body.contains("Entrypoint")) body["Cmd"] = {"/bin/sh"};
    body["Labels"] = containerLabels();
    body["NetworkDisabled"] = true;
    body["HostConfig"] = {{"NetworkMode", "none"}, {"Runtime", request_.runtime}};
    // Never started: it only carries the image's config into the commit.
    StepContainer container(engine_, create(body));
    engine_.request(Method::kPost,
                    "/commit?container=" + container.id() +
                        "&repo=" + std::string(kBuildRepository) + "&tag=" + hash +
                        "&comment=sandbox-mcp%20build",
                    configBody(config));
  }

  // A failed build leaves nothing: the last committed image takes its untagged parents along.
  void discardCommitted() noexcept {
    if (committed_.empty()) return;
    try {
      engine_.request(Method::kDelete, "/images/" + committed_.back());
    } catch (const std::exception& e) {
      logger().warn("removing the images of a failed build failed: {}", e.what());
    }
  }

 private:
  // Ownership labels, so a crashed server's build containers are swept as orphans. They end up
  // on the image too (commit merges them), where a session's own ownership labels override them.
  json containerLabels() const { return labels_; }

  void stopIfCancelled(int line) const {
    if (cancel_.cancelled()) throw SandboxError(cancelledMessage(line));
  }

  std::string create(const json& body) {
    const std::string name = std::string(kBuildContainerPrefix) + common::randomHex(6);
    return engine_.request(Method::kPost, "/containers/create?name=" + name, body)
        .json()
        .at("Id")
        .get<std::string>();
  }

  std::string runStep(const std::string& image, const ImageConfig& config, const BuildStep& step) {
    json body = configBody(config);
    body["Image"] = image;
    body["Cmd"] = step.argv;
    body["Entrypoint"] = json::array();
    body["Labels"] = containerLabels();
    body["NetworkDisabled"] = true;
    body["Tty"] = false;
    body["HostConfig"] = stepHostConfig(request_);
    if (Clock::now() >= deadline_) throw SandboxError(timeoutMessage(request_, step.line));
    StepContainer container(engine_, create(body));
    engine_.request(Method::kPost, "/containers/" + container.id() + "/start");
    const auto state = waitForExit(container.id(), step.line);
    const auto exit_code = state.value("ExitCode", std::int64_t{-1});
    if (exit_code != 0) {
      const bool oom = state.value("OOMKilled", false) || exit_code == 137;
      throw SandboxError(
          "the RUN step at dockerfile line " + std::to_string(step.line) +
          " failed with exit code " + std::to_string(exit_code) +
          (oom ? " (killed: out of memory, limit " + std::to_string(request_.limits.memory_mib) +
                     " MiB, or out of processes)"
               : "") +
          ". It ran under gVisor with no network; nothing is downloaded during builds. Output: " +
          logTail(engine_, container.id()));
    }
    checkSize(container.id(), step.line);
    return engine_.request(Method::kPost, "/commit?container=" + container.id(), json::object())
        .json()
        .at("Id")
        .get<std::string>();
  }

  // The step's writes stay on the engine's disk as a layer: the build's total is capped. (While a
  // step runs, only the deadline bounds its writes.)
  void checkSize(const std::string& id, int line) {
    added_bytes_ += engine_.request(Method::kGet, "/containers/" + id + "/json?size=1")
                        .json()
                        .value("SizeRw", std::int64_t{0});
    if (added_bytes_ > request_.max_size_mib * kMiB) {
      throw SandboxError("the RUN step at dockerfile line " + std::to_string(line) +
                         " brought the build to " + std::to_string(added_bytes_ / kMiB) +
                         " MiB; builds may add at most " + std::to_string(request_.max_size_mib) +
                         " MiB (sandbox.build_max_size_mib)");
    }
  }

  // The step's State once it exited. Read in short slices rather than one blocking POST /wait,
  // so that a cancelled call or a stopping server ends the step within a slice (StepContainer
  // then kills and removes it); the build's deadline ends it too.
  json waitForExit(const std::string& id, int line) {
    std::chrono::milliseconds pause = kFirstPoll;
    for (;;) {
      stopIfCancelled(line);
      auto state = engine_.request(Method::kGet, "/containers/" + id + "/json")
                       .json()
                       .value("State", json::object());
      const auto status = state.value("Status", std::string());
      if (status == "exited" || status == "dead") return state;
      const auto now = Clock::now();
      if (now >= deadline_) throw SandboxError(timeoutMessage(request_, line));
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline_ - now));
      pause = std::min(pause * 2, kLongestPoll);
    }
  }

  EngineClient& engine_;
  const std::map<std::string, std::string>& labels_;
  const BuildRequest& request_;
  const CancelToken& cancel_;
  const Clock::time_point deadline_;
  std::vector<std::string> committed_;
  std::int64_t added_bytes_ = 0;
};

std::string describePlan(const BuildRequest& request) {
  json plan = {{"base", request.base_id}, {"from", request.plan.from}};
  json steps = json::array();
  for (const auto& step : request.plan.steps) {
    steps.push_back({static_cast<int>(step.op), step.argv, step.pairs, step.value});
  }
  plan["steps"] = steps;
  return plan.dump();
}

}  // namespace

std::string buildContentHash(const BuildRequest& request) {
  return shortContentHash(describePlan(request));
}

std::string ImageBuilder::build(const BuildRequest& request, const CancelToken& cancel) {
  const std::string hash = buildContentHash(request);
  std::string tag = std::string(kBuildRepository) + ":" + hash;
  try {
    engine_.request(Method::kGet, "/images/" + tag + "/json");
    // Re-tagging updates the image's LastTagTime: the garbage collector's "last used".
    engine_.request(Method::kPost, "/images/" + tag + "/tag?repo=" + std::string(kBuildRepository) +
                                       "&tag=" + hash);
    return tag;
  } catch (const EngineError& e) {
    if (!e.isNotFound()) throw;
  }
  const auto base = engine_.request(Method::kGet, "/images/" + request.base_id + "/json").json();
  logger().info("building image {} from {} ({} RUN step(s) under {}, no network)", tag,
                request.plan.from, request.plan.runCount(), request.runtime);
  Build build(engine_, labels_, request, cancel);
  try {
    ImageConfig config = configOf(base);
    const std::string last = build.runSteps(config);
    build.finish(last, std::move(config), hash);
  } catch (...) {
    build.discardCommitted();
    throw;
  }
  return tag;
}

}  // namespace sandbox::docker

#include "sandbox/docker/runtime_probe.h"

#include <chrono>

#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/docker/stream_demux.h"

namespace sandbox::docker {
namespace {

constexpr std::chrono::milliseconds kProbeTimeout{60000};
constexpr const char* kProbeCommand = "ls / >/dev/null && ls /tmp >/dev/null && stat /etc/passwd";
constexpr const char* kFix =
    "Fix: install runsc from bookworm-backports (scripts/setup.sh does it: Debian 12's own "
    "runsc rejects statx with AT_NO_AUTOMOUNT, so ls and stat fail in every sandbox)";

std::string output(EngineClient& engine, const std::string& id) {
  const auto raw = engine.request(Method::kGet, "/containers/" + id + "/logs?stdout=1&stderr=1");
  std::string out;
  std::string err;
  StreamDemux demux;
  demux.feed(raw.body, out, err);
  std::string text = out + err;
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

HealthCheck probeFileListing(EngineClient& engine, const std::string& image,
                             const std::string& runtime,
                             const std::map<std::string, std::string>& labels) {
  HealthCheck check{"ls/stat in a sandbox", false, ""};
  std::string id;
  try {
    const nlohmann::json body = {
        {"Image", image},
        {"Cmd", {"/bin/sh", "-c", kProbeCommand}},
        {"Entrypoint", nlohmann::json::array()},
        {"User", "65534:65534"},
        {"Labels", labels},
        {"NetworkDisabled", true},
        {"HostConfig",
         {{"NetworkMode", "none"},
          {"Runtime", runtime},
          {"CapDrop", {"ALL"}},
          {"SecurityOpt", {"no-new-privileges"}},
          {"ReadonlyRootfs", true},
          {"Memory", 256LL * 1024 * 1024},
          {"PidsLimit", 256}}},
    };
    id = engine.request(Method::kPost, "/containers/create", body).json().at("Id");
    engine.request(Method::kPost, "/containers/" + id + "/start");
    const auto code =
        engine.request(Method::kPost, "/containers/" + id + "/wait", std::nullopt, kProbeTimeout)
            .json()
            .value("StatusCode", -1);
    const auto text = output(engine, id);
    check.ok = code == 0;
    check.detail = check.ok ? "`" + std::string(kProbeCommand) + "` works under " + runtime
                            : "`" + std::string(kProbeCommand) + "` failed under " + runtime +
                                  " (exit " + std::to_string(code) + "): " + text + ". " + kFix;
  } catch (const std::exception& e) {
    check.detail = std::string("could not run the probe container: ") + e.what();
  }
  if (!id.empty()) forceRemoveContainer(engine, id);
  return check;
}

}  // namespace sandbox::docker

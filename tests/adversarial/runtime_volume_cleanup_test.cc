// An image's VOLUME lines give each container an anonymous volume; removing the container
// without v=1 left every one of them on the engine for ever (a disk leak per session). Removal
// now takes them along, on the explicit path (session end) as on AutoRemove.
#include <chrono>

#include "build_fixture.h"
#include "sandbox/docker/docker_sandbox.h"

namespace build_attacks {
namespace {

using namespace std::chrono_literals;

class VolumeCleanup : public ServerFixture {
 protected:
  VolumeCleanup() {
    auto& engine = backend->engine();
    const auto container = engine
                               .request(Method::kPost, "/containers/create",
                                        json{{"Image", "sandbox-mcp/python:latest"},
                                             {"Cmd", {"true"}},
                                             {"Labels", backend->containerLabels()}})
                               .json()
                               .at("Id")
                               .get<std::string>();
    image = "h3-volume-image-" + std::to_string(::getpid()) + ":v1";
    engine.request(Method::kPost,
                   "/commit?container=" + container + "&repo=h3-volume-image-" +
                       std::to_string(::getpid()) + "&tag=v1",
                   json{{"Volumes", {{"/data", json::object()}}}});
    sandbox::docker::forceRemoveContainer(engine, container);
    cfg.sandbox.allowed_images = {image};
  }
  ~VolumeCleanup() override {
    stop();
    try {
      backend->engine().request(Method::kDelete, "/images/" + image);
    } catch (const std::exception&) {
    }
  }
  bool volumeExists(const std::string& name) {
    try {
      backend->engine().request(Method::kGet, "/volumes/" + name);
      return true;
    } catch (const sandbox::docker::EngineError& e) {
      if (e.isNotFound()) return false;
      throw;
    }
  }
  bool volumeGoneWithin(const std::string& name, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!volumeExists(name)) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  std::string anonymousVolumeOf(const std::string& container) {
    const auto info =
        backend->engine().request(Method::kGet, "/containers/" + container + "/json").json();
    for (const auto& mount : info.value("Mounts", json::array())) {
      if (mount.value("Type", "") == "volume" && mount.value("Destination", "") == "/data") {
        return mount.value("Name", "");
      }
    }
    return {};
  }

  std::string image;
};

TEST_F(VolumeCleanup, SessionEndRemovesTheImagesAnonymousVolume) {
  const auto result =
      call("run_shell", {{"command", "echo x > /data/f 2>/dev/null; echo done"}, {"image", image}});
  ASSERT_FALSE(result.value("isError", false)) << result.dump();
  const std::string vol = result["structuredContent"]["session_id"];
  const auto stats = call("get_session_stats", {{"session_id", vol}})["structuredContent"];
  const std::string volume = anonymousVolumeOf(stats["container_id"]);
  ASSERT_FALSE(volume.empty()) << "the image's VOLUME gave the container no volume";
  ASSERT_TRUE(volumeExists(volume));
  EXPECT_EQ(call("cleanup_session", {{"session_id", vol}})["structuredContent"]["status"],
            "success");
  EXPECT_TRUE(volumeGoneWithin(volume, 10s)) << "anonymous volume " << volume << " leaked";
}

TEST_F(VolumeCleanup, ForcedRemovalTakesTheVolumeAlong) {
  auto& engine = backend->engine();
  const auto id =
      engine
          .request(Method::kPost, "/containers/create",
                   json{{"Image", image},
                        {"Cmd", {"sleep", "60"}},
                        {"Labels", backend->containerLabels()},
                        {"HostConfig", {{"Runtime", "runsc"}, {"NetworkMode", "none"}}}})
          .json()
          .at("Id")
          .get<std::string>();
  const auto volume = anonymousVolumeOf(id);
  ASSERT_FALSE(volume.empty());
  sandbox::docker::forceRemoveContainer(engine, id);
  EXPECT_FALSE(volumeExists(volume)) << "forceRemoveContainer left volume " << volume;
}

}  // namespace
}  // namespace build_attacks
